import Testing
import UplinkAgent
import UplinkConfig
import UplinkCore
import UplinkSources

/// `type: journald`: every key decoded, defaults, and each problem reported at its position.
@Suite("journald source configuration")
struct JournaldConfigurationTests {
    private func journald(_ yaml: String) throws -> JournaldConfig? {
        let sources = try decode("uplink: { url: embedded }\nsources:\n" + yaml).get().sources
        return sources.first?.config.settings(as: JournaldConfig.self)
    }

    private func problems(_ yaml: String) -> [String] {
        issues("uplink: { url: embedded }\nsources:\n" + yaml)
    }

    @Test func defaults() throws {
        let config = try #require(try journald("  - { name: journal, type: journald }\n"))
        #expect(config == JournaldConfig())
        #expect(config.units.isEmpty && config.matches.isEmpty)
        #expect(config.priority == nil)
        #expect(config.since == .now)
        #expect(config.directory == nil)
        #expect(config.maxLineBytes == 65536)
        #expect(config.checkpointInterval == .seconds(1))
    }

    @Test func everyKey() throws {
        let config = try #require(try journald("""
              - name: journal
                type: journald
                units: [ssh, cron.service]
                matches: ["_TRANSPORT=kernel", "SYSLOG_IDENTIFIER=a=b"]
                priority: err
                since: 2026-11-20T08:00:00Z
                directory: relative/journal
                max_line_bytes: 4KiB
                checkpoint_interval: 5s

            """))
        #expect(config.units == ["ssh", "cron.service"])
        #expect(config.matches == [
            JournaldMatch(field: "_TRANSPORT", value: "kernel"), JournaldMatch(field: "SYSLOG_IDENTIFIER", value: "a=b"),
        ])
        #expect(config.priority == .err)
        #expect(config.since == .time(microseconds: 1_795_161_600_000_000))
        #expect(config.directory?.hasPrefix("/") == true)
        #expect(config.directory?.hasSuffix("/relative/journal") == true)
        #expect(config.maxLineBytes == 4096)
        #expect(config.checkpointInterval == .seconds(5))
        #expect(try journald("  - { name: j, type: journald, priority: 4, since: 90m }\n")?.priority == .warning)
        #expect(try journald("  - { name: j, type: journald, since: 90m }\n")?.since == .ago(.seconds(5400)))
        #expect(try journald("  - { name: j, type: journald, since: beginning }\n")?.since == .beginning)
    }

    @Test func problemsAreReportedWithTheirPosition() {
        #expect(problems("  - { name: j, type: journald, priority: loud }\n") == [
            "test.yaml:3:42: sources[0].priority: unknown priority 'loud' (hint: one of emerg, alert, crit, err, warning, notice, info, debug (or 0 to 7))",
        ])
        #expect(problems("  - { name: j, type: journald, matches: [kernel] }\n") == [
            "test.yaml:3:42: sources[0].matches[0]: invalid match: 'kernel' is not FIELD=value (hint: FIELD=value with an upper-case journal field, e.g. '_TRANSPORT=kernel')",
        ])
        #expect(problems("  - { name: j, type: journald, matches: [\"x=1\", \"_OK=1\", \"9A=1\"] }\n").count == 2)
        #expect(problems("  - { name: j, type: journald, since: yesterday }\n").first?.hasPrefix(
            "test.yaml:3:39: sources[0].since: invalid since 'yesterday' (hint: 'now', 'beginning', an RFC 3339 time") == true)
        #expect(problems("  - { name: j, type: journald, since: 2026-02-30T00:00:00Z }\n").count == 1)
        #expect(problems("  - { name: j, type: journald, units: [\"a b\"] }\n").first?.contains("invalid unit name 'a b'") == true)
        #expect(problems("  - { name: j, type: journald, max_line_bytes: 0 }\n").first?.hasPrefix(
            "test.yaml:3:48: sources[0].max_line_bytes: ") == true)
        #expect(problems("  - { name: j, type: journald, checkpoint_interval: 0s }\n").count == 1)
        #expect(problems("  - { name: j, type: journald, unit: ssh }\n").contains { $0.contains("unknown key 'unit'") && $0.contains("units") })
    }
}
