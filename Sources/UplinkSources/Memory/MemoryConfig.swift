import UplinkCore

/// Configuration of a `memory` source, which samples `<proc_root>/meminfo`.
///
/// Every tick emits `memory.total`, `memory.available`, `memory.used` (total − available),
/// `memory.swap_total`, `memory.swap_free`, `memory.swap_used` in unit `bytes` and `memory.used_percent` in
/// unit `percent`, without tags.
public typealias MemoryConfig = MountRootSensorConfig<MemoryKind>

extension MemoryConfig {
    /// The file this configuration reads: `<proc_root>/meminfo`.
    public var meminfoPath: String { joinPath(mountRoot, "meminfo") }
}
