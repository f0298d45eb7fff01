extension NetworkSource {
    /// Metric names and units, in the order of the parsed `DeviceCounters.values`.
    static var metrics: [(name: String, unit: String)] {
        [
            ("network.rx_bytes", MetricUnit.bytesPerSecond), ("network.rx_packets", MetricUnit.operationsPerSecond),
            ("network.rx_errors", MetricUnit.operationsPerSecond), ("network.rx_drops", MetricUnit.operationsPerSecond),
            ("network.tx_bytes", MetricUnit.bytesPerSecond), ("network.tx_packets", MetricUnit.operationsPerSecond),
            ("network.tx_errors", MetricUnit.operationsPerSecond), ("network.tx_drops", MetricUnit.operationsPerSecond),
        ]
    }
}
