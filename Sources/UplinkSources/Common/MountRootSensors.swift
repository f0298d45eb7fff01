import UplinkConfig
import UplinkCore

// The sensors that read the kernel's files under where procfs or sysfs is mounted: the `proc_root` and `sys_root`
// keys, and the one configuration type of the kinds that have no other key of their own.

extension SourceKey {
    /// `proc_root`, the key of every sensor that reads procfs files: where procfs is mounted. A kind whose docs say
    /// more (a container observing its host) passes its own `description`.
    static func procRoot(_ description: String = "Where procfs is mounted.") -> SourceKey {
        SourceKey("proc_root", "path", default: "`/proc`", description)
    }

    /// `sys_root`, the key of every sensor that reads sysfs attributes: where sysfs is mounted. A kind whose docs say
    /// more passes its own `description`.
    static func sysRoot(_ description: String = "Where sysfs is mounted.") -> SourceKey {
        SourceKey("sys_root", "path", default: "`/sys`", description)
    }
}

/// A sensor kind whose one key besides the schedule is where the kernel file system it reads is mounted: `proc_root`
/// (`load`, `uptime`, `memory`, through `ProcfsSensorKind`) or `sys_root` (`hwmon`, `power`, `thermal`, through
/// `SysfsSensorKind`).
///
/// The kind supplies its name, documentation and sampling; its configuration type is
/// `MountRootSensorConfig<Kind>`, which the kind's folder names `<Kind>Config` (`LoadConfig`, …) and which lists,
/// decodes and holds the keys.
public protocol MountRootSensorKind: Sendable {
    /// The kind's name in the configuration (`SourceKindConfig.typeName`).
    static var typeName: String { get }

    /// The kind's documentation (`SourceKindConfig.summary`).
    static var summary: String { get }

    /// The kind's example block (`SourceKindConfig.example`).
    static var example: String { get }

    /// The mount point's key: `.procRoot()` or `.sysRoot()`, with the kind's own description where it says more.
    static var mountRootKey: SourceKey { get }

    /// Where the file system is mounted unless configured: `/proc` or `/sys`.
    static var defaultMountRoot: String { get }

    /// Samples with `config` on `sensor` (`PeriodicSensorConfig.sample(with:)`).
    static func sample(_ config: MountRootSensorConfig<Self>, with sensor: PeriodicSensorDriver) async
}

/// A `MountRootSensorKind` that reads procfs: its key is `proc_root`, default `/proc`.
public protocol ProcfsSensorKind: MountRootSensorKind {}

extension ProcfsSensorKind {
    /// `proc_root` with the common description.
    public static var mountRootKey: SourceKey { .procRoot() }

    /// `/proc`.
    public static var defaultMountRoot: String { "/proc" }
}

/// A `MountRootSensorKind` that reads sysfs: its key is `sys_root`, default `/sys`.
public protocol SysfsSensorKind: MountRootSensorKind {}

extension SysfsSensorKind {
    /// `sys_root` with the common description.
    public static var mountRootKey: SourceKey { .sysRoot() }

    /// `/sys`.
    public static var defaultMountRoot: String { "/sys" }
}

/// The configuration of a sensor kind that reads the files under one mount point (`MountRootSensorKind`): its
/// schedule and where the file system is mounted.
public struct MountRootSensorConfig<Kind: MountRootSensorKind>: PeriodicSensorConfig {
    /// When the source samples and the tags it adds (YAML keys `interval`, `jitter`, `tags`; see `SensorSchedule`).
    public var schedule: SensorSchedule

    /// Directory where the file system the kind reads is mounted (YAML key `proc_root` or `sys_root`, a path;
    /// `Kind.mountRootKey`). Default: `Kind.defaultMountRoot`, `"/proc"` or `"/sys"`.
    public var mountRoot: String

    /// A configuration with the given schedule and mount point.
    public init(schedule: SensorSchedule, mountRoot: String) {
        self.schedule = schedule
        self.mountRoot = mountRoot
    }

    /// The kind's name (`Kind.typeName`).
    public static var typeName: String { Kind.typeName }

    /// The kind's documentation (`Kind.summary`).
    public static var summary: String { Kind.summary }

    /// The kind's example block (`Kind.example`).
    public static var example: String { Kind.example }

    /// The default schedule, and the file system where it is mounted by default (`Kind.defaultMountRoot`).
    public static var defaults: Self { Self(schedule: SensorSchedule(), mountRoot: Kind.defaultMountRoot) }

    /// The schedule's keys, then the mount point's.
    public static var keys: [SourceKey] { SensorSchedule.keys + [Kind.mountRootKey] }

    /// Reads the mount point's key into `mountRoot`.
    public mutating func decodeOwnKeys(_ mapping: ConfigMapping) {
        if let root = mapping.string(Kind.mountRootKey.name) { mountRoot = root }
    }

    /// Samples as the kind does (`Kind.sample(_:with:)`).
    public func sample(with sensor: PeriodicSensorDriver) async {
        await Kind.sample(self, with: sensor)
    }
}

extension MountRootSensorConfig where Kind: ProcfsSensorKind {
    /// A configuration with the given settings; each default is the one documented on `SensorSchedule` and
    /// `mountRoot`.
    public init(interval: Duration = .seconds(10), jitter: Duration = .zero, tags: [Tag] = [], procRoot: String = Kind.defaultMountRoot) {
        self.init(schedule: SensorSchedule(interval: interval, jitter: jitter, tags: tags), mountRoot: procRoot)
    }
}

extension MountRootSensorConfig where Kind: SysfsSensorKind {
    /// A configuration with the given settings; each default is the one documented on `SensorSchedule` and
    /// `mountRoot`.
    public init(interval: Duration = .seconds(10), jitter: Duration = .zero, tags: [Tag] = [], sysRoot: String = Kind.defaultMountRoot) {
        self.init(schedule: SensorSchedule(interval: interval, jitter: jitter, tags: tags), mountRoot: sysRoot)
    }
}
