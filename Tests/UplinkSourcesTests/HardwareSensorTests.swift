import Foundation
import Testing
import UplinkTestSupport
import UplinkCore

@testable import UplinkSources

@Suite("thermal, hwmon and power")
struct HardwareSensorTests {
    static let start: Int64 = 1_731_924_123_250_000_000

    private func sysRoot(_ machine: String) -> String { Fixtures.url("\(machine)/sys").path }

    private func collect(_ source: some Source) async throws -> (records: [Record], logs: LogCapture) {
        let sink = RecordingSink()
        let logs = LogCapture()
        try await run(source, sink: sink, logger: logs.logger)
        return (sink.records, logs)
    }

    private func summary(_ records: [Record]) -> [String] {
        records.map { record in
            let metric = record.metric!
            return "\(metric.name){\(metric.tags.map { "\($0.key)=\($0.value)" }.joined(separator: ","))} \(metric.value) \(metric.unit)"
        }
    }

    @Test("thermal zones of the ARM board, with zone and type tags")
    func thermalARM() async throws {
        let source = ThermalSource(
            name: "t", config: ThermalConfig(tags: [Tag("rack", "3")], sysRoot: sysRoot("arm-board-4core")),
            clock: FakeTickClock(now: Self.start, maximumSleeps: 1))
        let (records, logs) = try await collect(source)
        #expect(summary(records) == [
            "thermal.temperature{zone=0,type=cpu-thermal,rack=3} 48.312 celsius",
            "thermal.temperature{zone=1,type=gpu-thermal,rack=3} 47.2 celsius",
        ])
        #expect(records.allSatisfy { $0.timestamp == 1_731_924_130_000_000_000 })
        #expect(logs.warnings.isEmpty)
    }

    @Test("thermal zones of the laptop")
    func thermalLaptop() async throws {
        let (records, _) = try await collect(ThermalSource(
            name: "t", config: ThermalConfig(sysRoot: sysRoot("x86-laptop-8core")), clock: FakeTickClock(now: Self.start, maximumSleeps: 2)))
        #expect(summary(records).prefix(2) == [
            "thermal.temperature{zone=0,type=acpitz} 45.0 celsius",
            "thermal.temperature{zone=1,type=x86_pkg_temp} 52.0 celsius",
        ])
        #expect(records.count == 4)
    }

    @Test("hwmon chips of the laptop: temperatures, fans, voltages, power; labels; the old device/ layout")
    func hwmonLaptop() async throws {
        let (records, logs) = try await collect(HwmonSource(
            name: "h", config: HwmonConfig(sysRoot: sysRoot("x86-laptop-8core")), clock: FakeTickClock(now: Self.start, maximumSleeps: 1)))
        #expect(summary(records) == [
            "hwmon.temperature{chip=acpitz,sensor=temp1} 45.0 celsius",
            "hwmon.temperature{chip=coretemp,sensor=Package id 0} 52.0 celsius",
            "hwmon.temperature{chip=coretemp,sensor=Core 0} 49.0 celsius",
            "hwmon.temperature{chip=coretemp,sensor=Core 8} 51.5 celsius",
            "hwmon.temperature{chip=thinkpad,sensor=temp1} -5.0 celsius",
            "hwmon.fan_speed{chip=thinkpad,sensor=fan1} 2900.0 rpm",
            "hwmon.voltage{chip=nct6798,sensor=Vcore} 1.192 volts",
            "hwmon.power{chip=nct6798,sensor=power1} 15.25 watts",
            "hwmon.fan_speed{chip=it87,sensor=fan1} 1200.0 rpm",
            // Two chips named nvme: told apart by their device.
            "hwmon.temperature{chip=nvme-nvme0,sensor=Composite} 38.85 celsius",
            "hwmon.temperature{chip=nvme-nvme1,sensor=Composite} 41.85 celsius",
        ])
        #expect(logs.warnings.isEmpty)
    }

    @Test("power supplies of the laptop: battery with status, mains online; other types left out")
    func powerLaptop() async throws {
        let (records, logs) = try await collect(PowerSource(
            name: "p", config: PowerConfig(sysRoot: sysRoot("x86-laptop-8core")), clock: FakeTickClock(now: Self.start, maximumSleeps: 1)))
        #expect(summary(records) == [
            "power.online{supply=AC,type=Mains} 0.0 count",
            "power.capacity{supply=BAT0,type=Battery,status=Discharging} 87.0 percent",
            "power.voltage{supply=BAT0,type=Battery,status=Discharging} 12.45 volts",
            "power.current{supply=BAT0,type=Battery,status=Discharging} 1.35 amperes",
            "power.power{supply=BAT0,type=Battery,status=Discharging} 16.8075 watts",
        ])
        #expect(logs.warnings.isEmpty)
    }

    @Test("the battery status tag follows the status file")
    func powerStatusChanges() async throws {
        let directory = try Fixtures.temporaryDirectory()
        defer { try? FileManager.default.removeItem(at: directory) }
        let battery = directory.appendingPathComponent("class/power_supply/ups0")
        try FileManager.default.createDirectory(at: battery, withIntermediateDirectories: true)
        try Data("UPS\n".utf8).write(to: battery.appendingPathComponent("type"))
        try Data("100\n".utf8).write(to: battery.appendingPathComponent("capacity"))
        try Data("Full\n".utf8).write(to: battery.appendingPathComponent("status"))
        let clock = FakeTickClock(now: Self.start, maximumSleeps: 2) { number, _ in
            if number == 2 {
                try? Data("Discharging\n".utf8).write(to: battery.appendingPathComponent("status"))
                try? Data("99\n".utf8).write(to: battery.appendingPathComponent("capacity"))
            }
        }
        let (records, _) = try await collect(PowerSource(name: "p", config: PowerConfig(sysRoot: directory.path), clock: clock))
        #expect(summary(records) == [
            "power.capacity{supply=ups0,type=UPS,status=Full} 100.0 percent",
            "power.capacity{supply=ups0,type=UPS,status=Discharging} 99.0 percent",
        ])
    }

    @Test("a sensor that stops answering is skipped with one notice, not a warning per tick")
    func failingSensor() async throws {
        let directory = try Fixtures.temporaryDirectory()
        defer { try? FileManager.default.removeItem(at: directory) }
        let zone = directory.appendingPathComponent("class/thermal/thermal_zone0")
        try FileManager.default.createDirectory(at: zone, withIntermediateDirectories: true)
        try Data("40000\n".utf8).write(to: zone.appendingPathComponent("temp"))
        let clock = FakeTickClock(now: Self.start, maximumSleeps: 6) { number, _ in
            if number == 2 { try? Data("\n".utf8).write(to: zone.appendingPathComponent("temp")) }
            if number == 5 { try? Data("41000\n".utf8).write(to: zone.appendingPathComponent("temp")) }
        }
        let (records, logs) = try await collect(ThermalSource(name: "t", config: ThermalConfig(sysRoot: directory.path), clock: clock))
        #expect(records.map { $0.metric!.value } == [40, 41, 41])
        #expect(records.first?.metric?.tags == [Tag("zone", "0"), Tag("type", "unknown")])
        #expect(logs.warnings.isEmpty)
        #expect(logs.all.filter { $0.level == .notice }.count == 1)
    }

    @Test("the VM has no thermal zones, hwmon chips or power supplies: one warning each, no ticks")
    func vm() async throws {
        let root = sysRoot("vm-2core")
        let sources: [any Source] = [
            ThermalSource(name: "t", config: ThermalConfig(sysRoot: root), clock: FakeTickClock(now: Self.start, maximumSleeps: 5)),
            HwmonSource(name: "h", config: HwmonConfig(sysRoot: root), clock: FakeTickClock(now: Self.start, maximumSleeps: 5)),
            PowerSource(name: "p", config: PowerConfig(sysRoot: root), clock: FakeTickClock(now: Self.start, maximumSleeps: 5)),
            // The ARM board has no hwmon or power_supply directory at all.
            HwmonSource(name: "h", config: HwmonConfig(sysRoot: sysRoot("arm-board-4core")), clock: FakeTickClock(now: Self.start, maximumSleeps: 5)),
            PowerSource(name: "p", config: PowerConfig(sysRoot: sysRoot("arm-board-4core")), clock: FakeTickClock(now: Self.start, maximumSleeps: 5)),
        ]
        for source in sources {
            let (records, logs) = try await collect(source)
            #expect(records.isEmpty)
            #expect(logs.all.count == 1)
            #expect(logs.warnings.first?.message.contains("disabled") == true)
        }
    }
}
