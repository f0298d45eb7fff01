import UplinkConfig

// The sensors that read the kernel's files under where procfs or sysfs is mounted: the `proc_root` and `sys_root`
// keys, and the decoding of the kinds that have no other key of their own.

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
/// (`load`, `uptime`, `memory`) or `sys_root` (`hwmon`, `power`, `thermal`).
protocol MountRootSensorConfig: PeriodicSensorConfig {
    /// The key (`.procRoot()`, `.sysRoot()`) and the setting it fills (`\.procRoot`, `\.sysRoot`).
    static var mountRoot: (key: SourceKey, setting: WritableKeyPath<Self, String>) { get }
}

extension MountRootSensorConfig {
    /// The schedule's keys, then the mount point's.
    public static var keys: [SourceKey] { SensorSchedule.keys + [mountRoot.key] }

    /// Reads the mount point's key into its setting.
    public mutating func decodeOwnKeys(_ mapping: ConfigMapping) {
        if let root = mapping.string(Self.mountRoot.key.name) { self[keyPath: Self.mountRoot.setting] = root }
    }
}
