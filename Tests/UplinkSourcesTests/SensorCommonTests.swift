import Foundation
import Logging
import Testing
import UplinkCore

@testable import UplinkSources

@Suite("sensor helpers")
struct SensorCommonTests {
    private func withBytes<R>(_ text: String, _ body: (UnsafeBufferPointer<UInt8>) -> R) -> R {
        Array(text.utf8).withUnsafeBufferPointer(body)
    }

    @Test("counter deltas: plain, 32-bit wrap, 64-bit wrap, reset")
    func counterDeltas() {
        #expect(CounterRate.delta(previous: 10, current: 25) == 15)
        #expect(CounterRate.delta(previous: 7, current: 7) == 0)
        // 32-bit wrap: 4_294_000_000 → 9_032_704 is 10,000,000 more.
        #expect(CounterRate.delta(previous: 4_294_000_000, current: 9_032_704) == 10_000_000)
        #expect(CounterRate.delta(previous: UInt64(UInt32.max), current: 0) == 1)
        // 64-bit wrap.
        #expect(CounterRate.delta(previous: UInt64.max - 9, current: 5) == 15)
        #expect(CounterRate.delta(previous: 18_446_744_073_709_000_000, current: 448_384) == 1_000_000)
        // Resets: the counter fell back far below where a wrap could have brought it.
        #expect(CounterRate.delta(previous: 9_032_704, current: 1000) == nil)
        #expect(CounterRate.delta(previous: 10_000_000_000, current: 5) == nil)
        #expect(CounterRate.delta(previous: 100, current: 0) == nil)
        // Went down but above 32 bits while the previous fitted: not a 32-bit wrap.
        #expect(CounterRate.delta(previous: 4_000_000_000, current: 5_000_000_000) == 1_000_000_000)
        #expect(CounterRate.perSecond(previous: 0, current: 1000, nanoseconds: 10_000_000_000) == 100)
        #expect(CounterRate.perSecond(previous: 0, current: 1000, nanoseconds: 0) == nil)
        #expect(CounterRate.perSecond(previous: 0, current: 1000, nanoseconds: -5) == nil)
        #expect(CounterRate.perSecond(previous: 5000, current: 10, nanoseconds: 1) == nil)
    }

    @Test("glob patterns and include/exclude filters")
    func globs() {
        #expect(GlobPattern("eth*").matches("eth0"))
        #expect(GlobPattern("eth*").matches("eth"))
        #expect(!GlobPattern("eth*").matches("veth0"))
        #expect(GlobPattern("*").matches(""))
        #expect(GlobPattern("*0").matches("wlan0"))
        #expect(GlobPattern("w?an*").matches("wlan0"))
        #expect(!GlobPattern("w?an").matches("wan"))
        #expect(GlobPattern("a*b*c").matches("axxbyyc"))
        #expect(!GlobPattern("a*b*c").matches("axxbyy"))
        #expect(GlobPattern("lo").matches("lo"))
        #expect(!GlobPattern("lo").matches("lo0"))
        let filter = NameFilter(include: ["eth*", "wl*"], exclude: ["*1"])
        #expect(filter.allows("eth0"))
        #expect(!filter.allows("eth1"))
        #expect(!filter.allows("docker0"))
        #expect(NameFilter(include: [], exclude: ["lo"]).allows("anything"))
        #expect(!NameFilter(include: [], exclude: ["lo"]).allows("lo"))
    }

    @Test("signed integers and decimal numbers")
    func numbers() {
        func int(_ text: String) -> Int64? { withBytes(text) { ByteParsing.parseInt64($0, 0..<$0.count) } }
        func double(_ text: String) -> Double? { withBytes(text) { ByteParsing.parseDouble($0, 0..<$0.count) } }
        #expect(int("-5000") == -5000)
        #expect(int("+12") == 12)
        #expect(int("9223372036854775807") == .max)
        #expect(int("-9223372036854775808") == .min)
        #expect(int("9223372036854775808") == nil)
        #expect(int("-") == nil)
        #expect(int("1.5") == nil)
        #expect(double("0.52") == 0.52)
        #expect(double("-3.5") == -3.5)
        #expect(double(".5") == 0.5)
        #expect(double("5.") == 5)
        #expect(double("1e3") == 1000)
        #expect(double("2.5E-1") == 0.25)
        for bad in ["", "-", ".", "e5", "1e", "nan", "inf", "0x10", "1.2.3", "1 2", "12abc", "1e999"] {
            #expect(double(bad) == nil, "\(bad)")
        }
        #expect(withBytes("  42\n") { ByteParsing.trimmed($0, 0..<$0.count) } == 2..<4)
        #expect(withBytes(" \n ") { ByteParsing.trimmed($0, 0..<$0.count).isEmpty })
    }

    @Test("natural order of sysfs names")
    func naturalOrder() {
        let names = ["hwmon10", "hwmon2", "hwmon1", "temp10_input", "temp1_input", "temp2_input", "a", "hwmon02"]
        #expect(names.sorted(by: Sysfs.naturalOrder) == [
            "a", "hwmon1", "hwmon2", "hwmon02", "hwmon10", "temp1_input", "temp2_input", "temp10_input",
        ] || names.sorted(by: Sysfs.naturalOrder) == [
            "a", "hwmon1", "hwmon02", "hwmon2", "hwmon10", "temp1_input", "temp2_input", "temp10_input",
        ])
        #expect(Sysfs.list("/nonexistent-uplink-dir") == nil)
        #expect(Sysfs.numbered(Fixtures.url("x86-laptop-8core/sys/class/thermal").path, prefix: "thermal_zone")
            == ["thermal_zone0", "thermal_zone1"])
    }

    @Test("jitter delays each tick by less than the jitter and never shifts the schedule")
    func jitter() async throws {
        let start: Int64 = 1_731_924_123_250_000_000
        let clock = FakeTickClock(now: start, maximumSleeps: 50)
        var ticker = IntervalTicker(interval: .seconds(10), jitter: .seconds(2), clock: clock)
        var ticks: [Int64] = []
        for _ in 0..<50 { ticks.append(try await ticker.nextTick()) }
        let first: Int64 = 1_731_924_130_000_000_000
        #expect(ticks == (0..<50).map { first + Int64($0) * 10_000_000_000 })
        let delays = zip(clock.deadlines, ticks).map { $0 - $1 }
        #expect(delays.allSatisfy { $0 >= 0 && $0 < 2_000_000_000 })
        #expect(Set(delays).count > 1, "the delay is random per tick")
        // A jitter at or above the interval is clamped below it; zero means none.
        #expect(IntervalTicker(interval: .seconds(10), jitter: .seconds(30), clock: clock).jitterNanoseconds == 9_999_999_999)
        #expect(IntervalTicker(interval: .seconds(10), clock: clock).jitterNanoseconds == 0)
        #expect(IntervalTicker(interval: .seconds(10), jitter: .seconds(-1), clock: clock).jitterNanoseconds == 0)
    }

    @Test("device rates: a first reading primes, a reset skips one interval, a device that went away starts afresh")
    func deviceRates() {
        let context = SourceContext(sink: RecordingSink(), logger: Logger(label: "device-rates-test"))
        let emitter = MetricEmitter(context: context, source: "io", extraTags: [Tag("site", "lab")])
        var rates = DeviceRates(tag: "device", emitter: emitter)
        var reported: [(name: String, rates: [Double], tags: [UplinkCore.Tag])] = []
        func sample(atSecond second: Int64, _ devices: [(String, [UInt64])]) {
            for (name, values) in devices {
                rates.update(DeviceCounters(name: name, values: values), timestamp: second * 1_000_000_000) {
                    reported.append((name, $0, $1))
                }
            }
            rates.finishSample()
        }
        sample(atSecond: 0, [("sda", [0, 0]), ("sdb", [7, 7])])
        #expect(reported.isEmpty, "the first reading only primes")
        sample(atSecond: 2, [("sda", [200, 10]), ("sdb", [7, 9])])
        #expect(reported.map(\.name) == ["sda", "sdb"])
        #expect(reported.map(\.rates) == [[100, 5], [0, 1]])
        #expect(reported[0].tags == [Tag("device", "sda"), Tag("site", "lab")])
        // sda's first counter fell back: a reset, skipped; sdb went away.
        reported = []
        sample(atSecond: 4, [("sda", [5, 20])])
        #expect(reported.isEmpty)
        sample(atSecond: 6, [("sda", [105, 30]), ("sdb", [9, 9])])
        #expect(reported.map(\.name) == ["sda"], "sdb came back: it primes again")
        #expect(reported.map(\.rates) == [[50, 5]])
        sample(atSecond: 8, [("sda", [205, 40]), ("sdb", [29, 9])])
        #expect(reported.map(\.name) == ["sda", "sda", "sdb"])
        #expect(reported.last?.rates == [10, 0])
        #expect(reported.last?.tags == [Tag("device", "sdb"), Tag("site", "lab")])
    }

    @Test("the first numbers of the first line: as many as asked, non-negative, the rest ignored")
    func leadingNumbers() {
        func numbers(_ count: Int, _ text: String) -> [Double]? {
            withBytes(text) { ByteParsing.leadingNonNegativeNumbers(count, in: $0) }
        }
        #expect(numbers(3, "0.52 0.58 0.59 2/1234 56789\n") == [0.52, 0.58, 0.59])
        #expect(numbers(1, "12345.67 54321.00\nsecond line\n") == [12345.67])
        #expect(numbers(3, "1 2\n") == nil)
        #expect(numbers(3, "1 -2 3\n") == nil)
        #expect(numbers(1, "") == nil)
    }

    @Test("the metric units are the documented list")
    func units() {
        #expect(MetricUnit.all == [
            "percent", "bytes", "bytes_per_second", "operations_per_second", "celsius", "rpm", "volts", "amperes",
            "watts", "seconds", "count",
        ])
    }
}
