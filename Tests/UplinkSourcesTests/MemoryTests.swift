import Foundation
import Testing
import UplinkTestSupport
import UplinkCore

@testable import UplinkSources

private typealias Readings = MemorySource.Readings

@Suite("memory: parsing")
struct MeminfoParsingTests {
    @Test("x86 laptop: values in bytes, used = total - available")
    func x86() throws {
        let meminfo = MemorySource.MeminfoParser.parse(try Fixtures.bytes("x86-laptop-8core/proc/meminfo"))
        #expect(meminfo.malformedLines == 0)
        let readings = Readings(meminfo)
        let memory = try #require(readings.memory)
        #expect(memory.total == 32_546_820 * 1024)
        #expect(memory.available == 21_474_836 * 1024)
        #expect(memory.used == (32_546_820 - 21_474_836) * 1024)
        #expect(!memory.availableIsEstimated)
        let percent = try #require(memory.usedPercent)
        #expect(abs(percent - 11_071_984.0 / 32_546_820.0 * 100) < 1e-9)
        #expect(readings.swap == Readings.Swap(total: 8_388_604 * 1024, free: 7_340_028 * 1024, used: 1_048_576 * 1024))
    }

    @Test("ARM board: swap file entirely free")
    func arm() throws {
        let readings = Readings(MemorySource.MeminfoParser.parse(try Fixtures.bytes("arm-board-4core/proc/meminfo")))
        #expect(readings.memory?.total == 3_884_180 * 1024)
        #expect(readings.memory?.available == 3_213_448 * 1024)
        #expect(readings.memory?.used == (3_884_180 - 3_213_448) * 1024)
        #expect(readings.swap == Readings.Swap(total: 102_396 * 1024, free: 102_396 * 1024, used: 0))
    }

    @Test("without MemAvailable, available = MemFree + Buffers + Cached")
    func memAvailableFallback() throws {
        let meminfo = MemorySource.MeminfoParser.parse(try Fixtures.bytes("legacy-kernel-2core/proc/meminfo"))
        #expect(meminfo.memAvailable == nil)
        #expect(meminfo.malformedLines == 0)
        let memory = try #require(Readings(meminfo).memory)
        #expect(memory.availableIsEstimated)
        #expect(memory.available == (123_456 + 45_678 + 345_678) * 1024)
        #expect(memory.used == (1_034_528 - 514_812) * 1024)
    }

    @Test("malformed lines are skipped and counted, the rest is parsed")
    func malformed() {
        let text = """
            MemTotal:        2000000 kB
            MemFree 1234 kB
            MemAvailable:    abc kB
            MemAvailable:    1000000 kB
            Buffers:         12 MB
            Cached:          1 kB extra
            garbage
            Weird Key: 12 kB
            :
            HugePages_Total:       0
            Active(anon):    1016 kB
            SwapTotal:       99999999999999999999 kB
            SwapTotal:       18014398509481984 kB
            SwapTotal:       4000 kB

            SwapFree:        1000 kB
            MemFree:         500
            """
        let meminfo = MemorySource.MeminfoParser.parse(Array(text.utf8))
        #expect(meminfo.malformedLines == 9)
        #expect(meminfo.memTotal == 2_000_000 * 1024)
        #expect(meminfo.memAvailable == 1_000_000 * 1024)
        #expect(meminfo.memFree == 500)  // no unit: taken as is
        #expect(meminfo.buffers == nil)
        #expect(meminfo.cached == nil)
        #expect(meminfo.swapTotal == 4000 * 1024)
        #expect(meminfo.swapFree == 1000 * 1024)
    }

    @Test("missing fields leave the derived metrics out; absurd values do not trap")
    func missingFields() {
        #expect(Readings(MemorySource.MeminfoParser.parse(Array("SwapTotal: 0 kB\nSwapFree: 0 kB\n".utf8))).memory == nil)
        #expect(Readings(MemorySource.MeminfoParser.parse(Array("MemTotal: 10 kB\nMemFree: 5 kB\n".utf8))).swap == nil)
        let zero = Readings(MemorySource.MeminfoParser.parse(Array("MemTotal: 0 kB\nMemAvailable: 5 kB\n".utf8)))
        #expect(zero.memory?.used == 0)
        #expect(zero.memory?.usedPercent == nil)
        let huge = "MemTotal: 10 kB\nMemFree: 18014398509481983 kB\nCached: 18014398509481983 kB\nBuffers: 18014398509481983 kB\n"
        #expect(Readings(MemorySource.MeminfoParser.parse(Array(huge.utf8))).memory?.used == 0)
    }

    @Test("this machine's /proc/meminfo parses without malformed lines")
    func realMeminfo() {
        var reader = SmallFileReader(path: "/proc/meminfo")
        guard (try? reader.read()) != nil else { return }
        let meminfo = reader.withContents { MemorySource.MeminfoParser.parse($0) }
        #expect(meminfo.malformedLines == 0)
        #expect(Readings(meminfo).memory != nil)
    }
}

@Suite("memory: the source")
struct MemorySourceTests {
    static let start: Int64 = 1_731_924_123_250_000_000

    @Test("emits the seven metrics each tick with aligned timestamps")
    func endToEnd() async throws {
        let procRoot = try Fixtures.copy("x86-laptop-8core/proc")
        defer { Fixtures.remove(procRoot) }
        let clock = FakeTickClock(now: Self.start, maximumSleeps: 2)
        let sink = RecordingSink()
        let source = MemorySource(
            name: "mem", config: MemoryConfig(interval: .seconds(15), procRoot: procRoot.path), clock: clock
        )
        try await run(source, sink: sink)
        let records = sink.records
        #expect(records.count == 14)
        #expect(records.prefix(7).map { $0.metric!.name } == [
            "memory.total", "memory.available", "memory.used", "memory.used_percent",
            "memory.swap_total", "memory.swap_free", "memory.swap_used",
        ])
        #expect(records.prefix(7).map { $0.metric!.unit } == ["bytes", "bytes", "bytes", "percent", "bytes", "bytes", "bytes"])
        #expect(records.allSatisfy { $0.metric?.tags == [] && $0.source == "mem" })
        // 10:02:03.25 → ticks at 10:02:15 and 10:02:30 (multiples of 15 s since the epoch).
        #expect(records.map(\.timestamp) == Array(repeating: 1_731_924_135_000_000_000, count: 7)
            + Array(repeating: 1_731_924_150_000_000_000, count: 7))
        #expect(records[0].metric?.value == Double(32_546_820 * 1024))
        #expect(records[6].metric?.value == Double(1_048_576 * 1024))
    }

    @Test("the MemAvailable fallback through the source")
    func legacy() async throws {
        let procRoot = try Fixtures.copy("legacy-kernel-2core/proc")
        defer { Fixtures.remove(procRoot) }
        let sink = RecordingSink()
        let logs = LogCapture()
        try await run(
            MemorySource(name: "mem", config: MemoryConfig(procRoot: procRoot.path), clock: FakeTickClock(now: Self.start, maximumSleeps: 1)),
            sink: sink, logger: logs.logger
        )
        let available = sink.records.first { $0.metric?.name == "memory.available" }
        #expect(available?.metric?.value == Double(514_812 * 1024))
        #expect(logs.warnings.isEmpty)
    }

    @Test("a missing /proc/meminfo logs one warning and returns")
    func missingFile() async throws {
        let empty = try Fixtures.temporaryDirectory()
        defer { try? FileManager.default.removeItem(at: empty) }
        let clock = FakeTickClock(now: Self.start, maximumSleeps: 10)
        let logs = LogCapture()
        let sink = RecordingSink()
        try await run(MemorySource(name: "mem", config: MemoryConfig(procRoot: empty.path), clock: clock), sink: sink, logger: logs.logger)
        #expect(clock.deadlines.isEmpty)
        #expect(sink.count == 0)
        #expect(logs.all.count == 1)
        #expect(logs.warnings.first?.message.contains("meminfo does not exist") == true)
    }

    @Test("missing fields warn once, not every tick")
    func missingFieldsWarnOnce() async throws {
        let directory = try Fixtures.temporaryDirectory()
        try Data("MemTotal: 100 kB\nMemAvailable: 50 kB\n".utf8).write(to: directory.appendingPathComponent("meminfo"))
        let logs = LogCapture()
        let sink = RecordingSink()
        try await run(
            MemorySource(name: "mem", config: MemoryConfig(procRoot: directory.path), clock: FakeTickClock(now: Self.start, maximumSleeps: 4)),
            sink: sink, logger: logs.logger
        )
        #expect(logs.warnings.count == 1)
        #expect(sink.count == 4 * 4)
    }
}
