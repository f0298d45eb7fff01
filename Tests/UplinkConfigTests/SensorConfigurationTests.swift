import Testing
import UplinkAgent
import UplinkConfig
import UplinkCore
import UplinkSources

/// The sensor kinds' keys: every key decoded, defaults, and the problems reported.
@Suite("sensor sources")
struct SensorConfigurationTests {
    private func sources(_ yaml: String) throws -> [AgentConfiguration.NamedSource] {
        try decode("uplink: { url: embedded }\nsources:\n" + yaml).get().sources
    }

    private func problems(_ yaml: String) -> [String] {
        issues("uplink: { url: embedded }\nsources:\n" + yaml)
    }

    @Test("defaults of every sensor kind")
    func defaults() throws {
        let decoded = try sources("""
              - { name: a, type: load }
              - { name: b, type: uptime }
              - { name: c, type: network }
              - { name: d, type: diskio }
              - { name: e, type: disk }
              - { name: f, type: thermal }
              - { name: g, type: hwmon }
              - { name: h, type: power }
              - { name: i, type: sysfs, path: /sys/x }
              - { name: j, type: exec, command: [true] }
            """)
        #expect(decoded.map(\.config) == [
            SourceConfig(LoadConfig()), SourceConfig(UptimeConfig()), SourceConfig(NetworkConfig()),
            SourceConfig(DiskIOConfig()), SourceConfig(DiskConfig()), SourceConfig(ThermalConfig()),
            SourceConfig(HwmonConfig()), SourceConfig(PowerConfig()), SourceConfig(SysfsConfig(path: "/sys/x")),
            SourceConfig(ExecConfig(command: ["true"])),
        ])
    }

    @Test("every key of every sensor kind")
    func allKeys() throws {
        let decoded = try sources("""
              - { name: a, type: load, interval: 5s, jitter: 1s, tags: { site: lab, rack: "3" }, proc_root: /host/proc }
              - { name: b, type: uptime, interval: 1m, jitter: 0s, tags: {}, proc_root: /host/proc }
              - { name: c, type: network, interval: 2s, proc_root: /h, include: [eth*, wlan0], exclude: [] }
              - { name: d, type: diskio, interval: 2s, proc_root: /h, devices: [sda, nvme*] }
              - { name: e, type: disk, interval: 1m, mount_points: [/, /data], tags: { tier: hot } }
              - { name: f, type: thermal, sys_root: /host/sys, jitter: 500ms }
              - { name: g, type: hwmon, sys_root: /host/sys }
              - { name: h, type: power, sys_root: /host/sys, interval: 30s }
              - name: i
                type: sysfs
                path: /sys/bus/iio/devices/iio:device0/in_temp_raw
                scale: 0.001
                offset: -2.5
                metric: enclosure.temperature
                unit: celsius
              - name: j
                type: exec
                command: [/usr/bin/sensor, --json]
                timeout: 2s
                format: json
                metric: sensor.value
                prefix: sensor
                unit: ""
            """)
        let lab = [Tag("site", "lab"), Tag("rack", "3")]
        #expect(decoded.map(\.config) == [
            SourceConfig(LoadConfig(interval: .seconds(5), jitter: .seconds(1), tags: lab, procRoot: "/host/proc")),
            SourceConfig(UptimeConfig(interval: .seconds(60), jitter: .zero, tags: [], procRoot: "/host/proc")),
            SourceConfig(NetworkConfig(interval: .seconds(2), procRoot: "/h", include: ["eth*", "wlan0"], exclude: [])),
            SourceConfig(DiskIOConfig(interval: .seconds(2), procRoot: "/h", devices: ["sda", "nvme*"])),
            SourceConfig(DiskConfig(interval: .seconds(60), tags: [Tag("tier", "hot")], mountPoints: ["/", "/data"])),
            SourceConfig(ThermalConfig(jitter: .milliseconds(500), sysRoot: "/host/sys")),
            SourceConfig(HwmonConfig(sysRoot: "/host/sys")),
            SourceConfig(PowerConfig(interval: .seconds(30), sysRoot: "/host/sys")),
            SourceConfig(SysfsConfig(
                path: "/sys/bus/iio/devices/iio:device0/in_temp_raw", scale: 0.001, offset: -2.5, metric: "enclosure.temperature",
                unit: "celsius")),
            SourceConfig(ExecConfig(
                command: ["/usr/bin/sensor", "--json"], timeout: .seconds(2), format: .json, metric: "sensor.value", prefix: "sensor",
                unit: "")),
        ])
    }

    @Test("problems are reported with their position")
    func problemsReported() {
        #expect(problems("  - { name: a, type: load, jitter: 10s }\n") == [
            "test.yaml:3:36: sources[0].jitter: jitter must be shorter than the interval (hint: e.g. 'jitter: 1s' with 'interval: 10s')",
        ])
        #expect(problems("  - { name: a, type: sysfs }\n").count == 1)
        #expect(problems("  - { name: a, type: sysfs, path: /x, unit: kelvin }\n").first?.contains("unknown unit 'kelvin'") == true)
        #expect(problems("  - { name: a, type: sysfs, path: /x, metric: Bad-Name }\n").first?.contains("invalid metric name 'Bad-Name'") == true)
        #expect(problems("  - { name: a, type: exec }\n").count == 1)
        #expect(problems("  - { name: a, type: exec, command: [] }\n").first?.contains("the command must not be empty") == true)
        #expect(problems("  - { name: a, type: exec, command: [x], format: xml }\n").count == 1)
        #expect(problems("  - { name: a, type: exec, command: [x], timeout: 0s }\n").count == 1)
        #expect(problems("  - { name: a, type: disk, mount_points: [] }\n").first?.contains("at least one mount point") == true)
        #expect(problems("  - { name: a, type: network, include: eth0 }\n").count == 1)
        #expect(problems("  - { name: a, type: thermal, tags: [a, b] }\n").count == 1)
        #expect(problems("  - { name: a, type: thermal, tags: { a: [1] } }\n").count == 1)
        #expect(problems("  - { name: a, type: thermal, proc_root: /p }\n").first?.contains("unknown key 'proc_root'") == true)
        #expect(problems("  - { name: a, type: load, sys_root: /s }\n").first?.contains("unknown key 'sys_root'") == true)
    }
}
