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

/// A sensor kind whose one key besides the schedule is `proc_root` (`load`, `uptime`, `memory`).
protocol ProcfsRootSensorConfig: PeriodicSensorConfig {
    /// Where procfs is mounted (YAML key `proc_root`).
    var procRoot: String { get set }
}

extension ProcfsRootSensorConfig {
    /// The schedule's keys, then `proc_root`.
    public static var keys: [SourceKey] { SensorSchedule.keys + [.procRoot()] }

    /// Reads `proc_root`.
    public mutating func decodeOwnKeys(_ mapping: ConfigMapping) {
        if let procRoot = mapping.string("proc_root") { self.procRoot = procRoot }
    }
}

/// A sensor kind whose one key besides the schedule is `sys_root` (`hwmon`, `power`, `thermal`).
protocol SysfsRootSensorConfig: PeriodicSensorConfig {
    /// Where sysfs is mounted (YAML key `sys_root`).
    var sysRoot: String { get set }
}

extension SysfsRootSensorConfig {
    /// The schedule's keys, then `sys_root`.
    public static var keys: [SourceKey] { SensorSchedule.keys + [.sysRoot()] }

    /// Reads `sys_root`.
    public mutating func decodeOwnKeys(_ mapping: ConfigMapping) {
        if let sysRoot = mapping.string("sys_root") { self.sysRoot = sysRoot }
    }
}
