import Testing
import UplinkAgent
import UplinkConfig
import UplinkCore
import UplinkSources

/// `type: tail`: every key decoded, defaults, and each problem reported at its position.
@Suite("tail source configuration")
struct TailConfigurationTests {
    private func tail(_ yaml: String) throws -> TailConfig? {
        let sources = try decode("uplink: { url: embedded }\nsources:\n" + yaml).get().sources
        return sources.first?.config.settings(as: TailConfig.self)
    }

    private func problems(_ yaml: String) -> [String] {
        issues("uplink: { url: embedded }\nsources:\n" + yaml)
    }

    @Test func defaults() throws {
        let config = try #require(try tail("  - { name: app, type: tail, paths: [/var/log/app.log] }\n"))
        var expected = TailConfig()
        expected.paths = ["/var/log/app.log"]
        #expect(config == expected)
        #expect(config.startAt == .end)
        #expect(config.watch == .auto)
        #expect(config.pollInterval == .milliseconds(250))
        #expect(config.discoveryInterval == .seconds(10))
        #expect(config.maxLineBytes == 65536)
        #expect(config.partialLineTimeout == .seconds(1))
        #expect(config.multilineStartPattern == nil)
        #expect(config.multilineTimeout == .seconds(1))
        #expect(config.checkpointInterval == .seconds(1))
    }

    @Test func everyKey() throws {
        let config = try #require(try tail("""
              - name: app
                type: tail
                paths: ["/var/log/app/**/*.log", relative/*.log]
                exclude: ["*.gz"]
                start_at: beginning
                watch: poll
                poll_interval: 100ms
                discovery_interval: 30s
                max_line_bytes: 1MiB
                partial_line_timeout: 2s
                checkpoint_interval: 5s
                multiline: { start_pattern: '^\\d{4}-', timeout: 3s }

            """))
        #expect(config.paths.first == "/var/log/app/**/*.log")
        // Relative patterns are made absolute against the working directory.
        #expect(config.paths.last?.hasPrefix("/") == true)
        #expect(config.paths.last?.hasSuffix("/relative/*.log") == true)
        #expect(config.exclude.count == 1 && config.exclude[0].hasSuffix("/*.gz"))
        #expect(config.startAt == .beginning)
        #expect(config.watch == .poll)
        #expect(config.pollInterval == .milliseconds(100))
        #expect(config.discoveryInterval == .seconds(30))
        #expect(config.maxLineBytes == 1 << 20)
        #expect(config.partialLineTimeout == .seconds(2))
        #expect(config.checkpointInterval == .seconds(5))
        #expect(config.multilineStartPattern == #"^\d{4}-"#)
        #expect(config.multilineTimeout == .seconds(3))
    }

    @Test func problemsAreReportedWithTheirPosition() {
        #expect(problems("  - { name: app, type: tail }\n") == [
            "test.yaml:3:5: sources[0].paths: missing required key 'paths' (hint: e.g. 'paths: [/var/log/app/*.log]')",
        ])
        #expect(problems("  - { name: app, type: tail, paths: [] }\n") == [
            "test.yaml:3:37: sources[0].paths: at least one path is required (hint: glob patterns such as /var/log/*.log)",
        ])
        #expect(problems("  - { name: app, type: tail, paths: [/l], start_at: middle }\n").first?.hasPrefix(
            "test.yaml:3:53: sources[0].start_at: ") == true)
        #expect(problems("  - { name: app, type: tail, paths: [/l], max_line_bytes: 0 }\n").first?.hasPrefix(
            "test.yaml:3:59: sources[0].max_line_bytes: ") == true)
        #expect(problems("  - { name: app, type: tail, paths: [/l], poll_interval: 0s }\n").count == 1)
        let badRegex = problems("  - { name: app, type: tail, paths: [/l], multiline: { start_pattern: '(unclosed' } }\n")
        #expect(badRegex.count == 1)
        #expect(badRegex.first?.hasPrefix("test.yaml:3:71: sources[0].multiline.start_pattern: invalid regular expression") == true)
        #expect(problems("  - { name: app, type: tail, paths: [/l], multiline: { timeout: 1s } }\n").first?.contains(
            "missing required key 'start_pattern'") == true)
        #expect(problems("  - { name: app, type: tail, paths: [/l], multiline: { start: x } }\n").contains {
            $0.contains("unknown key 'start'") })
        #expect(problems("  - { name: app, type: tail, path: /l }\n").contains { $0.contains("unknown key 'path'") })
    }
}
