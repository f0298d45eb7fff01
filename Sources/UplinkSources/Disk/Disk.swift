import Logging
import UplinkCore

/// The `disk` source: space and inodes of the configured mount points, via `statvfs`.
///
/// On every tick it emits, per mount point (tag `mount_point`), `disk.total`, `disk.free`, `disk.used`
/// (bytes), `disk.used_percent` (percent) and `disk.inodes_total`, `disk.inodes_free`, `disk.inodes_used`
/// (count). A mount point that cannot be queried at start is left out with one warning; if none can, the
/// source returns after warning. A later failure warns once until the mount point works again.
public typealias DiskSource = ConfiguredSource<DiskConfig>

extension DiskConfig {
    /// Queries every mount point that works at start on every tick and emits its space and inodes.
    public func sample(with sensor: PeriodicSensorDriver) async {
        let (logger, emitter, clock) = (sensor.logger, sensor.emitter, sensor.clock)
        var queried: [(path: String, tags: [Tag], failing: Bool)] = []
        for path in mountPoints {
            switch DiskSource.usage(of: path) {
            case .success:
                queried.append((path, emitter.tags([Tag("mount_point", path)]), false))
            case .failure(let error):
                logger.warning("disk source: leaving out mount point \(path): \(error)", metadata: ["path": "\(path)"])
            }
        }
        guard !queried.isEmpty else {
            return sensor.disable("none of the mount points \(mountPoints) can be queried")
        }
        await sensor.run {
            for index in queried.indices {
                let mountPoint = queried[index]
                let result = DiskSource.usage(of: mountPoint.path)
                let timestamp = clock.nowNanoseconds()
                switch result {
                case .failure(let error):
                    if !mountPoint.failing {
                        queried[index].failing = true
                        logger.warning("disk source: cannot query \(mountPoint.path): \(error); skipping it until it works again")
                    }
                case .success(let usage):
                    if mountPoint.failing {
                        queried[index].failing = false
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
