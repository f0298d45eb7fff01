import Foundation
import Logging
import Testing
import UplinkCore
import UplinkTestSupport

@testable import UplinkSources

/// A rough measure of the reader's own cost, run only when `UPLINK_TAIL_THROUGHPUT` is set (build with
/// `-c release` for meaningful numbers): 256 MiB of 200-byte lines through a sink that only counts.
@Suite("Tail throughput")
struct TailThroughputTests {
    static func cpuSeconds() -> Double {
        var usage = rusage()
        getrusage(RUSAGE_SELF.rawValue, &usage)
        return Double(usage.ru_utime.tv_sec) + Double(usage.ru_utime.tv_usec) / 1e6 + Double(usage.ru_stime.tv_sec)
            + Double(usage.ru_stime.tv_usec) / 1e6
    }

    @Test(.enabled(if: ProcessInfo.processInfo.environment["UPLINK_TAIL_THROUGHPUT"] != nil))
    func readerCost() async throws {
        let directory = try TailTemporaryDirectory()
        defer { directory.remove() }
        let path = directory.file("big.log")
        let line = Array((String(repeating: "x", count: 199) + "\n").utf8)
        var block: [UInt8] = []
        for _ in 0..<(1 << 20) / line.count { block += line }
        let linesPerBlock = block.count / line.count
        let writer = TailTestWriter(path)
        let blocks = 256
        for _ in 0..<blocks { writer.write(block) }
        writer.close()
        let total = linesPerBlock * blocks

        let sink = RecordingSink(keepsRecords: false)
        let cpuBefore = Self.cpuSeconds()
        let start = ContinuousClock.now
        let tail = RunningTail(tailTestConfig([path]), sink: sink)
        #expect(await eventually(timeout: .seconds(600)) { sink.count >= total })
        let elapsed = ContinuousClock.now - start
        let cpu = Self.cpuSeconds() - cpuBefore
        try await tail.stop()
        let mebibytes = Double(total * line.count) / Double(1 << 20)
        let seconds = Double(elapsed.components.seconds) + Double(elapsed.components.attoseconds) * 1e-18
        print(
            "tail throughput: \(total) lines, \(Int(mebibytes)) MiB in \(seconds) s = \(Int(mebibytes / seconds)) MiB/s, CPU \(cpu) s = \(cpu * 1024 / mebibytes) CPU-s per GiB"
        )
    }
}

/// 1,000 rename rotations (to one fixed name, so an incarnation never seen is gone for good) while a writer appends
/// as fast as it can; run only when `UPLINK_TAIL_STRESS` is set.
@Suite("Tail rotation stress")
struct TailRotationStressTests {
    @Test(
        .enabled(if: ProcessInfo.processInfo.environment["UPLINK_TAIL_STRESS"] != nil),
        arguments: [TailWatchMethod.auto])
    func thousandRotations(watch: TailWatchMethod) async throws {
        let directory = try TailTemporaryDirectory()
        defer { directory.remove() }
        let path = directory.file("app.log")
        var writer = TailTestWriter(path)
        let sink = RecordingSink(keepsRecords: false)
        var config = tailTestConfig([path], watch: watch)
        config.pollInterval = .milliseconds(250)
        config.discoveryInterval = .seconds(10)
        var logger = Logger(label: "stress") { StreamLogHandler.standardError(label: $0) }
        logger.logLevel = ProcessInfo.processInfo.environment["UPLINK_TAIL_STRESS_LOG"] != nil ? .debug : .warning
        let tail = RunningTail(config, sink: sink, logger: logger)
        try await Task.sleep(for: .milliseconds(200))
        let rotations = Int(ProcessInfo.processInfo.environment["UPLINK_TAIL_STRESS_ROTATIONS"] ?? "1000") ?? 1000
        let linesPerFile = Int(ProcessInfo.processInfo.environment["UPLINK_TAIL_STRESS_LINES"] ?? "200") ?? 200
        var counter = 0
        let start = ContinuousClock.now
        let unique = ProcessInfo.processInfo.environment["UPLINK_TAIL_STRESS_UNIQUE"] != nil
        let pause = Int(ProcessInfo.processInfo.environment["UPLINK_TAIL_STRESS_PAUSE_MS"] ?? "0") ?? 0
        for rotation in 0..<rotations {
            var chunk = ""
            for _ in 0..<linesPerFile {
                chunk += "line \(counter) " + String(repeating: "p", count: 180) + "\n"
                counter += 1
            }
            writer.write(chunk)
            rename(path, path + (unique ? ".\(rotation)" : ".1"))
            writer.close()
            writer = TailTestWriter(path)
            if pause > 0 { try await Task.sleep(for: .milliseconds(pause)) }
        }
        writer.close()
        let written = ContinuousClock.now - start
        let total = counter
        let complete = await eventually(timeout: .seconds(60)) { sink.count >= total }
        try await Task.sleep(for: .milliseconds(500))
        try await tail.stop()
        print("stress \(watch): wrote \(total) lines in \(written), read \(sink.count), complete \(complete)")
        #expect(sink.count == total)
    }
}
