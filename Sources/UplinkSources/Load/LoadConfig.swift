import UplinkCore

/// Configuration of a `load` source, which samples `<proc_root>/loadavg`.
///
/// Every tick emits `load.1m`, `load.5m` and `load.15m` (the run-queue averages over 1, 5 and 15 minutes, no
/// unit), tagged only with the configured `tags`.
public typealias LoadConfig = MountRootSensorConfig<LoadKind>

extension LoadConfig {
    /// The file this configuration reads: `<proc_root>/loadavg`.
    public var loadavgPath: String { joinPath(mountRoot, "loadavg") }
}
