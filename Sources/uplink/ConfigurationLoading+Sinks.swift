import UplinkAgent
import UplinkCollector

extension CollectorConfiguration {
    /// `collector.sinks`, `collector.retention` and `collector.log` of a configuration file.
    mutating func applyForwarding(_ forwarding: UplinkFile.CollectorSection.ForwardingSection) {
        log = CollectorLogSettings(
            segmentBytes: Int64(forwarding.segmentBytes), segmentAge: forwarding.segmentAge,
            retentionBytes: Int64(forwarding.retentionBytes), retentionAge: forwarding.retentionAge)
        sinks = forwarding.sinks.map { sink in
            SinkConfiguration(
                name: sink.name, kind: SinkKind(rawValue: sink.kind.rawValue)!, batchMaxBytes: sink.batchMaxBytes,
                batchLinger: sink.batchLinger, backoff: sink.backoff, timeout: sink.timeout, url: sink.url, path: sink.path,
                headers: sink.headers.map { SinkConfiguration.HeaderField(name: $0.name, value: $0.value) },
                database: sink.database, table: sink.table, metricsTable: sink.metricsTable, user: sink.user,
                password: sink.password, createTable: sink.createTable,
                compression: sink.compression.flatMap { SinkCompression(rawValue: $0.rawValue) })
        }
    }
}
