import Logging
import UplinkCore
import UplinkFiles

/// Deletes the log's closed segments (never the active one):
///
/// - once every sink's cursor has passed a segment, it is deleted (nothing needs it any more);
/// - when the log is larger than `retentionBytes`, or a closed segment's last write is older than
///   `retentionAge`, the oldest segments go even if a sink has not forwarded them: the records are lost for that
///   sink, which is logged at error level and counted in its `SinkStatistics.recordsLost`.
///
/// Runs on a thread pool whenever `CollectorLog.retentionChanges` moves (a segment closed, a cursor persisted) and
/// when the oldest closed segment reaches `retentionAge`.
enum LogRetention {
    /// Deletes what may go; returns how many seconds from `now` the oldest closed segment it kept reaches the age
    /// limit (nil when no closed segment is left).
    @discardableResult
    static func sweep(
        log: CollectorLog, settings: CollectorLogSettings, forwarders: [Forwarder], now: Int64, logger: Logger
    ) -> Int64? {
        let segments = log.segments
        guard segments.count > 1 else { return nil }
        var total = log.committedEnd - segments[0].base
        for index in 0..<(segments.count - 1) {
            let segment = segments[index]
            let end = segments[index + 1].base
            let behind = forwarders.filter { $0.cursor < end }
            let modified = FileStatus(path: segment.path).map { $0.modified / 1_000_000_000 } ?? now
            let tooBig = total > settings.retentionBytes
            let tooOld = now - modified >= Int64(settings.retentionAge.seconds)
            guard behind.isEmpty || tooBig || tooOld else {
                return max(0, Int64(settings.retentionAge.seconds) - (now - modified))
            }
            if !behind.isEmpty {
                for forwarder in behind {
                    let lost = LogReader.countLines(segment, from: max(forwarder.cursor, segment.base), to: end)
                    forwarder.statistics.update { $0.recordsLost += lost }
                    logger.error(
                        "Retention deletes a log segment this sink has not forwarded: its records are lost for it",
                        metadata: [
                            "sink": "\(forwarder.configuration.name)", "segment": "\(segment.path)", "records": "\(lost)",
                            "reason": "\(tooBig ? "collector.retention.max_bytes" : "collector.retention.max_age")",
                        ])
                }
            }
            log.forget(segment)
            FileIO.removeFile(segment.path)
            total -= end - segment.base
        }
        return nil
    }
}
