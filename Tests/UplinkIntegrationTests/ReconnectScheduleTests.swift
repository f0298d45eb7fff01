import Foundation
import Synchronization
import Testing
import UplinkCollector
import UplinkCore
import UplinkTransport
import UplinkWire
import UplinkTestSupport

/// The collector comes back on the port the agent keeps trying: the very next attempt opens the stream, so the
/// first attempt after the collector is back comes within one backoff delay (at most the current ceiling).
///
/// The uplink's backoff sleep is driven by the test: it records each delay, starts the collector during the k-th one,
/// and returns at once, so nothing depends on how long anything took.
@Suite("Reconnect after the collector comes back", .timeLimit(.minutes(2)))
struct ReconnectScheduleTests {
    @Test("After k refused attempts a collector starts on the port: the stream is up on attempt k+1, records arrive")
    func streamUpOnTheNextAttempt() async throws {
        // Held until the collector starts: the refused attempts meet this bound socket, never another test's server.
        let reservation = try FreePort.reserve()
        let port = reservation.port
        let dataDirectory = try Harness.temporaryDirectory("reconnect")
        let refusedAttempts = 5
        let backoff = Backoff(initial: .milliseconds(100), multiplier: 2, maximum: .seconds(1))
        var configuration = UplinkConfiguration(
            url: "http://127.0.0.1:\(port)", agentID: "reconnect-agent", backoff: backoff, jitterSeed: 3)
        configuration.connectTimeout = .seconds(300)
        configuration.stallTimeout = .seconds(3600)

        let ring = RecordRing(capacity: 1 << 20)
        let source = ring.registerSource("test")
        let records = 50
        for n in 0..<records {
            let record = Record(timestamp: 1, source: "test", payload: .log(LogLine(message: "m", fields: [Tag("n", "\(n)")])))
            #expect(ring.append(NDJSONFrameEncoder().frame(for: record), source: source) == .appended(sequence: UInt64(n + 1)))
        }

        let schedule = CollectorComingBack(reservation: reservation, dataDirectory: dataDirectory, startDuringDelay: refusedAttempts)
        let uplink = Uplink(configuration: configuration, ring: ring, logger: testLogger, backoffSleep: schedule.sleep)
        schedule.attach(uplink)
        let task = Task { try await uplink.run() }

        let up = await eventually(timeout: .seconds(30)) { uplink.statistics().streamsOpened >= 1 }
        #expect(up, "no stream: \(uplink.statistics()); collector start: \(schedule.startFailure ?? "no failure")")
        let delivered = await eventually(timeout: .seconds(30)) { ring.statistics().acknowledged >= UInt64(records) }
        #expect(delivered, "acknowledged \(ring.statistics().acknowledged) of \(records)")
        task.cancel()
        try await task.value

        let statistics = uplink.statistics()
        let calls = schedule.calls
        // k refused attempts, k delays, and then one attempt that opened the stream.
        #expect(calls.count == refusedAttempts, "delays: \(calls.map(\.delay))")
        #expect(statistics.connectionAttempts == refusedAttempts + 1)
        #expect(statistics.streamsOpened == 1)
        #expect(statistics.failures == refusedAttempts)
        for (index, call) in calls.enumerated() {
            #expect(call.connectionAttempts == index + 1)
            #expect(call.delay <= backoff.ceiling(attempt: index), "delay \(index): \(call.delay)")
            #expect(call.failure?.description.lowercased().contains("refused") == true, "\(String(describing: call.failure))")
        }
        try await schedule.stopCollector()

        let stored = try Harness.storedRecords(in: dataDirectory)
        #expect(Harness.exactlyOnceProblem(stored.compactMap { Harness.generatorCounter($0.record) }, total: records) == nil)
    }
}

/// A backoff sleep that records each delay with the uplink's counters and starts a collector on the reserved port during the
/// `startDuringDelay`-th delay. Every call returns at once.
private final class CollectorComingBack: Sendable {
    struct Call: Sendable {
        var delay: Duration
        var connectionAttempts: Int
        var failure: StreamFailure?
    }

    private let reservation: PortReservation
    private let dataDirectory: String
    private let startDuringDelay: Int
    private let state = Mutex<(uplink: Uplink?, calls: [Call], collector: InProcessCollector?, startFailure: String?)>(
        (nil, [], nil, nil))

    init(reservation: PortReservation, dataDirectory: String, startDuringDelay: Int) {
        self.reservation = reservation
        self.dataDirectory = dataDirectory
        self.startDuringDelay = startDuringDelay
    }

    func attach(_ uplink: Uplink) {
        state.withLock { $0.uplink = uplink }
    }

    var calls: [Call] { state.withLock { $0.calls } }

    /// Why the collector did not start, if it did not.
    var startFailure: String? { state.withLock { $0.startFailure } }

    var sleep: @Sendable (Duration) async throws -> Void {
        { [self] delay in try await self.record(delay) }
    }

    private func record(_ delay: Duration) async throws {
        let count = state.withLock { state -> Int in
            let statistics = state.uplink?.statistics()
            state.calls.append(Call(
                delay: delay, connectionAttempts: statistics?.connectionAttempts ?? -1, failure: statistics?.lastFailure))
            return state.calls.count
        }
        guard count == startDuringDelay else { return }
        var configuration = CollectorConfiguration()
        configuration.port = reservation.port
        reservation.release()
        configuration.dataDirectory = dataDirectory
        configuration.stdoutSink = false
        configuration.jsonlSink = true
        do {
            let collector = try await InProcessCollector(configuration: configuration)
            state.withLock { $0.collector = collector }
        } catch {
            state.withLock { $0.startFailure = "\(error)" }
            throw error
        }
    }

    func stopCollector() async throws {
        let collector = state.withLock { $0.collector }
        try await collector?.stop()
    }
}
