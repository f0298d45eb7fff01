import Foundation
import Testing
import UplinkTestSupport
import UplinkCore

@testable import UplinkSources

@Suite("disk")
struct DiskTests {
    static let start: Int64 = 1_731_924_123_250_000_000

    @Test("usage arithmetic: df's used percent, saturating sizes")
    func usage() {
        let usage = DiskSource.Usage(fragmentSize: 4096, blocks: 1000, blocksFree: 300, blocksAvailable: 250, files: 100, filesFree: 40)
        #expect(usage.total == 4_096_000)
        #expect(usage.free == 1_024_000)
        #expect(usage.used == 2_867_200)
        #expect(usage.usedPercent == 700.0 / 950.0 * 100)
        #expect(usage.inodesUsed == 60)
        let empty = DiskSource.Usage(fragmentSize: 4096, blocks: 0, blocksFree: 0, blocksAvailable: 0, files: 0, filesFree: 0)
        #expect(empty.usedPercent == nil)
        let absurd = DiskSource.Usage(fragmentSize: 1 << 40, blocks: 1 << 40, blocksFree: 1 << 41, blocksAvailable: 0, files: 1, filesFree: 5)
        #expect(absurd.total == .max)
        #expect(absurd.used == 0)
        #expect(absurd.inodesUsed == 0)
    }

    @Test("the root file system and a temporary directory report consistent figures")
    func real() async throws {
        let directory = try Fixtures.temporaryDirectory()
        let sink = RecordingSink()
        let logs = LogCapture()
        let config = DiskConfig(tags: [Tag("host", "t")], mountPoints: ["/", directory.path])
        try await run(DiskSource(name: "disk", config: config, clock: FakeTickClock(now: Self.start, maximumSleeps: 1)), sink: sink, logger: logs.logger)
        #expect(logs.warnings.isEmpty)
        let root = sink.records.filter { $0.metric?.tags.first == Tag("mount_point", "/") }
        let names = root.map { $0.metric!.name }
        #expect(names.prefix(4) == ["disk.total", "disk.free", "disk.used", "disk.used_percent"])
        func value(_ name: String) -> Double { root.first { $0.metric?.name == name }?.metric?.value ?? -1 }
        #expect(value("disk.total") > 0)
        #expect(value("disk.used") + value("disk.free") <= value("disk.total"))
        #expect(value("disk.used_percent") >= 0 && value("disk.used_percent") <= 100)
        #expect(root.allSatisfy { $0.metric!.tags.last == Tag("host", "t") })
        #expect(sink.records.contains { $0.metric?.tags.first == Tag("mount_point", directory.path) })
    }

    @Test("a missing mount point is left out with one warning; none at all disables the source")
    func missing() async throws {
        let logs = LogCapture()
        let sink = RecordingSink()
        try await run(
            DiskSource(name: "disk", config: DiskConfig(mountPoints: ["/nonexistent-uplink", "/"]), clock: FakeTickClock(now: Self.start, maximumSleeps: 3)),
            sink: sink, logger: logs.logger)
        #expect(logs.warnings.count == 1)
        #expect(sink.records.allSatisfy { $0.metric?.tags.first == Tag("mount_point", "/") })
        #expect(sink.count > 0)

        let none = LogCapture()
        let clock = FakeTickClock(now: Self.start, maximumSleeps: 3)
        try await run(DiskSource(name: "disk", config: DiskConfig(mountPoints: ["/nonexistent-uplink"]), clock: clock), sink: RecordingSink(), logger: none.logger)
        #expect(none.warnings.count == 2)
        #expect(clock.deadlines.isEmpty)
    }
}
