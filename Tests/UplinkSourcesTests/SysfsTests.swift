import Foundation
import Testing
import UplinkTestSupport
import UplinkCore

@testable import UplinkSources

@Suite("sysfs")
struct SysfsTests {
    static let start: Int64 = 1_731_924_123_250_000_000

    @Test("an IIO temperature on the ARM board, scaled and offset")
    func iio() async throws {
        let path = Fixtures.url("arm-board-4core/sys/bus/iio/devices/iio:device0/in_temp_input").path
        let sink = RecordingSink()
        let config = SysfsConfig(tags: [Tag("sensor", "bme280")], path: path, scale: 0.001, offset: 0.5, metric: "enclosure.temperature", unit: "celsius")
        try await run(SysfsSource(name: "s", config: config, clock: FakeTickClock(now: Self.start, maximumSleeps: 2)), sink: sink)
        #expect(sink.records.count == 2)
        let metric = try #require(sink.records.first?.metric)
        #expect(metric.name == "enclosure.temperature")
        #expect(abs(metric.value - 23.95) < 1e-9)
        #expect(metric.unit == "celsius")
        #expect(metric.tags == [Tag("sensor", "bme280")])
    }

    @Test("decimal values and a GPIO with the defaults")
    func values() async throws {
        let pressure = RecordingSink()
        try await run(SysfsSource(
            name: "s", config: SysfsConfig(path: Fixtures.url("arm-board-4core/sys/bus/iio/devices/iio:device0/in_pressure_input").path),
            clock: FakeTickClock(now: Self.start, maximumSleeps: 1)), sink: pressure)
        #expect(pressure.records.map(\.metric) == [Metric(name: "sysfs.value", value: 101.325, unit: "")])
        let gpio = RecordingSink()
        try await run(SysfsSource(
            name: "s", config: SysfsConfig(path: Fixtures.url("arm-board-4core/sys/class/gpio/gpio17/value").path),
            clock: FakeTickClock(now: Self.start, maximumSleeps: 1)), sink: gpio)
        #expect(gpio.records.first?.metric?.value == 1)
        #expect(Array("  -12\n".utf8).withUnsafeBufferPointer { SysfsSource.value($0, scale: 2, offset: 1) } == -23)
        #expect(Array("abc".utf8).withUnsafeBufferPointer { SysfsSource.value($0, scale: 2, offset: 1) } == nil)
    }

    @Test("missing file: one warning; a non-number: skipped, one warning")
    func problems() async throws {
        let logs = LogCapture()
        let clock = FakeTickClock(now: Self.start, maximumSleeps: 4)
        try await run(SysfsSource(name: "s", config: SysfsConfig(path: "/nonexistent-uplink/value"), clock: clock), sink: RecordingSink(), logger: logs.logger)
        #expect(logs.all.count == 1)
        #expect(logs.warnings.first?.message.contains("does not exist") == true)
        #expect(clock.deadlines.isEmpty)

        let directory = try Fixtures.temporaryDirectory()
        let file = directory.appendingPathComponent("value")
        try Data("n/a\n".utf8).write(to: file)
        let bad = LogCapture()
        let sink = RecordingSink()
        try await run(SysfsSource(name: "s", config: SysfsConfig(path: file.path), clock: FakeTickClock(now: Self.start, maximumSleeps: 4)), sink: sink, logger: bad.logger)
        #expect(sink.count == 0)
        #expect(bad.warnings.count == 1)
    }
}
