import Foundation
import Logging
import Testing
import UplinkCore
import UplinkTestSupport

@testable import UplinkSources

/// A rough measure of the journald source's own cost, run only when `UPLINK_JOURNALD_THROUGHPUT` is set (build with
/// `-c release` for meaningful numbers): 200,000 entries of 200-byte messages with the usual fields, written by
/// systemd-journal-remote, read through a sink that only counts.
///
///     UPLINK_JOURNALD_THROUGHPUT=1 swift test -c release --filter JournaldThroughput
@Suite("journald throughput")
struct JournaldThroughputTests {
    @Test(.enabled(if: ProcessInfo.processInfo.environment["UPLINK_JOURNALD_THROUGHPUT"] != nil && TestJournal.isAvailable))
    func readerCost() async throws {
        let directory = try TailTemporaryDirectory()
        defer { directory.remove() }
        let total = 200_000
        let padding = String(repeating: "x", count: 190)
        for part in 0..<4 {
            let range = (part * total / 4)..<((part + 1) * total / 4)
            let entries = TestJournal.numbered(range).map { entry -> TestJournal.Entry in
                var entry = entry
                entry.fields[0].value += Array(" \(padding)".utf8)
                return entry
            }
            try await TestJournal.append(entries, to: directory.file("system.journal"))
        }
        let sink = RecordingSink(keepsRecords: false)
        let cpuBefore = TailThroughputTests.cpuSeconds()
        let start = ContinuousClock.now
        let source = RunningJournald(journaldTestConfig(directory.path), sink: sink)
        #expect(await eventually(timeout: .seconds(600)) { sink.count >= total })
        let elapsed = ContinuousClock.now - start
        let cpu = TailThroughputTests.cpuSeconds() - cpuBefore
        try await source.stop()
        let seconds = Double(elapsed.components.seconds) + Double(elapsed.components.attoseconds) * 1e-18
        print("journald throughput: \(total) entries in \(seconds) s = \(Int(Double(total) / seconds)) entries/s, CPU \(cpu) s = \(Int(Double(total) / cpu)) entries per CPU-second")
    }
}
