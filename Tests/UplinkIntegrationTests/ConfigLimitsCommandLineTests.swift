import Foundation
import Testing

/// `uplink validate` on configurations that used to abort it or garble its output, as a user runs it.
@Suite("uplink validate: limits and control characters", .serialized, .timeLimit(.minutes(2)))
struct ConfigLimitsCommandLineTests {
    func validate(_ yaml: String) async throws -> (path: String, status: Int32, standardError: String) {
        let directory = try Harness.temporaryDirectory("cli-limits")
        let path = directory + "/uplink.yaml"
        try yaml.write(toFile: path, atomically: true, encoding: .utf8)
        let result = try await CommandLineTests().run(["validate", "--config", path])
        return (path, result.status, result.standardError)
    }

    @Test func aTerabyteBufferIsOneIssueNotAnAbort() async throws {
        let result = try await validate("""
            buffer: { max_bytes: 1TiB }
            uplink: { url: http://127.0.0.1:4318 }
            sources: [{ name: cpu, type: cpu }]
            """)
        #expect(result.status == 78)
        let lines = result.standardError.split(separator: "\n", omittingEmptySubsequences: false)
        #expect(lines.count == 3, "\(result.standardError)")  // the issue, the summary, and the final newline
        #expect(lines.first?.hasPrefix("\(result.path):1:22: buffer.max_bytes: '1TiB' is too large: the maximum is ") == true)
        #expect(lines.dropFirst().first == "\(result.path): 1 configuration issue; nothing was started")
        #expect(!result.standardError.contains("Fatal error"))
    }

    @Test func controlCharactersNeverReachTheTerminal() async throws {
        let result = try await validate("""
            uplink: { url: "http://h\\e]0;owned\\a\\n" }
            sources: [{ name: cpu, type: cpu, interval: "1\\0s" }]
            """)
        #expect(result.status == 78)
        let lines = result.standardError.split(separator: "\n").map(String.init)
        #expect(lines.count == 3, "\(result.standardError)")
        #expect(!result.standardError.utf8.contains { $0 < 0x20 && $0 != 0x0A })
        #expect(lines.contains { $0.contains(#"'http://h\u001b]0;owned\u0007\n'"#) }, "\(lines)")
        #expect(lines.contains { $0.contains(#"'1\u0000s'"#) }, "\(lines)")
    }
}
