import Foundation
import Testing
import UplinkAgent
import UplinkCore
import UplinkSources
import UplinkTestSupport

/// The tailer following thousands of files that one glob matches (`app.log*` and its rotated files): quiet files are
/// parked (their descriptors closed), a write to one of them is read once, and renaming them all (logrotate shifting
/// `app.log.N` to `app.log.N+1`) reads nothing again.
@Suite("Tail many files", .serialized, .timeLimit(.minutes(4)))
struct TailManyFilesTests {
    /// Descriptors of this process open on files under `directory` (other tests run in this process too).
    static func openDescriptors(under directory: String) -> Int {
        let entries = (try? FileManager.default.contentsOfDirectory(atPath: "/proc/self/fd")) ?? []
        var count = 0
        for entry in entries {
            var target = [CChar](repeating: 0, count: 4096)
            let length = readlink("/proc/self/fd/" + entry, &target, target.count - 1)
            guard length > 0 else { continue }
            let path = String(decoding: target[0..<length].map { UInt8(bitPattern: $0) }, as: UTF8.self)
            if path.hasPrefix(directory + "/") { count += 1 }
        }
        return count
    }

    @Test(
        "2,000 matched files: quiet ones are closed, a write to one is read once, renaming them all reads nothing again",
        arguments: [TailWatchMethod.auto, .poll])
    func manyFiles(watch: TailWatchMethod) async throws {
        try await CPUGate.exclusive {
            let root = try Harness.temporaryDirectory("tail-many")
            defer { try? FileManager.default.removeItem(atPath: root) }
            func file(_ name: String) -> String { root + "/logs/" + name }
            try FileManager.default.createDirectory(atPath: root + "/logs", withIntermediateDirectories: true)
            func writeFile(_ path: String, _ text: String) {
                let descriptor = TailEndToEndTests.openForAppend(path)
                TailEndToEndTests.append(descriptor, Array(text.utf8))
                close(descriptor)
            }
            let count = 2_000
            // Three lines of about 100 bytes each: longer than the 256-byte fingerprint, distinct per file.
            for index in 1...count {
                var text = ""
                for line in 0..<3 { text += "file \(index) line \(line) " + String(repeating: "r", count: 80) + "\n" }
                writeFile(file("app.log.\(index)"), text)
            }
            writeFile(file("app.log"), "live 0\n")
            var config = TailConfig()
            config.paths = [file("app.log*")]
            config.startAt = .beginning
            config.watch = watch
            config.pollInterval = .milliseconds(100)
            config.checkpointInterval = .milliseconds(200)
            // A safety net only: inotify's events (or polling) must do the work.
            config.discoveryInterval = .seconds(30)
            let collector = try await InProcessCollector(name: "tail-many")
            let agent = RunningAgent(
                url: collector.url, sources: [.init(name: "many", config: SourceConfig(config))], stateDirectory: root + "/state")
            func stored() -> Int { collector.recordsStored }
            func records() throws -> [Record] { try Harness.storedRecords(in: collector.dataDirectory).map(\.record) }
            let initial = count * 3 + 1
            #expect(await eventually(timeout: .seconds(90)) { stored() >= initial }, "\(stored()) of \(initial) lines")

            // Read to their end and quiet: parked, their descriptors closed (the opener and the engine hold none).
            #expect(
                await eventually(timeout: .seconds(60)) { Self.openDescriptors(under: (root + "/logs")) <= 16 },
                "\(Self.openDescriptors(under: (root + "/logs"))) descriptors open on \(count + 1) files")
            let parkedDescriptors = Self.openDescriptors(under: root + "/logs")

            // Writes to 20 parked files: each is opened again and only the new line is read.
            let written = Array(stride(from: 7, through: count, by: 100))
            for index in written {
                writeFile(file("app.log.\(index)"), "late \(index)\n")
            }
            #expect(await eventually(timeout: .seconds(60)) { stored() >= initial + written.count })

            // Rotation as logrotate's `create` does it: every rotated file shifted by one, app.log to app.log.1, a new
            // app.log. Files are renamed, not changed: nothing is read again.
            // First the 20 written files are parked again (quiet for the tailer's 5 s), their descriptors closed.
            #expect(
                await eventually(timeout: .seconds(60)) {
                    Self.openDescriptors(under: root + "/logs") <= parkedDescriptors
                }, "\(Self.openDescriptors(under: root + "/logs")) descriptors open, \(parkedDescriptors) before the writes")
            for index in stride(from: count, through: 1, by: -1) {
                #expect(rename(file("app.log.\(index)"), file("app.log.\(index + 1)")) == 0)
            }
            #expect(rename(file("app.log"), file("app.log.1")) == 0)
            writeFile(file("app.log"), "after rotation\n")
            #expect(await eventually(timeout: .seconds(60)) { stored() >= initial + written.count + 1 })
            // Anything read again would arrive in this time.
            try await Task.sleep(for: .seconds(2))
            // A write to a shifted, parked file is read under its new name.
            writeFile(file("app.log.1001"), "after shift\n")
            #expect(await eventually(timeout: .seconds(60)) { stored() >= initial + written.count + 2 })
            try await Task.sleep(for: .milliseconds(500))
            try await agent.stop()
            try await collector.stop()

            let lines = try records().compactMap { record -> LogLine? in
                guard case .log(let line) = record.payload else { return nil }
                return line
            }
            let got = lines.map(\.message)
            #expect(got.count == initial + written.count + 2, "\(got.count - initial - written.count - 2) lines more than written")
            #expect(Set(got).count == got.count, "a line arrived twice")
            let late = lines.filter { $0.message.hasPrefix("late ") }
            #expect(Set(late.map(\.message)) == Set(written.map { "late \($0)" }))
            #expect(late.allSatisfy { line in
                line.fields.first { $0.key == "path" }?.value == file("app.log.\(line.message.dropFirst(5))")
            })
            #expect(lines.first { $0.message == "after shift" }?.fields.first { $0.key == "path" }?.value == file("app.log.1001"))
        }
    }
}
