import UplinkCore

/// Configuration of an `uptime` source, which samples `<proc_root>/uptime`.
///
/// Every tick emits `uptime.seconds` (unit `seconds`): the time since the system booted.
public typealias UptimeConfig = MountRootSensorConfig<UptimeKind>

extension UptimeConfig {
    /// The file this configuration reads: `<proc_root>/uptime`.
    public var uptimePath: String { joinPath(mountRoot, "uptime") }
}
