import Foundation
import Logging
import Synchronization
import Testing
import UplinkCore
import UplinkTestSupport

@testable import UplinkSources

// MARK: - Sinks

/// The one recording `RecordSink` of these tests: keeps every record offered to it, counting which method was used
/// and the size of each batch. Options make it the sink a test needs:
/// - `acknowledgesOnEmit: false`: sequences are acknowledged only when the test says so (`acknowledge(through:)`),
///   as a collector would; by default a record counts as acknowledged once emitted (nothing downstream).
/// - `permits`: room for that many records only. `emitWaitingForSpace` suspends while there is none, until the test
///   grants more with `grant(_:)`; `emit` (never expected then) is counted and drops the record.
/// - `rejecting: true`: every record is refused as oversize (counted, not kept).
/// - `keepsRecords: false`: lines handed over in batches are counted without making records (throughput checks).
final class RecordingSink: RecordSink {
    /// What a batch carried besides its lines.
    struct Batch {
        var count: Int
        var source: String
        var fields: [UplinkCore.Tag]
        var originID: UInt64
    }
    private struct State {
        var records: [Record] = []
        var appended: UInt64 = 0
        var emitCalls = 0
        var waitingCalls = 0
        var ifRoomCalls = 0
        var ifRoomStored = 0
        var batches: [Batch] = []
        var permits: Int?
        var waiters: [(Record, CheckedContinuation<AppendOutcome, Never>)] = []

        mutating func append(_ record: Record, keeping: Bool) -> AppendOutcome {
            if keeping { records.append(record) }
            appended += 1
            return .appended(sequence: appended)
        }
    }
    private let state: Mutex<State>
    private let acknowledged: MonotonicSignal<UInt64>
    private let rejecting: Bool
    private let keepsRecords: Bool

    init(acknowledgesOnEmit: Bool = true, permits: Int? = nil, rejecting: Bool = false, keepsRecords: Bool = true) {
        state = Mutex(State(permits: permits))
        acknowledged = MonotonicSignal(acknowledgesOnEmit ? .max : 0)
        self.rejecting = rejecting
        self.keepsRecords = keepsRecords
    }

    func emit(_ record: Record) -> AppendOutcome {
        state.withLock {
            $0.emitCalls += 1
            if rejecting { return .rejectedOversize }
            if $0.permits != nil { return .droppedNewest }
            return $0.append(record, keeping: keepsRecords)
        }
    }

    func emitWaitingForSpace(_ record: Record) async -> AppendOutcome {
        await withCheckedContinuation { continuation in
            let outcome: AppendOutcome? = state.withLock {
                $0.waitingCalls += 1
                if rejecting { return .rejectedOversize }
                guard let permits = $0.permits else { return $0.append(record, keeping: keepsRecords) }
                if permits > 0, $0.waiters.isEmpty {
                    $0.permits = permits - 1
                    return $0.append(record, keeping: keepsRecords)
                }
                $0.waiters.append((record, continuation))
                return nil
            }
            if let outcome {
                continuation.resume(returning: outcome)
            }
        }
    }

    /// Records the batch, then offers its lines one by one as `emitWaitingForSpace` does (as the protocol's default
    /// would), or with `keepsRecords: false` counts them all at once.
    nonisolated(nonsending) func emitWaitingForSpace(_ batch: LogLineBatch) async -> [AppendOutcome] {
        let counted: [AppendOutcome]? = state.withLock { state in
            state.batches.append(Batch(count: batch.count, source: batch.source, fields: batch.fields, originID: batch.originID))
            guard !keepsRecords, !rejecting, state.permits == nil else { return nil }
            let first = state.appended + 1
            state.appended += UInt64(batch.count)
            return (0..<UInt64(batch.count)).map { .appended(sequence: first + $0) }
        }
        if let counted { return counted }
        var outcomes: [AppendOutcome] = []
        for index in 0..<batch.count {
            outcomes.append(await emitWaitingForSpace(batch.record(at: index)))
        }
        return outcomes
    }

    /// Stores the whole batch when nothing waits and, with `permits`, there is room for all of it; otherwise nil
    /// (and, `rejecting`, always: the waiting path counts rejections). Counted in `ifRoomCalls` / `ifRoomStored`.
    func emitIfRoom(_ batch: LogLineBatch) -> [AppendOutcome]? {
        state.withLock { state in
            state.ifRoomCalls += 1
            if rejecting || !state.waiters.isEmpty { return nil }
            if let permits = state.permits {
                guard permits >= batch.count else { return nil }
                state.permits = permits - batch.count
            }
            state.batches.append(Batch(count: batch.count, source: batch.source, fields: batch.fields, originID: batch.originID))
            state.ifRoomStored += 1
            return (0..<batch.count).map { state.append(batch.record(at: $0), keeping: keepsRecords) }
        }
    }

    var acknowledgedSequence: UInt64 { acknowledged.value }

    func waitForAcknowledgement(after sequence: UInt64) async -> UInt64 {
        // Nothing is acknowledged beyond the maximum: such a wait ends only with cancellation.
        guard sequence < .max else {
            _ = try? await AsyncLatch<Void>().waitUnlessCancelled()
            return acknowledged.value
        }
        return await acknowledged.wait(until: sequence + 1)
    }

    /// Acknowledges every record up to and including number `sequence` (1-based).
    func acknowledge(through sequence: UInt64) {
        acknowledged.advance(to: sequence)
    }

    /// With `permits`: makes room for `count` more records, waking waiting emitters.
    func grant(_ count: Int) {
        let ready: [(CheckedContinuation<AppendOutcome, Never>, AppendOutcome)] = state.withLock {
            $0.permits = ($0.permits ?? 0) + count
            var ready: [(CheckedContinuation<AppendOutcome, Never>, AppendOutcome)] = []
            while let permits = $0.permits, permits > 0, !$0.waiters.isEmpty {
                let (record, continuation) = $0.waiters.removeFirst()
                $0.permits = permits - 1
                ready.append((continuation, $0.append(record, keeping: keepsRecords)))
            }
            return ready
        }
        for (continuation, outcome) in ready {
            continuation.resume(returning: outcome)
        }
    }

    /// The records kept, in order.
    var records: [Record] { state.withLock { $0.records } }
    /// How many records were appended (kept or, with `keepsRecords: false`, only counted).
    var count: Int { state.withLock { Int($0.appended) } }
    var emitCalls: Int { state.withLock { $0.emitCalls } }
    var waitingCalls: Int { state.withLock { $0.waitingCalls } }
    /// `emitIfRoom` calls, and those that stored their batch.
    var ifRoomCalls: Int { state.withLock { $0.ifRoomCalls } }
    var ifRoomStored: Int { state.withLock { $0.ifRoomStored } }
    /// The batches handed over, in order.
    var batches: [Batch] { state.withLock { $0.batches } }
    /// With `permits`: the emitters waiting for room.
    var waiting: Int { state.withLock { $0.waiters.count } }
}

// MARK: - Clock

/// A `TickClock` that never really waits: `sleep(untilNanoseconds:)` records the deadline and moves the time
/// to it (plus `workNanoseconds`, standing for the time the tick's work takes). After `maximumSleeps` sleeps
/// it throws `CancellationError`, which ends a sensor's `run`. `onSleep` runs at the end of each sleep
/// (1-based number), after time moved on, e.g. to rewrite a fixture file or make the clock jump.
final class FakeTickClock: TickClock {
    private struct State {
        var now: Int64
        var deadlines: [Int64] = []
    }
    private let state: Mutex<State>
    let workNanoseconds: Int64
    let maximumSleeps: Int
    let onSleep: @Sendable (_ number: Int, _ clock: FakeTickClock) -> Void

    init(
        now: Int64, workNanoseconds: Int64 = 0, maximumSleeps: Int,
        onSleep: @escaping @Sendable (_ number: Int, _ clock: FakeTickClock) -> Void = { _, _ in }
    ) {
        state = Mutex(State(now: now))
        self.workNanoseconds = workNanoseconds
        self.maximumSleeps = maximumSleeps
        self.onSleep = onSleep
    }

    func nowNanoseconds() -> Int64 {
        state.withLock { $0.now }
    }

    func sleep(untilNanoseconds deadline: Int64) async throws {
        let number = state.withLock {
            $0.deadlines.append(deadline)
            return $0.deadlines.count
        }
        guard number <= maximumSleeps else { throw CancellationError() }
        state.withLock { $0.now = max($0.now, deadline) + workNanoseconds }
        onSleep(number, self)
    }

    /// Sets the time (a wall-clock step).
    func set(now: Int64) {
        state.withLock { $0.now = now }
    }

    /// Monotonic time moves with the wall clock here (from a fixed origin); sensors do not use it.
    var now: ContinuousClock.Instant {
        Self.origin.advanced(by: .nanoseconds(nowNanoseconds()))
    }
    private static let origin = ContinuousClock.Instant.now

    func sleep(until deadline: ContinuousClock.Instant) async throws {
        try await sleep(untilNanoseconds: Int64(clamping: Self.origin.duration(to: deadline).nanoseconds))
    }

    /// Every deadline asked for, in order (including the one that was refused after `maximumSleeps`).
    var deadlines: [Int64] { state.withLock { $0.deadlines } }
}

/// A `TickClock` whose time moves only when the test calls `advance(by:)`: a sleep returns once the clock was
/// advanced to its deadline (or at cancellation). The tail and journald engines take it so their tests decide when
/// a timeout has passed instead of sleeping through it.
final class ManualTickClock: TickClock {
    private let clock = ManualClock()
    private let origin: ContinuousClock.Instant
    private let wallOrigin: Int64 = 1_800_000_000_000_000_000

    init() {
        origin = clock.now
    }

    var now: ContinuousClock.Instant { clock.now }

    func nowNanoseconds() -> Int64 {
        wallOrigin + origin.duration(to: clock.now).nanoseconds
    }

    func sleep(untilNanoseconds deadline: Int64) async throws {
        try await clock.sleep(until: now.advanced(by: .nanoseconds(deadline - nowNanoseconds())), tolerance: nil)
    }

    func sleep(until deadline: ContinuousClock.Instant) async throws {
        try await clock.sleep(until: deadline, tolerance: nil)
    }

    /// Moves the time on by `duration` and ends every sleep whose deadline it reached.
    func advance(by duration: Duration) {
        clock.advance(by: duration)
    }

    /// How far each sleep in progress has yet to go, shortest first.
    var sleepsLeft: [Duration] { clock.sleepsLeft }

    /// Lets `steps` steps of `step` pass, each settled: the time moves on and the `sleepers` tasks that sleep on
    /// this clock are asleep again before the next (`ManualClock.advance(by:settlingTo:)`), so whatever a source
    /// would do in that time is done. A tail source sleeps twice on its clock when idle: its reading task's timer
    /// and its opener's scan. Whether every step settled.
    func pass(_ steps: Int, of step: Duration, sleepers: Int = 2) async -> Bool {
        for _ in 0..<steps {
            guard await clock.advance(by: step, settlingTo: sleepers) else { return false }
        }
        return true
    }

    /// Settled steps of `step` (as `pass`) until `condition` holds, at most `steps`; whether it held. Before each
    /// step the condition gets a little real time (`eventually`, 50 ms), for work that an event rather than the clock
    /// set going: a step settles as soon as every sleeper sleeps again, which says nothing of a task woken otherwise.
    func advance(
        by step: Duration, until condition: () -> Bool, steps: Int = 200, sleepers: Int = 2
    ) async -> Bool {
        for _ in 0..<steps {
            if await eventually(timeout: .milliseconds(50), condition) { return true }
            clock.advance(by: step)
            // Settled, or done: a source may end the step waiting for something other than the clock (its sink).
            guard await eventually({ condition() || clock.isSettled(sleepers) }) else { return false }
        }
        return await eventually(condition)
    }
}

// MARK: - Logging

// MARK: - Fixtures

enum Fixtures {
    /// `Tests/UplinkSourcesTests/Fixtures`.
    static let root = URL(fileURLWithPath: #filePath).deletingLastPathComponent().appendingPathComponent("Fixtures")

    static func url(_ relative: String) -> URL {
        root.appendingPathComponent(relative)
    }

    static func bytes(_ relative: String) throws -> [UInt8] {
        Array(try Data(contentsOf: url(relative)))
    }

    /// A fresh temporary directory, removed when the test process exits (`TestDirectories`).
    static func temporaryDirectory() throws -> URL {
        URL(fileURLWithPath: try TestDirectories.make("uplink-sources-tests"), isDirectory: true)
    }

    /// Copies the fixture directory `relative` (e.g. `x86-laptop-8core/proc`) to a temporary directory and
    /// returns the copy's path.
    static func copy(_ relative: String) throws -> URL {
        let destination = try temporaryDirectory().appendingPathComponent("proc", isDirectory: true)
        try FileManager.default.copyItem(at: url(relative), to: destination)
        return destination
    }

    /// Overwrites `file` in the copied tree `procRoot` with the fixture file `relative`.
    static func replace(_ file: String, in procRoot: URL, with relative: String) {
        let target = procRoot.appendingPathComponent(file)
        // In place (not rename) is enough: the reader opens the file anew on every read.
        try? Data(contentsOf: url(relative)).write(to: target)
    }

    static func remove(_ procRoot: URL) {
        try? FileManager.default.removeItem(at: procRoot.deletingLastPathComponent())
    }
}

extension Record {
    var metric: Metric? {
        if case .metric(let metric) = payload { return metric }
        return nil
    }
    var logLine: LogLine? {
        if case .log(let line) = payload { return line }
        return nil
    }
}

/// Runs a source to completion with the given sink and logger, reporting to `health`.
func run(
    _ source: some Source, sink: some RecordSink, logger: Logger = Logger(label: "test"), health: SourceHealth = SourceHealth()
) async throws {
    try await source.run(context: SourceContext(sink: sink, logger: logger, health: health))
}
