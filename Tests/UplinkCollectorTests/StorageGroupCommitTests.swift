import Foundation
import CLinuxIO
import Logging
import NIOCore
import Synchronization
import Testing
import UplinkCore
import UplinkTestSupport

@testable import UplinkCollector

/// Where `Storage.commit` stores a group: on the committing thread when it is small and nothing in it can wait for the
/// device, else on the storage thread; either way every line is stored once, in order, and the marks follow.
@Suite struct StorageGroupCommitTests {
    private static func open(
        fsync: Bool = false, now: @escaping @Sendable () -> ContinuousClock.Instant = { .now }
    ) async throws -> (Storage, MarkTable, String) {
        let directory = try TestDirectories.make("uplink-storage")
        let configuration = CollectorConfiguration(dataDirectory: directory, stdoutSink: false, fsync: fsync)
        let marks = MarkTable()
        let storage = try await Storage.open(
            configuration: configuration, marks: marks, recorder: StatisticsRecorder(), logger: Logger(label: "test"), now: now)
        return (storage, marks, directory)
    }

    /// The `seq` of every stored line of `agent`, in file order.
    private static func storedSequences(_ directory: String, agent: String) throws -> [UInt64] {
        let text = try String(contentsOfFile: directory + "/records.jsonl", encoding: .utf8)
        return text.split(separator: "\n").compactMap { line -> UInt64? in
            guard line.hasPrefix(#"{"agent":"\#(agent)","#), let range = line.range(of: #""seq":"#) else { return nil }
            return UInt64(line[range.upperBound...].prefix { $0.isNumber })
        }
    }

    @Test("a small commit on an idle storage is stored by the committing thread")
    func smallCommitStoredHere() async throws {
        let (storage, marks, directory) = try await Self.open()
        defer { try? FileManager.default.removeItem(atPath: directory) }
        try await storage.commit(Storage.Commit(batch: logBatch("a", from: 1, count: 3), rejects: []))
        try await storage.commit(Storage.Commit(batch: logBatch("a", from: 4, count: 2), rejects: []))
        // Unless the first write slept in the kernel (a busy machine), which sends the second to the storage thread.
        let groups = storage.storedGroups
        #expect(groups.byCaller == 2 || (groups.slept > 0 && groups.byCaller == 1), "\(groups)")
        #expect(groups.byCaller + groups.byThread == 2)
        #expect(try Self.storedSequences(directory, agent: "a") == [1, 2, 3, 4, 5])
        #expect(marks.snapshot()[StreamKey(agent: "a", epoch: 1)] == 5)
        await storage.close()
    }

    @Test("a commit larger than the inline limit goes to the storage thread")
    func largeCommitToTheThread() async throws {
        let (storage, marks, directory) = try await Self.open()
        defer { try? FileManager.default.removeItem(atPath: directory) }
        // 1,000 lines of about 1 KiB: well over `inlineCommitBytes`.
        try await storage.commit(Storage.Commit(batch: logBatch("a", from: 1, count: 1_000, padding: 1_000), rejects: []))
        #expect(storage.storedGroups.byCaller == 0)
        #expect(storage.storedGroups.byThread == 1)
        #expect(try Self.storedSequences(directory, agent: "a") == Array(1...1_000))
        #expect(marks.snapshot()[StreamKey(agent: "a", epoch: 1)] == 1_000)
        await storage.close()
    }

    @Test("with collector.fsync every commit goes to the storage thread")
    func fsyncNeverOnTheCaller() async throws {
        let (storage, _, directory) = try await Self.open(fsync: true)
        defer { try? FileManager.default.removeItem(atPath: directory) }
        try await storage.commit(Storage.Commit(batch: logBatch("a", from: 1, count: 1), rejects: []))
        try await storage.commit(Storage.Commit(batch: logBatch("a", from: 2, count: 1), rejects: []))
        #expect(storage.storedGroups.byCaller == 0)
        #expect(storage.storedGroups.byThread == 2)
        #expect(try Self.storedSequences(directory, agent: "a") == [1, 2])
        await storage.close()
    }

    @Test("many streams committing at once: every line stored once, each stream in order, marks at each stream's last")
    func concurrentStreams() async throws {
        let (storage, marks, directory) = try await Self.open()
        defer { try? FileManager.default.removeItem(atPath: directory) }
        let streams = 8
        let commitsPerStream = 300
        try await withThrowingTaskGroup(of: Void.self) { group in
            for stream in 0..<streams {
                group.addTask {
                    var next: UInt64 = 1
                    for index in 0..<commitsPerStream {
                        // Mostly small commits, now and then one over the inline limit.
                        let large = index % 50 == 49
                        let count = large ? 400 : 1 + index % 3
                        try await storage.commit(Storage.Commit(
                            batch: logBatch("s\(stream)", from: next, count: count, padding: large ? 400 : 40), rejects: []))
                        next += UInt64(count)
                    }
                }
            }
            try await group.waitForAll()
        }
        let groups = storage.storedGroups
        #expect(groups.byThread >= 1, "the large commits went to the storage thread")
        for stream in 0..<streams {
            let stored = try Self.storedSequences(directory, agent: "s\(stream)")
            let last = try #require(stored.last)
            #expect(stored == Array(1...last), "s\(stream): every line once, in order")
            #expect(marks.snapshot()[StreamKey(agent: "s\(stream)", epoch: 1)] == last)
        }
        await storage.close()
    }

    @Test("after a store slept in the kernel, small commits go to the storage thread for the hold-off, then to the caller again")
    func holdOffAfterASleepingStore() async throws {
        let start = ContinuousClock.now
        let clock = Mutex(start)
        let (storage, marks, directory) = try await Self.open(now: { clock.withLock { $0 } })
        defer { try? FileManager.default.removeItem(atPath: directory) }
        storage.storeSlept()
        #expect(storage.isInlineHeld)
        try await storage.commit(Storage.Commit(batch: logBatch("a", from: 1, count: 1), rejects: []))
        #expect(storage.storedGroups.byThread == 1)
        #expect(storage.storedGroups.byCaller == 0)
        clock.withLock { $0 = start + Storage.inlineHoldOff - .milliseconds(1) }
        #expect(storage.isInlineHeld)
        try await storage.commit(Storage.Commit(batch: logBatch("a", from: 2, count: 1), rejects: []))
        #expect(storage.storedGroups.byThread == 2)
        clock.withLock { $0 = start + Storage.inlineHoldOff }
        #expect(!storage.isInlineHeld)
        try await storage.commit(Storage.Commit(batch: logBatch("a", from: 3, count: 1), rejects: []))
        #expect(storage.storedGroups.byCaller == 1)
        #expect(try Self.storedSequences(directory, agent: "a") == [1, 2, 3])
        #expect(marks.snapshot()[StreamKey(agent: "a", epoch: 1)] == 3)
        await storage.close()
    }

    @Test("a thread's voluntary context switches count a sleep in the kernel, not a computation")
    func voluntarySwitchesCountSleeps() throws {
        let before = uplink_thread_voluntary_switches()
        try #require(before >= 0)
        var spin: UInt64 = 1
        for index in 0..<2_000_000 { spin = spin &* 6_364_136_223_846_793_005 &+ UInt64(index) }
        #expect(spin != 0)
        #expect(uplink_thread_voluntary_switches() == before, "a computation does not give up the CPU voluntarily")
        // The sleep is what is measured here (a store that blocks in the kernel), not a wait for something.
        var pause = timespec(tv_sec: 0, tv_nsec: 2_000_000)
        nanosleep(&pause, nil)
        #expect(uplink_thread_voluntary_switches() > before)
    }

    @Test("after close a commit is refused, not stored")
    func closedRefuses() async throws {
        let (storage, _, directory) = try await Self.open()
        defer { try? FileManager.default.removeItem(atPath: directory) }
        await storage.close()
        await #expect(throws: (any Error).self) {
            try await storage.commit(Storage.Commit(batch: logBatch("a", from: 1, count: 1), rejects: []))
        }
        #expect(try Self.storedSequences(directory, agent: "a").isEmpty)
    }
}

extension Storage {
    /// `commit(_:completion:)`, awaited: returns once the records are stored, throws when they could not be.
    func commit(_ commit: Commit) async throws {
        try await withCheckedThrowingContinuation { (continuation: CheckedContinuation<Void, any Error>) in
            self.commit(commit) { continuation.resume(with: $0) }
        }
    }
}
