import Foundation
import Testing
import UplinkCore

@testable import UplinkSources

@Suite("diskio")
struct DiskIOTests {
    static let start: Int64 = 1_731_924_123_250_000_000

    @Test("diskstats of three machines")
    func parse() throws {
        let x86 = DiskIOSource.parse(try Fixtures.bytes("x86-laptop-8core/proc/diskstats"))
        #expect(x86.malformedLines == 0)
        #expect(x86.devices.first == .init(name: "nvme0n1", values: [100_000, 8_000_000, 50_000, 4_000_000]))
        let arm = DiskIOSource.parse(try Fixtures.bytes("arm-board-4core/proc/diskstats"))
        #expect(arm.malformedLines == 0)
        #expect(arm.devices.map(\.name) == ["ram0", "loop0", "mmcblk0", "mmcblk0p1", "mmcblk0p2", "mmcblk0boot0"])
        #expect(arm.devices[2].values == [20000, 900_000, 8000, 300_000])
        let vm = DiskIOSource.parse(try Fixtures.bytes("vm-2core/proc/diskstats"))
        #expect(vm.devices.map(\.name) == ["vda", "vda1", "sr0"])
    }

    @Test("old partition lines with 4 counters; malformed lines counted")
    func malformed() {
        let text = """
               3    1 hda1 100 200 300 400
               8    0 sda 1 2 3 4 5 6 7 8 9 10 11
               8    1 sda1 1 2 3
            garbage
               x    0 sdb 1 2 3 4 5 6 7 8 9 10 11
               8   16 sdc 1 2 3 4 5 6 7 8 9 10 z

            """
        let parsed = DiskIOSource.parse(Array(text.utf8))
        #expect(parsed.devices == [.init(name: "hda1", values: [100, 200, 300, 400]), .init(name: "sda", values: [1, 3, 5, 7])])
        #expect(parsed.malformedLines == 4)
    }

    @Test("whole disks by name")
    func wholeDisks() {
        for name in ["sda", "sdaa", "vda", "xvda", "hda", "nvme0n1", "mmcblk0", "dm-0", "md0", "sr0", "zram0", "nbd0"] {
            #expect(DiskIOSource.isWholeDisk(name), "\(name)")
        }
        for name in ["sda1", "sdaa12", "vda1", "xvda1", "hda3", "nvme0n1p2", "mmcblk0p1", "mmcblk0boot0", "mmcblk0rpmb",
            "loop0", "ram0", "md0p1", ""]
        {
            #expect(!DiskIOSource.isWholeDisk(name), "\(name)")
        }
    }

    @Test("rates of whole disks, then a reset device skipped and a removed one forgotten")
    func rates() async throws {
        let procRoot = try Fixtures.copy("x86-laptop-8core/proc")
        defer { Fixtures.remove(procRoot) }
        let clock = FakeTickClock(now: Self.start, maximumSleeps: 3) { number, _ in
            if number == 2 { Fixtures.replace("diskstats", in: procRoot, with: "x86-laptop-8core/proc-10s-later/diskstats") }
            if number == 3 { Fixtures.replace("diskstats", in: procRoot, with: "x86-laptop-8core/proc-counter-reset/diskstats") }
        }
        let sink = RecordingSink()
        try await run(DiskIOSource(name: "io", config: DiskIOConfig(procRoot: procRoot.path), clock: clock), sink: sink)
        let records = sink.records
        let second: Int64 = 1_731_924_140_000_000_000
        let third: Int64 = 1_731_924_150_000_000_000
        #expect(Set(records.filter { $0.timestamp == second }.map { $0.metric!.tags[0].value }) == ["nvme0n1", "sda", "dm-0"])
        #expect(Set(records.filter { $0.timestamp == third }.map { $0.metric!.tags[0].value }) == ["nvme0n1"])
        func value(_ device: String, _ metric: String, at time: Int64 = 1_731_924_140_000_000_000) -> Double? {
            records.first { $0.timestamp == time && $0.metric?.name == metric && $0.metric?.tags == [Tag("device", device)] }?.metric?.value
        }
        #expect(value("nvme0n1", "diskio.read_bytes") == 1_048_576)
        #expect(value("nvme0n1", "diskio.write_bytes") == 2_097_152)
        #expect(value("nvme0n1", "diskio.reads") == 100)
        #expect(value("nvme0n1", "diskio.writes") == 50)
        #expect(value("sda", "diskio.reads") == 0)
        #expect(value("nvme0n1", "diskio.writes", at: third) == 50)
        #expect(records.prefix(4).map { $0.metric!.unit } == ["bytes_per_second", "bytes_per_second", "operations_per_second", "operations_per_second"])
    }

    @Test("the devices list selects by pattern, partitions included")
    func devicesList() async throws {
        let procRoot = try Fixtures.copy("x86-laptop-8core/proc")
        defer { Fixtures.remove(procRoot) }
        let clock = FakeTickClock(now: Self.start, maximumSleeps: 2) { number, _ in
            if number == 2 { Fixtures.replace("diskstats", in: procRoot, with: "x86-laptop-8core/proc-10s-later/diskstats") }
        }
        let sink = RecordingSink()
        try await run(
            DiskIOSource(name: "io", config: DiskIOConfig(procRoot: procRoot.path, devices: ["nvme0n1p*"]), clock: clock), sink: sink)
        #expect(Set(sink.records.map { $0.metric!.tags[0].value }) == ["nvme0n1p1", "nvme0n1p2"])
    }
}
