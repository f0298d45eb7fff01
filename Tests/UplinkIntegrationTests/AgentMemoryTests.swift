import Foundation
import Testing
import UplinkTestSupport

/// Memory of a real agent process whose collector stopped reading.
@Suite("Agent memory under a stalled collector", .serialized, .timeLimit(.minutes(2)))
struct AgentMemoryTests {
    @Test("An agent generating many times its buffer into a stalled stream keeps its resident memory flat")
    func residentMemoryStaysBounded() async throws {
        let collector = try await InProcessCollector(name: "memory")
        let proxy = FaultProxy(upstreamPort: collector.port)
        try await proxy.start()
        proxy.setStalled(true)  // the stream opens but no byte reaches the collector, and none comes back

        let directory = try Harness.temporaryDirectory("memory")
        let config = directory + "/agent.yaml"
        try """
            agent:
              id: memory-agent
            buffer:
              max_bytes: 8MiB
            uplink:
              url: http://127.0.0.1:\(proxy.port)
              stall_timeout: 10m
            sources:
              - name: flood
                type: generator
                rate: 200000
                record_bytes: 200
            """.write(toFile: config, atomically: true, encoding: .utf8)
        let process = Process()
        process.executableURL = URL(fileURLWithPath: try UplinkBinary.path())
        process.arguments = ["run", "--config", config, "--log-level", "error"]
        process.standardOutput = FileHandle.nullDevice
        process.standardError = FileHandle.nullDevice
        try process.run()
        defer {
            process.terminate()
            process.waitUntilExit()
        }

        // Let the ring fill (8 MiB), then measure while the generator keeps overflowing it.
        try await Task.sleep(for: .seconds(2))
        let settled = try #require(Self.residentBytes(of: process.processIdentifier))
        var peak = settled
        for _ in 0..<8 {
            try await Task.sleep(for: .milliseconds(500))
            peak = max(peak, try #require(Self.residentBytes(of: process.processIdentifier)))
        }
        #expect(process.isRunning)
        // Over these 4 s the generator offers tens of megabytes: all of it must have been dropped, not kept.
        #expect(peak - settled < 16 << 20, "resident memory grew from \(settled >> 20) MiB to \(peak >> 20) MiB")
        try await proxy.stop()
        try await collector.stop()
    }

    static func residentBytes(of pid: Int32) -> Int? {
        guard let status = try? String(contentsOfFile: "/proc/\(pid)/status", encoding: .utf8) else { return nil }
        for line in status.split(separator: "\n") where line.hasPrefix("VmRSS:") {
            return line.split(separator: " ").dropFirst().first.flatMap { Int($0) }.map { $0 * 1024 }
        }
        return nil
    }
}
