import Foundation
import Testing
import UplinkAgent
import UplinkConfig
import UplinkCore
import UplinkSources

/// Random remote documents assembled from fragments, each fragment labelled by hand with the rules it breaks; what
/// the validator and the policy accept is checked against the allow-list with oracles written independently of
/// them.
@Suite("remote documents: property")
struct RemoteDocumentPropertyTests {
    /// Rules a fragment breaks, as labelled here (not as the code under test sees it).
    enum Rule: Hashable {
        case environment, token, relativePath, alias, section, generator, type, tailPath, sysfsPath, journald, exec
        case interval, clash
    }

    struct Fragment {
        var yaml: String
        var breaks: Set<Rule> = []
    }

    /// One source item (a flow mapping on one line) named `name`.
    static func source(_ name: String, _ random: inout SplitMix64) -> Fragment {
        func pick<T>(_ options: [T]) -> T { options[Int(random.next() % UInt64(options.count))] }
        switch random.next() % 12 {
        case 0:
            return pick([
                Fragment(yaml: "{ name: \(name), type: cpu }"),
                Fragment(yaml: "{ name: \(name), type: cpu, interval: 5s, per_core: false }"),
                Fragment(yaml: "{ name: \(name), type: cpu, interval: 500ms }", breaks: [.interval]),
                Fragment(yaml: "{ name: \(name), type: cpu, interval: \"${INTERVAL}\" }", breaks: [.environment]),
                Fragment(yaml: "{ name: \(name), type: cpu, proc_root: /host/proc }"),
                Fragment(yaml: "{ name: \(name), type: cpu, proc_root: host/proc }", breaks: [.relativePath]),
            ])
        case 1:
            return pick([
                Fragment(yaml: "{ name: \(name), type: memory, tags: { team: app } }"),
                Fragment(yaml: "{ name: \(name), type: memory, tags: { token: abc } }", breaks: [.token]),
                Fragment(yaml: "{ name: \(name), type: memory, tags: { api_password: abc } }", breaks: [.token]),
                Fragment(yaml: "{ name: \(name), type: memory, tags: { home: \"${HOME}\" } }", breaks: [.environment]),
                Fragment(yaml: "{ name: \(name), type: memory, tags: { home: \"$${HOME}\" } }", breaks: [.environment]),
                Fragment(yaml: "&\(name) { name: \(name), type: memory }", breaks: [.alias]),
            ])
        case 2:
            return pick([
                Fragment(yaml: "{ name: \(name), type: network }", breaks: [.type]),
                Fragment(yaml: "{ name: \(name), type: generator, rate: 100000 }", breaks: [.generator]),
                Fragment(yaml: "{ name: \(name), type: disk, mount_points: [/] }", breaks: [.type]),
                Fragment(yaml: "{ name: \(name), type: disk, mount_points: [data] }", breaks: [.type, .relativePath]),
            ])
        case 3, 4:
            let paths = [
                ("\"/var/log/app/*.log\"", Set<Rule>()), ("\"/var/log/app/**\"", []), ("/var/log/app/a/b.log", []),
                ("\"/opt/vendor/logs/*.log\"", []), ("/opt/vendor/logs/x.log", []),
                ("\"/var/log/**\"", [.tailPath]), ("/etc/shadow", [.tailPath]), ("\"/opt/vendor/logs/*\"", [.tailPath]),
                ("\"/opt/vendor/**\"", [.tailPath]), ("app.log", [.relativePath, .tailPath]),
                ("/var/log/app/../../../etc/shadow", [.relativePath, .tailPath]),
            ]
            var breaks: Set<Rule> = []
            var chosen: [String] = []
            for _ in 0...(random.next() % 2) {
                let (path, rules) = pick(paths)
                chosen.append(path)
                breaks.formUnion(rules)
            }
            var yaml = "{ name: \(name), type: tail, paths: [\(chosen.joined(separator: ", "))]"
            switch random.next() % 5 {
            case 0: yaml += ", exclude: [\"*.gz\"]"
            case 1:
                yaml += ", exclude: [old/*.log]"
                breaks.insert(.relativePath)
            case 2:
                yaml += ", poll_interval: 100ms"
                breaks.insert(.interval)
            case 3: yaml += ", poll_interval: 2s, discovery_interval: 30s"
            default: break
            }
            return Fragment(yaml: yaml + " }", breaks: breaks)
        case 5:
            return pick([
                Fragment(yaml: "{ name: \(name), type: sysfs, path: \"/sys/bus/iio/devices/iio:device0/in_temp_input\" }"),
                Fragment(yaml: "{ name: \(name), type: sysfs, path: /sys/class/gpio/gpio4/value }", breaks: [.sysfsPath]),
                Fragment(yaml: "{ name: \(name), type: sysfs, path: sys/bus/iio/devices/x }", breaks: [.sysfsPath, .relativePath]),
            ])
        case 6:
            return pick([
                Fragment(yaml: "{ name: \(name), type: journald, units: [app-web] }"),
                Fragment(yaml: "{ name: \(name), type: journald, units: [app-web, app-db.service], priority: warning }"),
                Fragment(yaml: "{ name: \(name), type: journald }", breaks: [.journald]),
                Fragment(yaml: "{ name: \(name), type: journald, units: [sshd] }", breaks: [.journald]),
                Fragment(
                    yaml: "{ name: \(name), type: journald, units: [app-web], matches: [\"_SYSTEMD_UNIT=sshd.service\"] }",
                    breaks: [.journald]),
                Fragment(yaml: "{ name: \(name), type: journald, units: [app-web], matches: [\"_TRANSPORT=kernel\"] }"),
            ])
        case 7:
            return pick([
                Fragment(yaml: "{ name: \(name), type: exec, interval: 30s, command: [/usr/local/lib/uplink/probes/modbus-read, --unit, \"7\"] }"),
                Fragment(
                    yaml: "{ name: \(name), type: exec, interval: 30s, command: [/usr/local/lib/uplink/probes/modbus-read, --unit] }",
                    breaks: [.exec]),
                Fragment(yaml: "{ name: \(name), type: exec, interval: 30s, command: [sh, -c, id] }", breaks: [.exec, .relativePath]),
                Fragment(yaml: "{ name: \(name), type: exec, interval: 30s, command: [/bin/cat, /etc/shadow] }", breaks: [.exec]),
            ])
        case 8:
            return Fragment(yaml: "{ name: cpu, type: cpu }", breaks: [.clash])
        default:
            return Fragment(yaml: "{ name: \(name), type: memory }")
        }
    }

    /// Something beside the sources list, or nothing.
    static func extra(_ random: inout SplitMix64) -> Fragment {
        switch random.next() % 10 {
        case 0: return Fragment(yaml: "uplink:\n  url: http://evil.test\n", breaks: [.section])
        case 1: return Fragment(yaml: "agent: { state_dir: /tmp }\n", breaks: [.section])
        case 2: return Fragment(yaml: "remote_config: { enabled: false }\n", breaks: [.section])
        case 3: return Fragment(yaml: "# a comment mentioning ${HOME}\n", breaks: [.environment])
        case 4: return Fragment(yaml: "# a plain comment\n")
        default: return Fragment(yaml: "")
        }
    }

    @Test("every accepted document satisfies the allow-list and holds no ${, token or relative path")
    func acceptedDocumentsFitTheAllowList() throws {
        let fixture = try RemoteFixture()
        var random = SplitMix64(seed: 0x5eed_2026)
        var accepted = 0
        var refusedByRule: [Rule: Int] = [:]
        for round in 0..<400 {
            var breaks: Set<Rule> = []
            let count = Int(random.next() % 7)
            var items: [String] = []
            for index in 0..<count {
                let fragment = Self.source("r\(round)-\(index)", &random)
                items.append("  - " + fragment.yaml)
                breaks.formUnion(fragment.breaks)
            }
            let extra = Self.extra(&random)
            breaks.formUnion(extra.breaks)
            let extraFirst = random.next() % 2 == 0
            let text = (extraFirst ? extra.yaml : "") + "sources:\n" + items.joined(separator: "\n") + "\n"
                + (extraFirst ? "" : extra.yaml)
            let tooMany = count > fixture.local.remoteConfig.allow.maxSources
            let result = fixture.merge(text)
            if result.issues.isEmpty {
                accepted += 1
                let file = try result.get()
                // Completeness of the labels: nothing labelled as broken got through.
                #expect(breaks.isEmpty && !tooMany && count > 0, "accepted despite \(breaks): \(text)")
                try checkOracles(text: text, remote: Array(file.sources.dropFirst(fixture.local.sources.count)))
            } else {
                // Nothing clean is refused.
                #expect(!breaks.isEmpty || tooMany || count == 0, "refused without a broken rule: \(text)\n\(result.issues)")
                for rule in breaks { refusedByRule[rule, default: 0] += 1 }
            }
        }
        // Not vacuous: many documents were accepted, and every rule was exercised.
        #expect(accepted >= 20, "only \(accepted) accepted")
        #expect(Set(refusedByRule.keys) == [
            .environment, .token, .relativePath, .alias, .section, .generator, .type, .tailPath, .sysfsPath, .journald,
            .exec, .interval, .clash,
        ])
    }

    /// Checks an accepted document and its sources with oracles of their own.
    private func checkOracles(text: String, remote: [AgentConfiguration.NamedSource]) throws {
        #expect(!text.contains("${"))
        let document = ConfigDocument.parse(bytes: Array(text.utf8), file: "oracle", options: .untrusted)
        var keys: [String] = []
        func collect(_ node: ConfigNode) {
            for entry in node.entries ?? [] {
                keys.append(entry.name)
                collect(entry.value)
            }
            for item in node.items ?? [] { collect(item) }
        }
        if let root = document.root { collect(root) }
        #expect(!keys.contains { $0.lowercased().contains("token") || $0.lowercased().contains("password") })
        #expect(Set(keys.filter { ["uplink", "agent", "buffer", "collector", "remote_config"].contains($0) }).isEmpty)
        let allowedTypes: Set<String> = ["cpu", "memory", "tail", "sysfs", "journald", "exec"]
        for source in remote {
            #expect(allowedTypes.contains(source.config.kind.typeName))
            #expect(source.name != "cpu")
            if let cpu = source.config.settings(as: CPUConfig.self) {
                #expect(cpu.interval >= .seconds(1))
                #expect(cpu.procRoot.hasPrefix("/"))
            }
            if let tail = source.config.settings(as: TailConfig.self) {
                for path in tail.paths {
                    let underApp = path.hasPrefix("/var/log/app/")
                    let vendorLog = path.hasPrefix("/opt/vendor/logs/") && !path.dropFirst(17).contains("/") && path.hasSuffix(".log")
                    #expect((underApp || vendorLog) && !path.contains("/../"), "\(path)")
                }
                #expect(tail.pollInterval >= .seconds(1) || tail.pollInterval == TailConfig().pollInterval)
                #expect(tail.allowedRealPaths == ["/var/log/app/**", "/opt/vendor/logs/*.log"])
            }
            if let sysfs = source.config.settings(as: SysfsConfig.self) {
                #expect(sysfs.path.hasPrefix("/sys/bus/iio/devices/"))
            }
            if let journald = source.config.settings(as: JournaldConfig.self) {
                #expect(!journald.units.isEmpty)
                let units = journald.units + journald.matches.filter { $0.field == "_SYSTEMD_UNIT" }.map(\.value)
                #expect(units.allSatisfy { JournaldConfig.unitName($0).hasPrefix("app-") && JournaldConfig.unitName($0).hasSuffix(".service") })
            }
            if let exec = source.config.settings(as: ExecConfig.self) {
                #expect(exec.command.count == 3 && exec.command[0] == "/usr/local/lib/uplink/probes/modbus-read" && exec.command[1] == "--unit")
            }
        }
    }
}
