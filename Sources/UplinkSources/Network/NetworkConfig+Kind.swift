import UplinkConfig
import UplinkCore

/// `type: network`: its keys, decoding, documentation and example.
extension NetworkConfig {
    public static let typeName = "network"

    public static var defaults: NetworkConfig { NetworkConfig() }

    public static let summary = """
        Per-interface rates from `<proc_root>/net/dev`, tag `interface`: `network.rx_bytes`, `network.tx_bytes`
        (`bytes_per_second`), `network.rx_packets`, `network.tx_packets`, `network.rx_errors`, `network.tx_errors`,
        `network.rx_drops`, `network.tx_drops` (`operations_per_second`). The first sample only primes the counters. A counter
        that wrapped (32 or 64 bits) is followed; one that was reset (a driver reloaded) skips that interface for one
        interval.
        """

    public static let keys = SensorSchedule.keys + [
        .procRoot(),
        SourceKey(
            "include", "list of names", default: "all",
            "Interfaces to report; `*` matches any run of characters, `?` one (e.g. `[eth*, wlan0]`)."),
        SourceKey("exclude", "list of names", default: "`[lo]`", "Interfaces never reported, same patterns; wins over `include`."),
    ]

    public static let example = """
          # Per-interface rates from <proc_root>/net/dev: network.{rx,tx}_{bytes,packets,errors,drops} (per second).
          - name: network
            type: network
            interval: 10s
            proc_root: /proc
            include: []           # interface names to report, `*` and `?` wildcards (e.g. [eth*, wlan0]). Default: all.
            exclude: [lo]         # interface names never reported, same patterns. Default: [lo].
        """

    public mutating func decodeOwnKeys(_ mapping: ConfigMapping) {
        if let procRoot = mapping.string("proc_root") { self.procRoot = procRoot }
        if let include = mapping.strings("include") { self.include = include }
        if let exclude = mapping.strings("exclude") { self.exclude = exclude }
    }
}
