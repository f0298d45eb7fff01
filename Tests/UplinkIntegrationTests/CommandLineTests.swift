import Foundation
import Testing
import UplinkTestSupport

/// The built `uplink` binary, run as a user would.
@Suite("uplink command line", .serialized, .timeLimit(.minutes(2)))
struct CommandLineTests {
    static let examples = URL(fileURLWithPath: #filePath)
        .deletingLastPathComponent().deletingLastPathComponent().deletingLastPathComponent()
        .appendingPathComponent("examples.yaml").path

    @Test("validate accepts examples.yaml")
    func validateExamples() async throws {
        let result = try await run(["validate", "--config", Self.examples])
        #expect(result.status == 0, "stderr: \(result.standardError)")
        #expect(result.standardOutput.contains("valid"))
    }

    @Test("validate rejects a broken file with exit code 78, naming file, line, column and key")
    func validateBrokenFile() async throws {
        let directory = try Harness.temporaryDirectory("cli")
        let path = directory + "/broken.yaml"
        try """
            uplink:
              url: http://127.0.0.1:4318
            sources:
              - name: cpu
                type: cpu
                interval: often
            """.write(toFile: path, atomically: true, encoding: .utf8)
        let result = try await run(["validate", "--config", path])
        #expect(result.status == 78)
        #expect(result.standardError.contains("\(path):6:15: sources[0].interval: invalid duration 'often'"))
        #expect(!result.standardError.contains("Fatal error"))
    }

    @Test("run --config examples.yaml streams records to the embedded collector and exits cleanly on SIGTERM")
    func runExamples() async throws {
        let directory = try Harness.temporaryDirectory("cli-run")
        // The example's tail source follows ./quickstart.log from its beginning.
        try "hello from the quickstart test\n".write(toFile: directory + "/quickstart.log", atomically: true, encoding: .utf8)
        // In `directory`: the embedded collector's ./collector-data, the tail's ./quickstart.log.
        let process = try SpawnedProcess(
            ["/bin/sh", "-c", #"cd "$1" && shift && exec "$0" "$@""#, try UplinkBinary.path(), directory, "run", "--config", Self.examples],
            outputPath: directory + "/stdout", errorPath: directory + "/stderr")
        let collected = CapturedOutput(path: directory + "/stdout")

        let sawRecords = await eventually(timeout: .seconds(30)) {
            let text = collected.text
            // examples.yaml adds its own tags after cpu=…, so match up to the first tag only.
            return text.contains(" cpu cpu.user{cpu=total") && text.contains(" memory memory.used_percent ")
                && text.contains(" app-log hello from the quickstart test")
        }
        #expect(sawRecords, "no records printed: \(collected.text.prefix(500))")
        kill(process.processIdentifier, SIGTERM)
        let exited = await eventually(timeout: .seconds(20)) { !process.isRunning }
        #expect(exited)
        if !exited { process.terminate() }
        await process.awaitExit()
        #expect(process.exitedNormally)
        #expect(process.terminationStatus == 0)
        let log = CapturedOutput(path: directory + "/stderr").text
        #expect(log.contains("agent stopped"))
        #expect(log.contains("unacknowledged=0"))
    }

    func run(_ arguments: [String]) async throws -> (status: Int32, standardOutput: String, standardError: String) {
        try await UplinkBinary.run(arguments)
    }
}
