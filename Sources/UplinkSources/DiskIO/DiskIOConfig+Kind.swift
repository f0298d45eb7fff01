import UplinkConfig
import UplinkCore

/// `type: diskio`: its keys, decoding, documentation and example.
extension DiskIOConfig {
    public static let typeName = "diskio"

    public static var defaults: DiskIOConfig { DiskIOConfig() }

    public static let summary = """
        Per-device rates from `<proc_root>/diskstats`, tag `device`: `diskio.read_bytes`, `diskio.write_bytes`
        (`bytes_per_second`; sectors × 512, as the kernel counts them) and `diskio.reads`, `diskio.writes`
        (`operations_per_second`, completed requests). Wraps and resets as for `network`.
        """

    public static let keys = SensorSchedule.keys + [
        .procRoot(),
        SourceKey(
            "devices", "list of names", default: "whole disks",
            "Devices to report, `*` and `?` wildcards (e.g. `[sda, nvme*]`); may name partitions. By default every whole "
                + "disk: partitions (`sda1`, `nvme0n1p2`, `mmcblk0p1`, `mmcblk0boot0`), `loop*` and `ram*` are left out."),
    ]

    public static let example = """
          # Per-device rates from <proc_root>/diskstats: diskio.read_bytes, .write_bytes, .reads, .writes (per second).
          - name: diskio
            type: diskio
            interval: 10s
            proc_root: /proc
            devices: []           # device names, `*` wildcards (e.g. [sda, nvme*]). Default: every whole disk
                                  # (no partitions, loop or RAM disks).
        """

    public mutating func decodeOwnKeys(_ mapping: ConfigMapping) {
        if let procRoot = mapping.string("proc_root") { self.procRoot = procRoot }
        if let devices = mapping.strings("devices") { self.devices = devices }
    }
}
