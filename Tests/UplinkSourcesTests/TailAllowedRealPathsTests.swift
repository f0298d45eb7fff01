import Foundation
import Logging
import Testing
import UplinkCore
import UplinkTestSupport

@testable import UplinkSources

/// `TailConfig.allowedRealPaths`, which remote `tail` sources get: a file is opened only when its real path (symbolic
/// links resolved) matches an allowed pattern.
@Suite("Tail source: allowed real paths")
struct TailAllowedRealPathsTests {
    @Test("a symbolic link in an allowed directory pointing outside it is not opened, but logged and counted",
          arguments: [TailWatchMethod.poll, .auto])
    func symlinkOutside(watch: TailWatchMethod) async throws {
        let allowed = try TailTemporaryDirectory()
        let outside = try TailTemporaryDirectory()
        defer {
            allowed.remove()
            outside.remove()
        }
        writeFile(outside.file("secret.log"), "secret line\n")
        try FileManager.default.createSymbolicLink(atPath: allowed.file("a-evil.log"), withDestinationPath: outside.file("secret.log"))
        // A link to a file inside the allowed directory is fine.
        try FileManager.default.createDirectory(atPath: allowed.file("real"), withIntermediateDirectories: true)
        writeFile(allowed.file("real/target.txt"), "linked line\n")
        try FileManager.default.createSymbolicLink(atPath: allowed.file("b-link.log"), withDestinationPath: allowed.file("real/target.txt"))
        writeFile(allowed.file("c-good.log"), "good line\n")

        var config = tailTestConfig([allowed.path + "/*.log"], watch: watch)
        config.allowedRealPaths = [allowed.path + "/**"]
        let sink = RecordingSink()
        let logs = LogCapture()
        let health = SourceHealth()
        let tail = RunningTail(config, sink: sink, logger: logs.logger, health: health)
        // Discovery follows the files in name order: the link outside is refused before the others are read.
        #expect(await eventually { sink.count >= 2 })
        #expect(await eventually { health.snapshot.state == .failing })
        #expect(health.snapshot.reason?.contains("a-evil.log") == true, "a refused file makes the source fail its probation")
        #expect(await eventually { logs.warnings.contains { $0.message.contains("a-evil.log") } })
        try await tail.stop()
        #expect(Set(messages(sink.records)) == ["linked line", "good line"])
        let warnings = logs.warnings.filter { $0.message.contains("outside the allowed paths") }
        #expect(warnings.count == 1)
        #expect(warnings.first?.message.contains(outside.file("secret.log")) == true)
        #expect(logs.all.contains { $0.message == "tail source stopped" && $0.metadata["refused_outside_allowed_paths"] == "1" })
    }

    @Test("without allowedRealPaths the same link is followed (local sources are not restricted)")
    func unrestricted() async throws {
        let allowed = try TailTemporaryDirectory()
        let outside = try TailTemporaryDirectory()
        defer {
            allowed.remove()
            outside.remove()
        }
        writeFile(outside.file("other.log"), "other line\n")
        try FileManager.default.createSymbolicLink(atPath: allowed.file("link.log"), withDestinationPath: outside.file("other.log"))
        let sink = RecordingSink()
        let tail = RunningTail(tailTestConfig([allowed.path + "/*.log"]), sink: sink)
        #expect(await eventually { sink.count >= 1 })
        try await tail.stop()
        #expect(messages(sink.records) == ["other line"])
    }

    @Test("a link swapped in at a followed path later is refused too")
    func replacedByLink() async throws {
        let allowed = try TailTemporaryDirectory()
        let outside = try TailTemporaryDirectory()
        defer {
            allowed.remove()
            outside.remove()
        }
        writeFile(outside.file("secret.log"), "secret line\n")
        let path = allowed.file("app.log")
        writeFile(path, "first\n")
        var config = tailTestConfig([path])
        config.allowedRealPaths = [allowed.path + "/*.log"]
        let sink = RecordingSink()
        let logs = LogCapture()
        let tail = RunningTail(config, sink: sink, logger: logs.logger)
        #expect(await eventually { sink.count >= 1 })
        // Rotation by rename, and a link to the secret put in place of the file.
        try FileManager.default.moveItem(atPath: path, toPath: allowed.file("app.log.1"))
        try FileManager.default.createSymbolicLink(atPath: path, withDestinationPath: outside.file("secret.log"))
        #expect(await eventually { logs.warnings.contains { $0.message.contains("outside the allowed paths") } })
        try await tail.stop()
        #expect(messages(sink.records) == ["first"])
    }
}

@Suite("PathGlob")
struct PathGlobTests {
    @Test("containment of patterns", arguments: [
        ("/var/log/app/**", "/var/log/app/*.log", true),
        ("/var/log/app/**", "/var/log/app/x/**", true),
        ("/var/log/app/**", "/var/log/app/**", true),
        ("/var/log/app/**", "/var/log/app/a.log", true),
        ("/var/log/app/**", "/var/log/**", false),
        ("/var/log/app/**", "/var/log/*/a.log", false),
        ("/var/log/app/**", "/etc/shadow", false),
        ("/var/log/app/*.log", "/var/log/app/app-*.log", true),
        ("/var/log/app/*.log", "/var/log/app/*", false),
        ("/var/log/app/*.log", "/var/log/app/?.log", true),
        ("/var/log/app/*.log", "/var/log/app/x/a.log", false),
        ("/var/log/app/a?.log", "/var/log/app/a[0-9].log", true),
        ("/var/log/app/a[0-9].log", "/var/log/app/a5.log", true),
        ("/var/log/app/a[0-9].log", "/var/log/app/a?.log", false),
        ("/opt/*/logs/*.log", "/opt/vendor/logs/a.log", true),
        ("/opt/*/logs/*.log", "/opt/**/logs/a.log", false),
        ("/sys/bus/iio/devices/**", "/sys/bus/iio/devices/iio:device0/in_temp_input", true),
        ("/var/log/app/**", "var/log/app/a.log", false),
    ])
    func containment(outer: String, inner: String, contained: Bool) {
        #expect(PathGlob(outer).contains(PathGlob(inner)) == contained, "\(outer) ⊇ \(inner)")
    }

    @Test("whatever a contained pattern matches, the outer one matches (sampled)")
    func containmentIsSound() {
        let patterns = [
            "/var/log/app/**", "/var/log/app/*.log", "/var/log/app/a?.log", "/var/log/*/a.log", "/var/log/**",
            "/var/log/app/x/**", "/var/log/app/[ab]*.log", "/var/log/app/*", "/var/*/app/*.log",
        ]
        let paths = [
            "/var/log/app/a.log", "/var/log/app/ab.log", "/var/log/app/x/y.log", "/var/log/app/x/y/z", "/var/log/b/a.log",
            "/var/log/app/b.txt", "/var/log/app/.hidden.log", "/var/lib/app/a.log", "/var/log/a.log",
        ]
        for outer in patterns {
            for inner in patterns where PathGlob(outer).contains(PathGlob(inner)) {
                for path in paths where PathGlob(inner).matches(path) {
                    #expect(PathGlob(outer).matches(path), "\(outer) ⊇ \(inner) but misses \(path)")
                }
            }
        }
    }

    @Test("component patterns (unit names)")
    func components() {
        #expect(PathGlob.matchesComponent(pattern: "app-*.service", name: "app-web.service"))
        #expect(!PathGlob.matchesComponent(pattern: "app-*.service", name: "sshd.service"))
    }
}

@Suite("Tail source: health")
struct TailHealthTests {
    @Test("idle while nothing matches, healthy once every matched file is open")
    func idleThenHealthy() async throws {
        let directory = try TailTemporaryDirectory()
        defer { directory.remove() }
        let health = SourceHealth()
        let sink = RecordingSink()
        let tail = RunningTail(tailTestConfig([directory.path + "/*.log"]), sink: sink, health: health)
        #expect(await eventually { health.snapshot.state == .idle })
        #expect(health.snapshot.reason?.contains("no file matches") == true)
        writeFile(directory.file("app.log"), "hello\n")
        #expect(await eventually { sink.count >= 1 })
        #expect(await eventually { health.snapshot.state == .healthy })
        try await tail.stop()
    }
}
