import Foundation
import Testing
import UplinkTestSupport
import UplinkCore

@testable import UplinkSources

@Suite("load and uptime")
struct LoadUptimeTests {
    static let start: Int64 = 1_731_924_123_250_000_000

    @Test("loadavg of three machines")
    func parseLoad() throws {
        #expect(LoadSource.parse(try Fixtures.bytes("x86-laptop-8core/proc/loadavg"))
            == .init(oneMinute: 0.52, fiveMinutes: 0.58, fifteenMinutes: 0.59))
        #expect(LoadSource.parse(try Fixtures.bytes("arm-board-4core/proc/loadavg"))
            == .init(oneMinute: 1.05, fiveMinutes: 0.87, fifteenMinutes: 0.40))
        #expect(LoadSource.parse(try Fixtures.bytes("vm-2core/proc/loadavg"))
            == .init(oneMinute: 0, fiveMinutes: 0.01, fifteenMinutes: 0.05))
        for bad in ["", "\n", "0.1 0.2", "a b c", "-1 0 0", "0.1 0.2 x 1/2 3"] {
            #expect(LoadSource.parse(Array(bad.utf8)) == nil, "\(bad)")
        }
        #expect(LoadSource.parse(Array("1 2 3".utf8)) == .init(oneMinute: 1, fiveMinutes: 2, fifteenMinutes: 3))
    }

    @Test("uptime of three machines")
    func parseUptime() throws {
        #expect(UptimeSource.parse(try Fixtures.bytes("x86-laptop-8core/proc/uptime")) == 350_735.47)
        #expect(UptimeSource.parse(try Fixtures.bytes("arm-board-4core/proc/uptime")) == 86_400)
        #expect(UptimeSource.parse(try Fixtures.bytes("vm-2core/proc/uptime")) == 1234.56)
        for bad in ["", "x 1", "-5 3", "\n1 2"] {
            #expect(UptimeSource.parse(Array(bad.utf8)) == nil, "\(bad)")
        }
    }

    @Test("this machine's files parse")
    func real() {
        var reader = SmallFileReader(path: "/proc/loadavg")
        if (try? reader.read()) != nil { #expect(reader.withContents { LoadSource.parse($0) } != nil) }
        var uptime = SmallFileReader(path: "/proc/uptime")
        if (try? uptime.read()) != nil { #expect(uptime.withContents { UptimeSource.parse($0) } != nil) }
    }

    @Test("the load source emits three metrics per tick, with configured tags")
    func loadSource() async throws {
        let sink = RecordingSink()
        let config = LoadConfig(tags: [Tag("site", "lab")], procRoot: Fixtures.url("arm-board-4core/proc").path)
        try await run(LoadSource(name: "load", config: config, clock: FakeTickClock(now: Self.start, maximumSleeps: 2)), sink: sink)
        #expect(sink.records.map { $0.metric!.name } == ["load.1m", "load.5m", "load.15m", "load.1m", "load.5m", "load.15m"])
        #expect(sink.records.map { $0.metric!.value }.prefix(3) == [1.05, 0.87, 0.40])
        #expect(sink.records.allSatisfy { $0.metric?.unit == "" && $0.metric?.tags == [Tag("site", "lab")] && $0.source == "load" })
        #expect(sink.records.first?.timestamp == 1_731_924_130_000_000_000)
    }

    @Test("the uptime source emits uptime.seconds; a malformed file warns once")
    func uptimeSource() async throws {
        let sink = RecordingSink()
        let config = UptimeConfig(procRoot: Fixtures.url("x86-laptop-8core/proc").path)
        try await run(UptimeSource(name: "up", config: config, clock: FakeTickClock(now: Self.start, maximumSleeps: 1)), sink: sink)
        #expect(sink.records.map(\.metric) == [Metric(name: "uptime.seconds", value: 350_735.47, unit: "seconds")])

        let directory = try Fixtures.temporaryDirectory()
        defer { try? FileManager.default.removeItem(at: directory) }
        try Data("garbage\n".utf8).write(to: directory.appendingPathComponent("uptime"))
        let logs = LogCapture()
        let empty = RecordingSink()
        try await run(
            UptimeSource(name: "up", config: UptimeConfig(procRoot: directory.path), clock: FakeTickClock(now: Self.start, maximumSleeps: 5)),
            sink: empty, logger: logs.logger)
        #expect(empty.count == 0)
        #expect(logs.warnings.count == 1)
    }

    @Test("missing files: one warning each, no ticks")
    func missing() async throws {
        let empty = try Fixtures.temporaryDirectory()
        defer { try? FileManager.default.removeItem(at: empty) }
        for source in [
            LoadSource(name: "l", config: LoadConfig(procRoot: empty.path), clock: FakeTickClock(now: Self.start, maximumSleeps: 5)) as any Source,
            UptimeSource(name: "u", config: UptimeConfig(procRoot: empty.path), clock: FakeTickClock(now: Self.start, maximumSleeps: 5)),
        ] {
            let logs = LogCapture()
            let sink = RecordingSink()
            try await source.run(context: SourceContext(sink: sink, logger: logs.logger))
            #expect(sink.count == 0)
            #expect(logs.all.count == 1)
            #expect(logs.warnings.first?.message.contains("does not exist") == true)
        }
    }
}
