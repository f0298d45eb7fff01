import Logging
import UplinkCore

/// The `disk` source: space and inodes of the configured mount points, via `statvfs`.
///
/// On every tick it emits, per mount point (tag `mount_point`), `disk.total`, `disk.free`, `disk.used`
/// (bytes), `disk.used_percent` (percent) and `disk.inodes_total`, `disk.inodes_free`, `disk.inodes_used`
/// (count). A mount point that cannot be queried at start is left out with one warning; if none can, the
/// source returns after warning. A later failure warns once until the mount point works again.
public struct DiskSource: Source {
    public let name: String
    public let config: DiskConfig
    /// The clock ticks and timestamps come from (injectable for tests).
    public let clock: any TickClock

    public init(name: String, config: DiskConfig = DiskConfig(), clock: any TickClock = SystemTickClock()) {
        self.name = name
        self.config = config
        self.clock = clock
    }

    public func run(context: SourceContext) async throws {
        let logger = context.logger
        var mountPoints: [(path: String, tags: [Tag], failing: Bool)] = []
        let sensor = PeriodicSensorDriver(config, source: name, clock: clock, context: context)
        let emitter = sensor.emitter
        for path in config.mountPoints {
            switch Self.usage(of: path) {
            case .success:
                mountPoints.append((path, emitter.tags([Tag("mount_point", path)]), false))
            case .failure(let error):
                logger.warning("disk source: leaving out mount point \(path): \(error)", metadata: ["path": "\(path)"])
            }
        }
        guard !mountPoints.isEmpty else {
            logger.warning("disk source disabled: none of the mount points \(config.mountPoints) can be queried")
            return
        }
        await sensor.run {
            for index in mountPoints.indices {
                let mountPoint = mountPoints[index]
                let result = Self.usage(of: mountPoint.path)
                let timestamp = clock.nowNanoseconds()
                switch result {
                case .failure(let error):
                    if !mountPoint.failing {
                        mountPoints[index].failing = true
                        logger.warning("disk source: cannot query \(mountPoint.path): \(error); skipping it until it works again")
                    }
                case .success(let usage):
                    if mountPoint.failing {
                        mountPoints[index].failing = false
                        logger.notice("disk source: \(mountPoint.path) can be queried again")
                    }
                    func emit(_ metric: String, _ value: Double, _ unit: String) {
                        emitter.emit(metric, value, unit: unit, tags: mountPoint.tags, tagsAreComplete: true, timestamp: timestamp)
                    }
                    emit("disk.total", Double(usage.total), MetricUnit.bytes)
                    emit("disk.free", Double(usage.free), MetricUnit.bytes)
                    emit("disk.used", Double(usage.used), MetricUnit.bytes)
                    if let percent = usage.usedPercent { emit("disk.used_percent", percent, MetricUnit.percent) }
                    if usage.inodesTotal > 0 {
                        emit("disk.inodes_total", Double(usage.inodesTotal), MetricUnit.count)
                        emit("disk.inodes_free", Double(usage.inodesFree), MetricUnit.count)
                        emit("disk.inodes_used", Double(usage.inodesUsed), MetricUnit.count)
                    }
                }
            }
        }
    }
}
