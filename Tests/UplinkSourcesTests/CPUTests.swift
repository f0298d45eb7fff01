import Foundation
import Logging
import Testing
import UplinkTestSupport
import UplinkCore

@testable import UplinkSources

typealias Percentages = CPUSource.Percentages

/// Expected percentages per CPU, as chosen when the fixtures were written (10 s at USER_HZ 100: 1000 ticks
/// per core; see the comments in the fixture generator summary in the test names).
private let x86Expected: [String: Percentages] = [
    "total": Percentages(user: 30.375, system: 9.75, idle: 55.5, iowait: 4.125, steal: 0.25),
    "0": Percentages(user: 32, system: 13, idle: 50, iowait: 3, steal: 2),
    "1": Percentages(user: 15, system: 5, idle: 80, iowait: 0, steal: 0),
    "2": Percentages(user: 95, system: 4, idle: 1, iowait: 0, steal: 0),
    "3": Percentages(user: 1, system: 1, idle: 98, iowait: 0, steal: 0),
    "4": Percentages(user: 25, system: 15, idle: 40, iowait: 20, steal: 0),
    "5": Percentages(user: 10, system: 10, idle: 70, iowait: 10, steal: 0),
    "6": Percentages(user: 60, system: 25, idle: 15, iowait: 0, steal: 0),
    "7": Percentages(user: 5, system: 5, idle: 90, iowait: 0, steal: 0),
]

private let armExpected: [String: Percentages] = [
    "total": Percentages(user: 25, system: 8.75, idle: 65, iowait: 1.25, steal: 0),
    "0": Percentages(user: 60, system: 15, idle: 20, iowait: 5, steal: 0),
    "1": Percentages(user: 20, system: 10, idle: 70, iowait: 0, steal: 0),
    "2": Percentages(user: 10, system: 5, idle: 85, iowait: 0, steal: 0),
    "3": Percentages(user: 10, system: 5, idle: 85, iowait: 0, steal: 0),
]

private let legacyExpected: [String: Percentages] = [
    "total": Percentages(user: 25, system: 10, idle: 62.5, iowait: 2.5, steal: 0),
    "0": Percentages(user: 40, system: 10, idle: 45, iowait: 5, steal: 0),
    "1": Percentages(user: 10, system: 10, idle: 80, iowait: 0, steal: 0),
]

private func label(_ cpu: CPUSource.CPUIdentity) -> String {
    switch cpu {
    case .total: "total"
    case .core(let index): String(index)
    }
}

private func expectClose(_ actual: Percentages, _ expected: Percentages, _ cpu: String) {
    let pairs = [
        ("user", actual.user, expected.user), ("system", actual.system, expected.system),
        ("idle", actual.idle, expected.idle), ("iowait", actual.iowait, expected.iowait),
        ("steal", actual.steal, expected.steal),
    ]
    for (field, a, e) in pairs {
        #expect(abs(a - e) < 1e-9, "cpu \(cpu) \(field): \(a) != \(e)")
    }
}

@Suite("cpu: parsing and percentages")
struct CPUSamplerTests {
    @Test(
        "percentages over two reads match the fixture's deltas",
        arguments: [
            ("x86-laptop-8core", 8, x86Expected),
            ("arm-board-4core", 4, armExpected),
            ("legacy-kernel-2core", 2, legacyExpected),
        ]
    )
    func twoReads(machine: String, cores: Int, expected: [String: Percentages]) throws {
        var sampler = CPUSource.Sampler(perCore: true)
        let primed = sampler.ingest(try Fixtures.bytes("\(machine)/proc/stat"))
        #expect(primed.isEmpty, "the first read only primes")
        let results = sampler.ingest(try Fixtures.bytes("\(machine)/proc-10s-later/stat"))
        #expect(results.map { label($0.0) } == ["total"] + (0..<cores).map(String.init))
        for (cpu, percentages) in results {
            let name = label(cpu)
            let want = try #require(expected[name])
            expectClose(percentages, want, name)
            let sum = percentages.user + percentages.system + percentages.idle + percentages.iowait + percentages.steal
            #expect(abs(sum - 100) < 1e-9, "cpu \(name) sums to \(sum)")
        }
        #expect(sampler.malformedLines == 0)
        #expect(sampler.skippedIntervals == 0)
    }

    @Test("guest time is not counted twice")
    func guestNotDoubleCounted() {
        let old = CPUSource.Times(user: 100, nice: 10, system: 0, idle: 0, guest: 50, guestNice: 5)
        let new = CPUSource.Times(user: 200, nice: 20, system: 50, idle: 40, guest: 150, guestNice: 15)
        // user+nice delta 110 (containing 110 of guest), system 50, idle 40: total 200, not 310.
        #expect(Percentages(from: old, to: new) == Percentages(user: 55, system: 25, idle: 20, iowait: 0, steal: 0))
    }

    @Test("per_core off: only the total")
    func perCoreOff() throws {
        var sampler = CPUSource.Sampler(perCore: false)
        _ = sampler.ingest(try Fixtures.bytes("x86-laptop-8core/proc/stat"))
        let results = sampler.ingest(try Fixtures.bytes("x86-laptop-8core/proc-10s-later/stat"))
        #expect(results.count == 1)
        #expect(results.first?.0 == .total)
        expectClose(try #require(results.first?.1), x86Expected["total"]!, "total")
    }

    @Test("counters that went backwards and offline cores skip that interval only")
    func counterReset() throws {
        var sampler = CPUSource.Sampler(perCore: true)
        _ = sampler.ingest(try Fixtures.bytes("x86-laptop-8core/proc/stat"))
        // cpu1: iowait stepped back by 3; cpu2: all counters reset (lower); cpu5: offline (no line). The total
        // line is the kernel's sum, so cpu2's reset makes it go backwards too.
        let results = sampler.ingest(try Fixtures.bytes("x86-laptop-8core/proc-counter-reset/stat"))
        #expect(results.map { label($0.0) } == ["0", "3", "4", "6", "7"])
        for (cpu, percentages) in results {
            expectClose(percentages, x86Expected[label(cpu)]!, label(cpu))
            for value in [percentages.user, percentages.system, percentages.idle, percentages.iowait, percentages.steal] {
                #expect(value >= 0 && value <= 100)
            }
        }
        #expect(sampler.skippedIntervals == 3)  // total, cpu1, cpu2

        // The next interval works again for every CPU that is present; cpu5 comes back and only primes.
        let later = try Fixtures.bytes("x86-laptop-8core/proc-counter-reset/stat")
        let again = sampler.ingest(later)
        // Identical counters: no time elapsed, so nothing can be computed (and nothing divides by zero).
        #expect(again.isEmpty)
        let back = sampler.ingest(try Fixtures.bytes("x86-laptop-8core/proc-10s-later/stat"))
        // Against the reset read, cpu2 went up again (valid), cpu1's iowait is back up, cpu5 reappears (primes).
        #expect(!back.map { label($0.0) }.contains("5"))
        #expect(back.map { label($0.0) }.contains("2"))
    }

    @Test("a decreasing counter never yields values outside 0...100")
    func decreasingCounter() {
        let old = CPUSource.Times(user: 1000, nice: 0, system: 500, idle: 10_000, iowait: 200)
        var new = old
        new.user += 100
        new.idle += 900
        new.iowait -= 50
        #expect(Percentages(from: old, to: new) == nil)
        #expect(Percentages(from: old, to: old) == nil, "no elapsed ticks")
    }

    @Test("malformed lines are skipped and counted, the rest is parsed")
    func malformedLines() {
        let text = """
            cpu  100 0 100 800 0 0 0 0 0 0
            cpu0 50 0 50 400 0 0 0 0 0 0
            cpu1 50 0 50
            cpu2 50 0 50 4x0 0 0 0 0 0 0
            cpuX 1 2 3 4
            cpu99999 1 2 3 4
            cpu0 1 2 3 4
            @@@ garbage ~~~
            intr 1 2 3

               \t
            cpu3 50 0 50 400 0 0 0 0 0 0
            cpu4 18446744073709551616 0 0 0
            cpu5 1 2 3 4 5 6 7 8 9 10 11 12
            ctxt 123
            cpu6 7 8 9 10
            """
        let snapshot = CPUSource.StatParser.parse(Array(text.utf8))
        #expect(snapshot.malformedLines == 7)
        #expect(snapshot.total == CPUSource.Times(user: 100, system: 100, idle: 800))
        #expect(snapshot.cores.count == 7)
        #expect(snapshot.cores[0] == CPUSource.Times(user: 50, system: 50, idle: 400))
        #expect(snapshot.cores[1] == nil)
        #expect(snapshot.cores[2] == nil)
        #expect(snapshot.cores[3] == CPUSource.Times(user: 50, system: 50, idle: 400))
        #expect(snapshot.cores[4] == nil)
        // Extra fields from a future kernel are ignored; a line without a trailing newline is still parsed.
        #expect(snapshot.cores[5]?.guestNice == 10)
        #expect(snapshot.cores[6] == CPUSource.Times(user: 7, nice: 8, system: 9, idle: 10))
    }

    @Test("malformed lines accumulate in the sampler's count")
    func malformedCount() throws {
        var sampler = CPUSource.Sampler(perCore: true)
        let good = try Fixtures.bytes("arm-board-4core/proc/stat")
        let truncated = Array(good.prefix(upTo: good.firstIndex(of: UInt8(ascii: "\n"))! + 10))  // "cpu0 1234"
        #expect(sampler.ingest(good).isEmpty)
        #expect(sampler.malformedLines == 0)
        _ = sampler.ingest(truncated)
        #expect(sampler.malformedLines == 1)
        _ = sampler.ingest(Array("garbage!\ncpu 1 2\n".utf8))
        #expect(sampler.malformedLines == 3)
    }

    @Test("garbage and truncated input never crash the parser")
    func fuzz() throws {
        var generator = SystemRandomNumberGenerator()
        let fixture = try Fixtures.bytes("x86-laptop-8core/proc/stat")
        for round in 0..<300 {
            var bytes: [UInt8]
            switch round % 3 {
            case 0:
                bytes = (0..<Int.random(in: 0..<600, using: &generator)).map { _ in UInt8.random(in: 0...255, using: &generator) }
            case 1:
                bytes = Array(fixture.prefix(Int.random(in: 0...fixture.count, using: &generator)))
            default:
                bytes = fixture
                for _ in 0..<20 {
                    bytes[Int.random(in: 0..<bytes.count, using: &generator)] = UInt8.random(in: 0...255, using: &generator)
                }
            }
            var sampler = CPUSource.Sampler(perCore: true)
            _ = sampler.ingest(fixture)
            for (_, percentages) in sampler.ingest(bytes) {
                for value in [percentages.user, percentages.system, percentages.idle, percentages.iowait, percentages.steal] {
                    #expect(value >= 0 && value <= 100)
                }
            }
            #expect(sampler.malformedLines >= 0)
        }
    }

    @Test("this machine's /proc/stat parses without malformed lines")
    func realProcStat() throws {
        var reader = SmallFileReader(path: "/proc/stat")
        guard (try? reader.read()) != nil else { return }  // no procfs here
        let snapshot = reader.withContents { buffer in
            var snapshot = CPUSource.StatSnapshot()
            CPUSource.StatParser.parse(buffer, into: &snapshot)
            return snapshot
        }
        #expect(snapshot.malformedLines == 0)
        #expect(snapshot.total != nil)
        #expect(snapshot.cores.contains { $0 != nil })
    }
}

@Suite("cpu: the source")
struct CPUSourceTests {
    /// 2024-11-18 10:02:03.25 UTC, not on a 10 s boundary.
    static let start: Int64 = 1_731_924_123_250_000_000

    @Test("emits 5 metrics per cpu on the second tick, at aligned timestamps")
    func endToEnd() async throws {
        let procRoot = try Fixtures.copy("x86-laptop-8core/proc")
        defer { Fixtures.remove(procRoot) }
        let clock = FakeTickClock(now: Self.start, workNanoseconds: 3_000_000, maximumSleeps: 2) { number, _ in
            if number == 2 {
                Fixtures.replace("stat", in: procRoot, with: "x86-laptop-8core/proc-10s-later/stat")
            }
        }
        let sink = RecordingSink()
        let source = CPUSource(name: "cpu-main", config: CPUConfig(procRoot: procRoot.path), clock: clock)
        try await run(source, sink: sink)

        #expect(clock.deadlines == [1_731_924_130_000_000_000, 1_731_924_140_000_000_000, 1_731_924_150_000_000_000])
        let records = sink.records
        #expect(records.count == 9 * 5)
        #expect(sink.emitCalls == records.count)
        let readAt: Int64 = 1_731_924_140_000_000_000 + 3_000_000  // tick 2 plus the fake 3 ms of work
        #expect(records.allSatisfy { $0.timestamp == readAt })
        #expect(Set(records.map(\.source)) == ["cpu-main"])
        let names = records.prefix(5).map { $0.metric!.name }
        #expect(names == ["cpu.user", "cpu.system", "cpu.idle", "cpu.iowait", "cpu.steal"])
        #expect(records.allSatisfy { $0.metric?.unit == "percent" })

        var byCPU: [String: [String: Double]] = [:]
        for record in records {
            let metric = try #require(record.metric)
            #expect(metric.tags.count == 1 && metric.tags[0].key == "cpu")
            byCPU[metric.tags[0].value, default: [:]][metric.name] = metric.value
        }
        #expect(Set(byCPU.keys) == Set(x86Expected.keys))
        for (cpu, values) in byCPU {
            let actual = Percentages(
                user: values["cpu.user"]!, system: values["cpu.system"]!, idle: values["cpu.idle"]!,
                iowait: values["cpu.iowait"]!, steal: values["cpu.steal"]!
            )
            expectClose(actual, x86Expected[cpu]!, cpu)
            #expect(abs(values.values.reduce(0, +) - 100) < 1e-9)
        }
    }

    @Test("per_core false emits only cpu=total")
    func perCoreOff() async throws {
        let procRoot = try Fixtures.copy("arm-board-4core/proc")
        defer { Fixtures.remove(procRoot) }
        let clock = FakeTickClock(now: Self.start, maximumSleeps: 2) { number, _ in
            if number == 2 { Fixtures.replace("stat", in: procRoot, with: "arm-board-4core/proc-10s-later/stat") }
        }
        let sink = RecordingSink()
        try await run(
            CPUSource(name: "cpu", config: CPUConfig(perCore: false, procRoot: procRoot.path), clock: clock), sink: sink
        )
        #expect(sink.records.count == 5)
        #expect(sink.records.allSatisfy { $0.metric?.tags == [Tag("cpu", "total")] })
        #expect(sink.records.first?.metric?.value == 25)
    }

    @Test("a missing /proc/stat logs one warning and returns without ticking")
    func missingFile() async throws {
        let empty = try Fixtures.temporaryDirectory()
        defer { try? FileManager.default.removeItem(at: empty) }
        let clock = FakeTickClock(now: Self.start, maximumSleeps: 10)
        let logs = LogCapture()
        let sink = RecordingSink()
        try await run(CPUSource(name: "cpu", config: CPUConfig(procRoot: empty.path), clock: clock), sink: sink, logger: logs.logger)
        #expect(clock.deadlines.isEmpty)
        #expect(sink.count == 0)
        #expect(logs.warnings.count == 1)
        #expect(logs.all.count == 1)
        #expect(logs.warnings.first?.message.contains("\(empty.path)/stat does not exist") == true)
    }

    @Test("a file that disappears mid-run warns once, then recovers")
    func fileDisappears() async throws {
        let procRoot = try Fixtures.copy("x86-laptop-8core/proc")
        defer { Fixtures.remove(procRoot) }
        let stat = procRoot.appendingPathComponent("stat")
        let clock = FakeTickClock(now: Self.start, maximumSleeps: 7) { number, _ in
            switch number {
            case 2: try? FileManager.default.removeItem(at: stat)
            case 6: Fixtures.replace("stat", in: procRoot, with: "x86-laptop-8core/proc-10s-later/stat")
            default: break
            }
        }
        let logs = LogCapture()
        let sink = RecordingSink()
        try await run(CPUSource(name: "cpu", config: CPUConfig(procRoot: procRoot.path), clock: clock), sink: sink, logger: logs.logger)
        #expect(logs.warnings.count == 1)
        #expect(logs.all.filter { $0.level == .notice }.count == 1)
        // Ticks 2-5 failed; tick 6 read the later sample (against tick 1's read), tick 7 the same again.
        #expect(sink.count == 9 * 5)
    }

    @Test("malformed lines are logged once as a warning, then at debug level")
    func malformedLogging() async throws {
        let directory = try Fixtures.temporaryDirectory()
        defer { try? FileManager.default.removeItem(at: directory) }
        try Data("cpu  1 2 3 4\ncpu0 1 2\n".utf8).write(to: directory.appendingPathComponent("stat"))
        let logs = LogCapture()
        let clock = FakeTickClock(now: Self.start, maximumSleeps: 3)
        try await run(CPUSource(name: "cpu", config: CPUConfig(procRoot: directory.path), clock: clock), sink: RecordingSink(), logger: logs.logger)
        #expect(logs.warnings.count == 1)
        #expect(logs.warnings.first?.message.contains("skipped 1 malformed line") == true)
        #expect(logs.all.filter { $0.level == .debug }.count == 2)
    }
}

@Suite("cpu and memory: configured tags")
struct CPUMemoryTagTests {
    static let start: Int64 = 1_763_704_810_000_000_000

    @Test("configured tags follow each metric's own tags")
    func configuredTagsAreAppended() async throws {
        let procRoot = try Fixtures.copy("x86-laptop-8core/proc")
        defer { Fixtures.remove(procRoot) }
        let sink = RecordingSink()
        let cpu = CPUSource(
            name: "cpu",
            config: CPUConfig(interval: .seconds(10), tags: [Tag("site", "lab")], perCore: false, procRoot: procRoot.path),
            clock: FakeTickClock(now: Self.start, maximumSleeps: 2) { number, _ in
                if number == 2 { Fixtures.replace("stat", in: procRoot, with: "x86-laptop-8core/proc-10s-later/stat") }
            })
        let memory = MemorySource(
            name: "memory", config: MemoryConfig(interval: .seconds(10), tags: [Tag("site", "lab")], procRoot: procRoot.path),
            clock: FakeTickClock(now: Self.start, maximumSleeps: 1))
        try await run(cpu, sink: sink)
        try await run(memory, sink: sink)
        let cpuRecords = sink.records.filter { $0.source == "cpu" }
        let memoryRecords = sink.records.filter { $0.source == "memory" }
        #expect(!cpuRecords.isEmpty)
        #expect(!memoryRecords.isEmpty)
        #expect(cpuRecords.allSatisfy { $0.metric?.tags == [Tag("cpu", "total"), Tag("site", "lab")] })
        #expect(memoryRecords.allSatisfy { $0.metric?.tags == [Tag("site", "lab")] })
    }
}
