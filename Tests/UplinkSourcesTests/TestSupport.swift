import Foundation
import Logging
import Synchronization
import Testing
import UplinkCore
import UplinkTestSupport

@testable import UplinkSources

// MARK: - Sinks

/// Collects every record offered to it, remembering which method was used. By default a record counts as
/// acknowledged once emitted (as with nothing downstream); with `acknowledgesOnEmit: false` sequences are
/// acknowledged only when the test says so (`acknowledge(through:)`), as a collector would.
final class CollectingSink: RecordSink {
    private struct State {
        var records: [Record] = []
        var emitCalls = 0
        var waitingCalls = 0
    }
    private let state = Mutex(State())
    private let acknowledged: MonotonicSignal<UInt64>

    init(acknowledgesOnEmit: Bool = true) {
        acknowledged = MonotonicSignal(acknowledgesOnEmit ? .max : 0)
    }

    func emit(_ record: Record) -> AppendOutcome {
        state.withLock {
            $0.records.append(record)
            $0.emitCalls += 1
            return .appended(sequence: UInt64($0.records.count))
        }
    }

    func emitWaitingForSpace(_ record: Record) async -> AppendOutcome {
        state.withLock {
            $0.records.append(record)
            $0.waitingCalls += 1
            return .appended(sequence: UInt64($0.records.count))
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

    var records: [Record] { state.withLock { $0.records } }
    var emitCalls: Int { state.withLock { $0.emitCalls } }
    var waitingCalls: Int { state.withLock { $0.waitingCalls } }
    var count: Int { state.withLock { $0.records.count } }
}

/// A sink with room for a limited number of records: `emitWaitingForSpace` suspends while there is none,
/// until the test grants more with `grant(_:)`. `emit` is never expected and only counted.
final class GatedSink: RecordSink {
    private struct State {
        var records: [Record] = []
        var permits: Int
        var waiters: [(Record, CheckedContinuation<AppendOutcome, Never>)] = []
        var emitCalls = 0
    }
    private let state: Mutex<State>

    init(permits: Int) {
        state = Mutex(State(permits: permits))
    }

    func emit(_ record: Record) -> AppendOutcome {
        state.withLock { $0.emitCalls += 1 }
        return .droppedNewest
    }

    func emitWaitingForSpace(_ record: Record) async -> AppendOutcome {
        await withCheckedContinuation { continuation in
            let resumed: AppendOutcome? = state.withLock {
                if $0.permits > 0, $0.waiters.isEmpty {
                    $0.permits -= 1
                    $0.records.append(record)
                    return .appended(sequence: UInt64($0.records.count))
                }
                $0.waiters.append((record, continuation))
                return nil
            }
            if let resumed {
                continuation.resume(returning: resumed)
            }
        }
    }

    /// Makes room for `count` more records, waking waiting emitters.
    func grant(_ count: Int) {
        let ready: [(CheckedContinuation<AppendOutcome, Never>, AppendOutcome)] = state.withLock {
            $0.permits += count
            var ready: [(CheckedContinuation<AppendOutcome, Never>, AppendOutcome)] = []
            while $0.permits > 0, !$0.waiters.isEmpty {
                let (record, continuation) = $0.waiters.removeFirst()
                $0.permits -= 1
                $0.records.append(record)
                ready.append((continuation, .appended(sequence: UInt64($0.records.count))))
            }
            return ready
        }
        for (continuation, outcome) in ready {
            continuation.resume(returning: outcome)
        }
    }

    var count: Int { state.withLock { $0.records.count } }
    var waiting: Int { state.withLock { $0.waiters.count } }
    var emitCalls: Int { state.withLock { $0.emitCalls } }
    var records: [Record] { state.withLock { $0.records } }
}

/// A thread-safe boolean that starts false.
final class Flag: Sendable {
    private let value = Atomic<Bool>(false)
    func set() { value.store(true, ordering: .sequentiallyConsistent) }
    var isSet: Bool { value.load(ordering: .sequentiallyConsistent) }
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
