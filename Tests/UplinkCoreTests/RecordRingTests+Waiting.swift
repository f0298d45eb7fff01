import Foundation
import Testing
import UplinkTestSupport

// `RecordRing.waitingForSpace`: when an append is queued.
@testable import UplinkCore

/// `notifyWhenDataAvailable` and `appendWaitingForSpace`.
extension RecordRingTests {
    // MARK: Data notification

    /// A 64-byte ring holding two 24-byte frames (32 bytes each with its header), sequences 1 and 2: full; each
    /// acknowledgement frees one such frame's room.
    static func fullRingOfTwoFrames() -> (RecordRing, SourceID) {
        let ring = RecordRing(capacity: 64)
        let source = ring.registerSource("s")
        ring.append(pattern(0, count: 24), source: source)
        ring.append(pattern(1, count: 24), source: source)
        return (ring, source)
    }

    @Test func notifyWhenDataAvailableFiresOnceOnTheNextAppend() {
        let ring = RecordRing(capacity: 256)
        let source = ring.registerSource("s")
        let calls = CallCounter()
        #expect(ring.notifyWhenDataAvailable { calls.increment() })
        #expect(calls.value == 0)
        ring.append([1], source: source)
        #expect(calls.value == 1)
        ring.append([2], source: source)
        #expect(calls.value == 1, "the handler is forgotten after firing")

        // Unsent frames exist: the handler is not stored.
        #expect(!ring.notifyWhenDataAvailable { calls.increment() })
        _ = readUnsent(ring, maxBytes: 1)
        #expect(!ring.notifyWhenDataAvailable { calls.increment() })
        ring.append([3], source: source)
        #expect(calls.value == 1)

        // Everything sent: stored again.
        _ = readUnsent(ring)
        #expect(ring.notifyWhenDataAvailable { calls.increment() })
        ring.append([4], source: source)
        #expect(calls.value == 2)

        // A rewind makes sent frames unsent again.
        _ = readUnsent(ring)
        ring.rewindToAcknowledged()
        #expect(!ring.notifyWhenDataAvailable { calls.increment() })
    }

    @Test func notifyWhenDataAvailableIsNotFiredByRefusedFrames() async {
        let ring = RecordRing(capacity: 64, policy: .dropNewest)
        let source = ring.registerSource("s")
        ring.append(pattern(0, count: 56), source: source)
        _ = readUnsent(ring)
        let calls = CallCounter()
        #expect(ring.notifyWhenDataAvailable { calls.increment() })
        #expect(ring.append([1], source: source) == .droppedNewest)
        #expect(ring.append(pattern(1, count: 100), source: source) == .rejectedOversize)
        #expect(await ring.appendWaitingForSpace(pattern(1, count: 100), source: source) == .rejectedOversize)
        #expect(calls.value == 0)
        ring.acknowledge(through: 1)
        #expect(calls.value == 0, "acknowledging is not new data")
        #expect(ring.append([1], source: source) == .appended(sequence: 2))
        #expect(calls.value == 1)
    }

    @Test func notifyWhenDataAvailableFiresForAppendWaitingForSpace() async {
        let ring = RecordRing(capacity: 64)
        let source = ring.registerSource("s")
        let calls = CallCounter()
        #expect(ring.notifyWhenDataAvailable { calls.increment() })
        #expect(await ring.appendWaitingForSpace([1, 2], source: source) == .appended(sequence: 1))
        #expect(calls.value == 1)
    }

    @Test func cancelDataNotificationForgetsTheHandler() {
        let ring = RecordRing(capacity: 64)
        let source = ring.registerSource("s")
        let calls = CallCounter()
        #expect(ring.notifyWhenDataAvailable { calls.increment() })
        ring.cancelDataNotification()
        ring.append([1], source: source)
        #expect(calls.value == 0)
        ring.cancelDataNotification()  // nothing stored: harmless
    }

    @Test func aLaterHandlerReplacesAnEarlierOne() {
        let ring = RecordRing(capacity: 64)
        let source = ring.registerSource("s")
        let first = CallCounter()
        let second = CallCounter()
        #expect(ring.notifyWhenDataAvailable { first.increment() })
        #expect(ring.notifyWhenDataAvailable { second.increment() })
        ring.append([1], source: source)
        #expect(first.value == 0)
        #expect(second.value == 1)
    }

    @Test func theDataHandlerRunsOutsideTheLock() {
        let ring = RecordRing(capacity: 64)
        let source = ring.registerSource("s")
        let seen = Recorder<UInt64>()
        #expect(ring.notifyWhenDataAvailable { seen.append(ring.statistics().nextToWrite) })
        ring.append([1], source: source)
        #expect(seen.all == [2])
    }

    // MARK: Waiting for space

    @Test func appendWaitingForSpaceAppendsAtOnceWhenThereIsRoom() async {
        let ring = RecordRing(capacity: 64, policy: .dropNewest)
        let source = ring.registerSource("s")
        #expect(await ring.appendWaitingForSpace(pattern(0, count: 24), source: source) == .appended(sequence: 1))
        #expect(await ring.appendWaitingForSpace(pattern(1, count: 24), source: source) == .appended(sequence: 2))
        #expect(ring.statistics().usedBytes == 64)
    }

    @Test(arguments: OverflowPolicy.allCases)
    func appendWaitingForSpaceWaitsForAnAckThenAppendsWithoutDropping(policy: OverflowPolicy) async {
        let ring = RecordRing(capacity: 64, policy: policy)
        let source = ring.registerSource("s")
        let frames = (0..<3).map { pattern($0, count: 24) }
        ring.append(frames[0], source: source)
        ring.append(frames[1], source: source)
        let done = CallCounter()
        let waiter = Task {
            let outcome = await ring.appendWaitingForSpace(frames[2], source: source)
            done.increment()
            return outcome
        }
        for _ in 0..<200 { await Task.yield() }
        #expect(done.value == 0, "cannot append before an acknowledgement frees room")
        #expect(ring.statistics().nextToWrite == 3)
        _ = readUnsent(ring)
        ring.acknowledge(through: 1)
        #expect(await waiter.value == .appended(sequence: 3))
        let statistics = ring.statistics()
        #expect(statistics.source("s")?.droppedOldest == 0)
        #expect(statistics.source("s")?.droppedNewest == 0)
        #expect(statistics.source("s")?.appended == 3)
        #expect(statistics.oldestRetained == 2)
        #expect(readUnsent(ring) == [ReadFrame(sequence: 3, bytes: frames[2])])
    }

    @Test func appendWaitingForSpaceWaitsUntilEnoughRoomIsFree() async {
        let (ring, source) = Self.fullRingOfTwoFrames()
        let large = pattern(2, count: 56)  // needs the whole ring
        let done = CallCounter()
        let waiter = Task {
            let outcome = await ring.appendWaitingForSpace(large, source: source)
            done.increment()
            return outcome
        }
        for _ in 0..<100 { await Task.yield() }
        ring.acknowledge(through: 1)
        for _ in 0..<100 { await Task.yield() }
        #expect(done.value == 0, "half the ring is not enough")
        #expect(ring.statistics().nextToWrite == 3)
        ring.acknowledge(through: 2)
        #expect(await waiter.value == .appended(sequence: 3))
        #expect(ring.statistics().source("s")?.droppedOldest == 0)
        #expect(readUnsent(ring) == [ReadFrame(sequence: 3, bytes: large)])
    }

    @Test func resumeWakesFramesWaitingForSpace() async {
        let (ring, source) = Self.fullRingOfTwoFrames()
        let waiter = Task { await ring.appendWaitingForSpace(pattern(2, count: 24), source: source) }
        for _ in 0..<50 { await Task.yield() }
        #expect(ring.resume(collectorHas: 1) == 2)
        #expect(await waiter.value == .appended(sequence: 3))
    }

    @Test func severalWaitersAllGetInWithoutDrops() async {
        let (ring, source) = Self.fullRingOfTwoFrames()
        await withTaskGroup(of: AppendOutcome.self) { group in
            for index in 0..<4 {
                group.addTask { await ring.appendWaitingForSpace(pattern(10 + index, count: 24), source: source) }
            }
            var outcomes: [AppendOutcome] = []
            var acknowledged: UInt64 = 0
            while outcomes.count < 4 {
                acknowledged += 1
                ring.acknowledge(through: acknowledged)  // frees one frame's room
                if let outcome = await group.next() { outcomes.append(outcome) }
            }
            let sequences = outcomes.compactMap { outcome -> UInt64? in
                if case .appended(let sequence) = outcome { sequence } else { nil }
            }
            #expect(sequences.sorted() == [3, 4, 5, 6])
        }
        let statistics = ring.statistics()
        #expect(statistics.source("s")?.droppedOldest == 0)
        #expect(statistics.source("s")?.droppedNewest == 0)
        #expect(statistics.source("s")?.appended == 6)
        #expect(statistics.retainedFrames == 2)
    }

    @Test(.timeLimit(.minutes(2)))
    func roomFreedForAWaitingAppendIsNotTakenByOneThatComesLater() async {
        let (ring, source) = Self.fullRingOfTwoFrames()
        let gate = GatedExecutor()
        let first = Task(executorPreference: gate) { await ring.appendWaitingForSpace(pattern(2, count: 24), source: source) }
        #expect(await eventually { ring.waitingForSpace == 1 })
        // Room for one frame comes while the waiting append cannot run yet, and another append asks for it at once.
        gate.hold()
        ring.acknowledge(through: 1)
        let later = Task { await ring.appendWaitingForSpace(pattern(3, count: 24), source: source) }
        #expect(await eventually { ring.waitingForSpace == 1 || ring.statistics().nextToWrite == 4 })
        #expect(ring.statistics().nextToWrite == 3, "the room was set aside for the append that waited")
        gate.open()
        #expect(await eventually { ring.statistics().nextToWrite == 4 })
        ring.acknowledge(through: 2)
        #expect(await first.value == .appended(sequence: 3))
        #expect(await later.value == .appended(sequence: 4))
    }

    /// A large frame at the head of the queue is not passed by smaller ones behind it (it would never get in while they
    /// keep coming); cancelled, it lets them in at once.
    @Test(.timeLimit(.minutes(2)))
    func theHeadOfTheQueueIsNotPassedAndItsCancellationLetsTheNextIn() async {
        let (ring, source) = Self.fullRingOfTwoFrames()
        let large = Task { await ring.appendWaitingForSpace(pattern(2, count: 56), source: source) }  // the whole ring
        #expect(await eventually { ring.waitingForSpace == 1 })
        let small = Task { await ring.appendWaitingForSpace(pattern(3, count: 24), source: source) }
        #expect(await eventually { ring.waitingForSpace == 2 })
        ring.acknowledge(through: 1)  // room for the small frame, not for the large one ahead of it
        for _ in 0..<100 { await Task.yield() }
        #expect(ring.waitingForSpace == 2 && ring.statistics().nextToWrite == 3, "nothing passed the head")
        large.cancel()
        #expect(await large.value == .droppedNewest)
        #expect(await small.value == .appended(sequence: 3))
    }

    /// A busy source with a long backlog and a quiet one with a few lines, both waiting on a full ring: as room
    /// comes, one frame at a time, they take turns; the quiet one is not held back until the busy one's backlog is in.
    @Test(.timeLimit(.minutes(2)))
    func appendsWaitingOnAFullRingTakeTurns() async {
        let ring = RecordRing(capacity: 320)  // ten 24-byte frames (32 with their headers); a fair share is 20 bytes
        let busy = ring.registerSource("busy")
        let quiet = ring.registerSource("quiet")
        let busyFrame = [UInt8](repeating: 0xB, count: 24)
        let quietFrame = [UInt8](repeating: 0x9, count: 24)
        for _ in 0..<10 { ring.append(busyFrame, source: busy) }
        let backlog = Task {
            await ring.appendWaitingForSpace(
                frames: Array((0..<40).map { _ in busyFrame }.joined()), ends: (1...40).map { $0 * 24 }, source: busy)
        }
        #expect(await eventually { ring.waitingForSpace == 1 })
        let few = Task {
            await ring.appendWaitingForSpace(
                frames: Array((0..<4).map { _ in quietFrame }.joined()), ends: (1...4).map { $0 * 24 }, source: quiet)
        }
        #expect(await eventually { ring.waitingForSpace == 2 })
        _ = readUnsent(ring)

        var order: [String] = []
        for acknowledged in UInt64(1)...8 {
            ring.acknowledge(through: acknowledged)
            let appended = await eventually { ring.statistics().nextToWrite == 11 + acknowledged }
            // The one that got in queues again; the quiet one, done after its fourth frame, does not.
            let queued = await eventually { ring.waitingForSpace == (acknowledged < 8 ? 2 : 1) }
            guard appended, queued else {
                Issue.record("after acknowledging \(acknowledged): \(ring.statistics()), \(ring.waitingForSpace) waiting")
                break
            }
            for frame in readUnsent(ring) { order.append(frame.bytes == quietFrame ? "quiet" : "busy") }
        }
        #expect(order == ["busy", "quiet", "busy", "quiet", "busy", "quiet", "busy", "quiet"])
        let quietSequences: [UInt64] = [12, 14, 16, 18]
        few.cancel()  // done by now; if not, the rest is refused instead of waiting for acknowledgements that never come
        #expect(await few.value == quietSequences.map { AppendOutcome.appended(sequence: $0) })
        backlog.cancel()
        let outcomes = await backlog.value
        let busySequences: [UInt64] = [11, 13, 15, 17]
        #expect(Array(outcomes.prefix(4)) == busySequences.map { AppendOutcome.appended(sequence: $0) })
        #expect(outcomes.count == 40 && outcomes.dropFirst(4).allSatisfy { $0 == .droppedNewest }, "the rest of the backlog, cancelled")
    }

    @Test func cancellingAWaitingAppendReturnsDroppedNewest() async {
        let (ring, source) = Self.fullRingOfTwoFrames()
        let before = ring.statistics()
        let waiter = Task { await ring.appendWaitingForSpace(pattern(2, count: 24), source: source) }
        for _ in 0..<50 { await Task.yield() }
        waiter.cancel()
        #expect(await waiter.value == .droppedNewest)
        var after = ring.statistics()
        #expect(after.source("s")?.droppedNewest == 1)
        #expect(after.source("s")?.droppedOldest == 0)
        after.sources = before.sources
        #expect(after == before)
        // The cancelled waiter is gone: freeing room later does not append it.
        ring.acknowledge(through: 2)
        #expect(ring.isEmpty)
    }

    @Test func aCancelledTaskStillAppendsWhenThereIsRoom() async {
        let ring = RecordRing(capacity: 64)
        let source = ring.registerSource("s")
        let task = Task {
            withUnsafeCurrentTask { $0?.cancel() }
            return await ring.appendWaitingForSpace([1], source: source)
        }
        #expect(await task.value == .appended(sequence: 1))
    }
}

// MARK: - Kept frames, batches and acknowledgements (for sources that checkpoint on acknowledgement)

@Suite("RecordRing kept frames and acknowledgements")
struct RecordRingKeptFrameTests {
    @Test func dropOldestNeverEvictsAFrameAppendedWaitingForSpace() async {
        let ring = RecordRing(capacity: 64)
        let tail = ring.registerSource("tail")
        let sensor = ring.registerSource("sensor")
        // 8-byte header + 20-byte body = 28 bytes each: two fit, a third does not.
        #expect(await ring.appendWaitingForSpace([UInt8](repeating: 1, count: 20), source: tail) == .appended(sequence: 1))
        #expect(ring.append([UInt8](repeating: 2, count: 20), source: sensor) == .appended(sequence: 2))
        // Making room would mean dropping the tail's frame: the sensor's new frame is refused instead.
        #expect(ring.append([UInt8](repeating: 3, count: 20), source: sensor) == .droppedNewest)
        #expect(ring.statistics().source("tail")?.droppedOldest == 0)
        #expect(ring.statistics().source("sensor")?.droppedNewest == 1)
        // Once the kept frame is acknowledged, the sensor's own oldest frame may go.
        ring.acknowledge(through: 1)
        #expect(ring.append([UInt8](repeating: 4, count: 20), source: sensor) == .appended(sequence: 3))
        #expect(ring.append([UInt8](repeating: 5, count: 20), source: sensor) == .appended(sequence: 4))
        #expect(ring.statistics().source("sensor")?.droppedOldest == 1)
    }

    @Test func aBatchIsAppendedInOrderAndWaitsForRoomPartWay() async throws {
        let ring = RecordRing(capacity: 100)
        let tail = ring.registerSource("tail")
        // Five 20-byte frames (28 bytes with header): three fit at once.
        let frames = (0..<5).flatMap { [UInt8](repeating: UInt8($0), count: 20) }
        let ends = (1...5).map { $0 * 20 }
        let appending = Task { await ring.appendWaitingForSpace(frames: frames, ends: ends, source: tail) }
        #expect(await eventually { ring.statistics().nextToWrite == 4 })
        #expect(ring.statistics().source("tail")?.droppedOldest == 0)
        var sent: [UInt64] = []
        ring.readUnsent(maxBytes: 1000) { sequence, first, _ in sent.append(sequence); #expect(first.first == UInt8(sequence - 1)) }
        ring.acknowledge(through: 3)
        let outcomes = await appending.value
        #expect(outcomes == (1...5).map { .appended(sequence: UInt64($0)) })
        ring.readUnsent(maxBytes: 1000) { sequence, first, _ in sent.append(sequence); #expect(first.first == UInt8(sequence - 1)) }
        #expect(sent == [1, 2, 3, 4, 5])
    }

    @Test func aCancelledBatchCountsTheRestAsDropped() async throws {
        let ring = RecordRing(capacity: 64)
        let tail = ring.registerSource("tail")
        let frames = [UInt8](repeating: 0, count: 60)
        let appending = Task { await ring.appendWaitingForSpace(frames: frames, ends: [20, 40, 60], source: tail) }
        #expect(await eventually { ring.statistics().nextToWrite == 3 })
        appending.cancel()
        #expect(await appending.value == [.appended(sequence: 1), .appended(sequence: 2), .droppedNewest])
        #expect(ring.statistics().source("tail")?.droppedNewest == 1)
    }

    @Test func acknowledgementWaitersWakeOnlyWhenTheAckPassesThem() async throws {
        let ring = RecordRing(capacity: 1024)
        let source = ring.registerSource("s")
        for _ in 0..<5 { ring.append([1, 2, 3], source: source) }
        #expect(ring.acknowledgedSequence == 0)
        let waiter = Task { await ring.waitForAcknowledgement(after: 2) }
        ring.acknowledge(through: 2)
        // Not above 2 yet: still waiting. (Give the waiter a chance to run; it must not finish.)
        try await Task.sleep(for: .milliseconds(50))
        ring.acknowledge(through: 4)
        #expect(await waiter.value == 4)
        #expect(await ring.waitForAcknowledgement(after: 3) == 4)
        #expect(ring.acknowledgedSequence == 4)
        // resume(collectorHas:) acknowledges too.
        let resumed = Task { await ring.waitForAcknowledgement(after: 4) }
        ring.resume(collectorHas: 5)
        #expect(await resumed.value == 5)
        // Cancellation ends a wait with the current value.
        let cancelled = Task { await ring.waitForAcknowledgement(after: 100) }
        cancelled.cancel()
        #expect(await cancelled.value == 5)
    }

    // MARK: Appending only if there is room

    @Test func appendIfRoomStoresAWholeBatchThatFitsAndNotifies() {
        let ring = RecordRing(capacity: 100)
        let tail = ring.registerSource("tail")
        let calls = CallCounter()
        #expect(ring.notifyWhenDataAvailable { calls.increment() })
        // Three 20-byte frames, 28 bytes each with its header: 84 of 100.
        let frames = (0..<3).flatMap { [UInt8](repeating: UInt8($0), count: 20) }
        #expect(ring.appendIfRoom(frames: frames, ends: [20, 40, 60], source: tail) == (1...3).map { .appended(sequence: UInt64($0)) })
        #expect(calls.value == 1)
        var sent: [UInt64] = []
        ring.readUnsent(maxBytes: 1000) { sequence, first, _ in sent.append(sequence); #expect(first.first == UInt8(sequence - 1)) }
        #expect(sent == [1, 2, 3])
        #expect(ring.statistics().source("tail")?.appended == 3)
    }

    @Test func appendIfRoomStoresNothingOfABatchThatDoesNotFitWhole() {
        let ring = RecordRing(capacity: 100)
        let tail = ring.registerSource("tail")
        ring.append([UInt8](repeating: 9, count: 20), source: tail)
        // 28 used; three more 28-byte frames would need 112.
        let frames = [UInt8](repeating: 1, count: 60)
        #expect(ring.appendIfRoom(frames: frames, ends: [20, 40, 60], source: tail) == nil)
        #expect(ring.statistics().nextToWrite == 2)
        #expect(ring.statistics().source("tail")?.droppedNewest == 0)
        // A frame larger than the whole ring is the waiting append's to reject.
        #expect(ring.appendIfRoom(frames: [UInt8](repeating: 1, count: 200), ends: [200], source: tail) == nil)
        #expect(ring.statistics().source("tail")?.rejectedOversize == 0)
    }

    @Test func appendIfRoomNeverPassesAnAppendWaitingForRoom() async throws {
        let ring = RecordRing(capacity: 100)
        let source = ring.registerSource("s")
        ring.append([UInt8](repeating: 1, count: 50), source: source)
        // 58 used, 42 free: a 40-byte frame (48) waits, a 1-byte one (9) would fit but must not pass it.
        let waiting = Task { await ring.appendWaitingForSpace([UInt8](repeating: 2, count: 40), source: source) }
        #expect(await eventually { ring.waitingForSpace == 1 })
        #expect(ring.appendIfRoom(frames: [7], ends: [1], source: source) == nil)
        _ = readUnsent(ring)
        ring.acknowledge(through: 1)
        #expect(await waiting.value == .appended(sequence: 2))
        #expect(ring.appendIfRoom(frames: [7], ends: [1], source: source) == [.appended(sequence: 3)])
    }

}

/// Runs its jobs in order on a thread of its own, except while held: then they wait until `open()`. Lets a test keep a
/// task from running at a point it chooses.
final class GatedExecutor: TaskExecutor, @unchecked Sendable {
    // Guarded by `condition`.
    private let condition = NSCondition()
    private var jobs: [UnownedJob] = []
    private var held = false

    init() {
        Thread { [self] in runJobs() }.start()
    }

    func enqueue(_ job: consuming ExecutorJob) {
        let job = UnownedJob(job)
        condition.withLock {
            jobs.append(job)
            condition.signal()
        }
    }

    func hold() {
        condition.withLock { held = true }
    }

    func open() {
        condition.withLock {
            held = false
            condition.signal()
        }
    }

    private func runJobs() -> Never {
        let executor = asUnownedTaskExecutor()
        while true {
            let job = condition.withLock {
                while jobs.isEmpty || held { condition.wait() }
                return jobs.removeFirst()
            }
            job.runSynchronously(on: executor)
        }
    }
}
