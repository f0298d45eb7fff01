import UplinkCore

// The one place that lists every source kind. Adding a kind means: a folder `<Kind>/` with `<Kind>.swift`,
// `<Kind>Config.swift` and `<Kind>+<Concern>.swift` files, a case in `SourceKind`, a case in `SourceConfig`,
// and a line in each `switch` below (the compiler points at every one of them).

/// Every kind of source the agent can run, named as in the configuration (`sources[].type`).
public enum SourceKind: String, Sendable, Equatable, Hashable, CaseIterable {
    /// CPU time percentages from `/proc/stat` (`CPUSource`, `CPUConfig`).
    case cpu = "cpu"
    /// RAM and swap usage from `/proc/meminfo` (`MemorySource`, `MemoryConfig`).
    case memory = "memory"
    /// Synthetic log records for tests and benchmarks (`GeneratorSource`, `GeneratorConfig`).
    case generator = "generator"
    /// Load averages from `/proc/loadavg` (`LoadSource`, `LoadConfig`).
    case load = "load"
    /// Seconds since boot from `/proc/uptime` (`UptimeSource`, `UptimeConfig`).
    case uptime = "uptime"
    /// Per-interface traffic rates from `/proc/net/dev` (`NetworkSource`, `NetworkConfig`).
    case network = "network"
    /// Per-device I/O rates from `/proc/diskstats` (`DiskIOSource`, `DiskIOConfig`).
    case diskio = "diskio"
    /// Space and inodes of mount points, via `statvfs` (`DiskSource`, `DiskConfig`).
    case disk = "disk"
    /// Thermal zone temperatures from `/sys/class/thermal` (`ThermalSource`, `ThermalConfig`).
    case thermal = "thermal"
    /// Hardware monitoring chips from `/sys/class/hwmon` (`HwmonSource`, `HwmonConfig`).
    case hwmon = "hwmon"
    /// Batteries, UPSes and mains from `/sys/class/power_supply` (`PowerSource`, `PowerConfig`).
    case power = "power"
    /// One numeric value from any file (`SysfsSource`, `SysfsConfig`).
    case sysfs = "sysfs"
    /// Metrics printed by a command (`ExecSource`, `ExecConfig`).
    case exec = "exec"
    /// Lines of log files, followed through rotation with checkpoints (`TailSource`, `TailConfig`).
    case tail = "tail"
    /// Entries of the systemd journal, read through libsystemd with a cursor checkpoint (`JournaldSource`,
    /// `JournaldConfig`).
    case journald = "journald"

    /// The name of the kind in the configuration (`type: cpu`).
    public var typeName: String { rawValue }

    /// The kind with the given configuration name, or `nil` for an unknown name.
    public init?(typeName: String) {
        self.init(rawValue: typeName)
    }

    /// The configuration of this kind with every setting at its default.
    public var defaultConfig: SourceConfig {
        switch self {
        case .cpu: .cpu(CPUConfig())
        case .memory: .memory(MemoryConfig())
        case .generator: .generator(GeneratorConfig())
        case .load: .load(LoadConfig())
        case .uptime: .uptime(UptimeConfig())
        case .network: .network(NetworkConfig())
        case .diskio: .diskio(DiskIOConfig())
        case .disk: .disk(DiskConfig())
        case .thermal: .thermal(ThermalConfig())
        case .hwmon: .hwmon(HwmonConfig())
        case .power: .power(PowerConfig())
        case .sysfs: .sysfs(SysfsConfig())
        case .exec: .exec(ExecConfig())
        case .tail: .tail(TailConfig())
        case .journald: .journald(JournaldConfig())
        }
    }
}

/// The typed configuration of one source, one case per `SourceKind`.
public enum SourceConfig: Sendable, Equatable {
    case cpu(CPUConfig)
    case memory(MemoryConfig)
    case generator(GeneratorConfig)
    case load(LoadConfig)
    case uptime(UptimeConfig)
    case network(NetworkConfig)
    case diskio(DiskIOConfig)
    case disk(DiskConfig)
    case thermal(ThermalConfig)
    case hwmon(HwmonConfig)
    case power(PowerConfig)
    case sysfs(SysfsConfig)
    case exec(ExecConfig)
    case tail(TailConfig)
    case journald(JournaldConfig)

    /// The kind this configuration is for.
    public var kind: SourceKind {
        switch self {
        case .cpu: .cpu
        case .memory: .memory
        case .generator: .generator
        case .load: .load
        case .uptime: .uptime
        case .network: .network
        case .diskio: .diskio
        case .disk: .disk
        case .thermal: .thermal
        case .hwmon: .hwmon
        case .power: .power
        case .sysfs: .sysfs
        case .exec: .exec
        case .tail: .tail
        case .journald: .journald
        }
    }
}

/// Builds the source a configuration describes.
/// - Parameters:
///   - name: The source's unique name within the agent (`sources[].name`).
///   - config: Its typed configuration.
///   - clock: The clock the sensors (every kind but the generator) tick by; the real clock unless a test injects one.
public func makeSource(name: String, config: SourceConfig, clock: any TickClock = SystemTickClock()) -> any Source {
    switch config {
    case .cpu(let cpu): CPUSource(name: name, config: cpu, clock: clock)
    case .memory(let memory): MemorySource(name: name, config: memory, clock: clock)
    case .generator(let generator): GeneratorSource(name: name, config: generator)
    case .load(let load): LoadSource(name: name, config: load, clock: clock)
    case .uptime(let uptime): UptimeSource(name: name, config: uptime, clock: clock)
    case .network(let config): NetworkSource(name: name, config: config, clock: clock)
    case .diskio(let config): DiskIOSource(name: name, config: config, clock: clock)
    case .disk(let config): DiskSource(name: name, config: config, clock: clock)
    case .thermal(let config): ThermalSource(name: name, config: config, clock: clock)
    case .hwmon(let config): HwmonSource(name: name, config: config, clock: clock)
    case .power(let config): PowerSource(name: name, config: config, clock: clock)
    case .sysfs(let config): SysfsSource(name: name, config: config, clock: clock)
    case .exec(let config): ExecSource(name: name, config: config, clock: clock)
    case .tail(let config): TailSource(name: name, config: config)
    case .journald(let config): JournaldSource(name: name, config: config)
    }
}
