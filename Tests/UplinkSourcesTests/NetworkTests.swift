import Foundation
import Testing
import UplinkTestSupport
import UplinkCore

@testable import UplinkSources

@Suite("network")
struct NetworkTests {
    static let start: Int64 = 1_731_924_123_250_000_000

    @Test("net/dev of three machines: header skipped, 8 counters per interface")
    func parse() throws {
        let x86 = NetworkSource.parse(try Fixtures.bytes("x86-laptop-8core/proc/net/dev"))
        #expect(x86.malformedLines == 0)
        #expect(x86.devices.map(\.name) == ["lo", "wlp2s0", "docker0", "enp0s31f6"])
        #expect(x86.devices[1].values == [4_294_000_000, 300_000, 2, 10, 200_000_000, 150_000, 0, 1])
        #expect(NetworkSource.parse(try Fixtures.bytes("arm-board-4core/proc/net/dev")).devices.map(\.name) == ["lo", "eth0", "wlan0"])
        #expect(NetworkSource.parse(try Fixtures.bytes("vm-2core/proc/net/dev")).devices.map(\.name) == ["lo", "ens3"])
    }

    @Test("malformed lines are counted, old kernels' 'eth0:123' is read")
    func malformed() {
        let text = """
            Inter-|   Receive
             face |bytes
              eth0:123 2 0 0 0 0 0 0 456 3 0 0 0 0 0 0
            no colon here
               : 1 2 3 4 5 6 7 8 9 10 11 12 13 14 15 16
              eth1: 1 2 3
              eth2: 1 2 3 4 5 6 7 8 9 10 11 12 13 14 15 x

            """
        let parsed = NetworkSource.parse(Array(text.utf8))
        #expect(parsed.devices == [.init(name: "eth0", values: [123, 2, 0, 0, 456, 3, 0, 0])])
        #expect(parsed.malformedLines == 4)
    }

    @Test("rates across a 32-bit wrap, a 64-bit wrap, then a reset and a removed interface")
    func rates() async throws {
        let procRoot = try Fixtures.copy("x86-laptop-8core/proc")
        defer { Fixtures.remove(procRoot) }
        let clock = FakeTickClock(now: Self.start, maximumSleeps: 3) { number, _ in
            if number == 2 { Fixtures.replace("net/dev", in: procRoot, with: "x86-laptop-8core/proc-10s-later/net/dev") }
            if number == 3 { Fixtures.replace("net/dev", in: procRoot, with: "x86-laptop-8core/proc-counter-reset/net/dev") }
        }
        let sink = RecordingSink()
        let config = NetworkConfig(tags: [Tag("site", "lab")], procRoot: procRoot.path, exclude: ["lo", "docker*"])
        try await run(NetworkSource(name: "net", config: config, clock: clock), sink: sink)
        let records = sink.records
        // Tick 1 primes; tick 2: wlp2s0 and enp0s31f6, 8 metrics each; tick 3: wlp2s0 was reset (skipped).
        #expect(records.count == 16)
        #expect(Set(records.map(\.timestamp)) == [1_731_924_140_000_000_000])
        func value(_ interface: String, _ metric: String) -> Double? {
            records.first { $0.metric?.name == metric && $0.metric?.tags.first == Tag("interface", interface) }?.metric?.value
        }
        #expect(value("wlp2s0", "network.rx_bytes") == 1_000_000)  // 10,000,000 bytes across the 32-bit wrap, over 10 s
        #expect(value("wlp2s0", "network.rx_packets") == 100)
        #expect(value("wlp2s0", "network.rx_errors") == 0.1)
        #expect(value("wlp2s0", "network.rx_drops") == 1)
        #expect(value("wlp2s0", "network.tx_bytes") == 1_000_000)
        #expect(value("wlp2s0", "network.tx_drops") == 0)
        #expect(value("enp0s31f6", "network.rx_bytes") == 100_000)  // across the 64-bit wrap
        #expect(value("enp0s31f6", "network.tx_packets") == 10)
        #expect(records.prefix(8).map { $0.metric!.name } == NetworkSource.metrics.map(\.name))
        #expect(records.prefix(8).map { $0.metric!.unit } == [
            "bytes_per_second", "operations_per_second", "operations_per_second", "operations_per_second",
            "bytes_per_second", "operations_per_second", "operations_per_second", "operations_per_second",
        ])
        #expect(records.allSatisfy { $0.metric!.tags.count == 2 && $0.metric!.tags[1] == Tag("site", "lab") })
    }

    @Test("include and exclude lists")
    func includeExclude() async throws {
        let procRoot = try Fixtures.copy("x86-laptop-8core/proc")
        defer { Fixtures.remove(procRoot) }
        let clock = FakeTickClock(now: Self.start, maximumSleeps: 2) { number, _ in
            if number == 2 { Fixtures.replace("net/dev", in: procRoot, with: "x86-laptop-8core/proc-10s-later/net/dev") }
        }
        let sink = RecordingSink()
        try await run(
            NetworkSource(name: "net", config: NetworkConfig(procRoot: procRoot.path, include: ["w*", "lo"], exclude: []), clock: clock),
            sink: sink)
        #expect(Set(sink.records.compactMap { $0.metric?.tags.first?.value }) == ["wlp2s0", "lo"])
    }

    @Test("a missing net/dev warns once (the VM fixture has one, an empty root has none)")
    func missing() async throws {
        let empty = try Fixtures.temporaryDirectory()
        defer { try? FileManager.default.removeItem(at: empty) }
        let logs = LogCapture()
        let sink = RecordingSink()
        try await run(
            NetworkSource(name: "net", config: NetworkConfig(procRoot: empty.path), clock: FakeTickClock(now: Self.start, maximumSleeps: 5)),
            sink: sink, logger: logs.logger)
        #expect(sink.count == 0)
        #expect(logs.warnings.count == 1)
        #expect(logs.all.count == 1)
    }
}
