import CoreMetrics
import Prometheus
import Synchronization

/// The process's Prometheus exposition, rendered as the text format 0.0.4 that `/metrics` serves on the agent
/// (`agent.metrics_listen`) and on the collector.
///
/// Most series are read when scraped: the agent and the collector keep each count once, in their statistics
/// snapshots (`UplinkStatistics`, `RingStatistics`, `CollectorStatistics`, …, which `/v1/status` and the fleet page
/// show), and a scrape hook brings the series up to those counts (`counter(_:labels:)`, `ScrapedCounter`). The few
/// counts that no snapshot holds (remote configuration's applies and downloads) are swift-metrics counters: this is
/// also swift-metrics' backend once `bootstrap()` ran. The backend can be set only once per process: call
/// `MetricsExposition.bootstrap()` at start, before any agent or collector is created.
///
/// Nothing here runs between scrapes: scrape hooks run only inside `render()`, so an idle process with the
/// endpoint enabled costs nothing until it is asked.
public final class MetricsExposition: Sendable {
    /// Where the series live; hooks and `ScrapedCounter`s create theirs here.
    public let registry: PrometheusCollectorRegistry
    private let hooks = Mutex<(next: Int, byID: [Int: @Sendable () -> Void])>((0, [:]))
    private let scrapedCounters = Mutex<[ScrapedCounter.Key: ScrapedCounter]>([:])

    /// An exposition of its own, not connected to swift-metrics (tests; hooks only).
    public init() {
        self.registry = PrometheusCollectorRegistry()
    }

    private static let process = Mutex<MetricsExposition?>(nil)

    /// The process's exposition, made swift-metrics' backend on the first call; later calls return the same one.
    public static func bootstrap() -> MetricsExposition {
        process.withLock { shared in
            if let shared { return shared }
            let exposition = MetricsExposition()
            MetricsSystem.bootstrap(HelpTextMetricsFactory(registry: exposition.registry))
            shared = exposition
            return exposition
        }
    }

    /// A swift-metrics factory whose counters and gauges are series of this exposition, with their help texts (what
    /// `bootstrap()` installs as the process's backend). Code that takes a factory can be pointed at an exposition
    /// of its own with it, without bootstrapping the process (tests).
    public var factory: any MetricsFactory { HelpTextMetricsFactory(registry: registry) }

    /// The process's exposition if `bootstrap()` was called, else nil.
    public static var current: MetricsExposition? { process.withLock { $0 } }

    /// Runs `update` at the start of every `render()`, to set series from values read on demand. Returns a token
    /// for `removeScrapeHook(_:)`.
    @discardableResult
    public func addScrapeHook(_ update: @escaping @Sendable () -> Void) -> ScrapeHook {
        hooks.withLock { hooks in
            defer { hooks.next += 1 }
            hooks.byID[hooks.next] = update
            return ScrapeHook(id: hooks.next)
        }
    }

    /// The counter `name{labels}` that follows a cumulative count kept elsewhere, created on first use. Every call
    /// for the same series returns the same one, so a hook registered again (an endpoint restarted) continues from
    /// what the series shows instead of adding the whole count a second time. One count feeds one series: where
    /// several owners count into a series, their hook passes the sum.
    public func counter(_ name: String, labels: [(String, String)] = []) -> ScrapedCounter {
        let key = ScrapedCounter.Key(name: name, labels: labels.map { [$0.0, $0.1] })
        return scrapedCounters.withLock { counters in
            if let existing = counters[key] { return existing }
            let counter = ScrapedCounter(registry, name: name, labels: labels)
            counters[key] = counter
            return counter
        }
    }

    /// The counter `name{labels}` fed from one count of a statistics snapshot: `update(from:)` brings it up to
    /// `count(snapshot)`.
    public func counter<Snapshot>(
        _ name: String, labels: [(String, String)] = [], from count: @escaping @Sendable (Snapshot) -> UInt64
    ) -> SnapshotCounter<Snapshot> {
        SnapshotCounter(counter: counter(name, labels: labels), count: count)
    }

    /// The counter `name{labels}` fed from one count of a statistics snapshot (an `Int` count).
    public func counter<Snapshot>(
        _ name: String, labels: [(String, String)] = [], from count: @escaping @Sendable (Snapshot) -> Int
    ) -> SnapshotCounter<Snapshot> {
        counter(name, labels: labels, from: { UInt64(max(0, count($0))) })
    }

    /// Stops calling a hook (its owner stopped). Its series stay, with their last values.
    public func removeScrapeHook(_ hook: ScrapeHook) {
        _ = hooks.withLock { $0.byID.removeValue(forKey: hook.id) }
    }

    /// The exposition text: runs the scrape hooks, then writes every series.
    public func render() -> [UInt8] {
        let updates = hooks.withLock { $0.byID.sorted { $0.key < $1.key }.map(\.value) }
        for update in updates { update() }
        var buffer: [UInt8] = []
        registry.emit(into: &buffer)
        return buffer
    }

    /// The `Content-Type` of `render()`'s text.
    public static let contentType = "text/plain; version=0.0.4; charset=utf-8"
}

/// Identifies a hook added with `MetricsExposition.addScrapeHook(_:)`.
public struct ScrapeHook: Sendable, Hashable {
    let id: Int
}

/// A Prometheus counter fed from a cumulative count kept elsewhere (a statistics snapshot): each `update(to:)`
/// adds what the count grew by since the previous one. A count that went down (its owner restarted in-process) is
/// taken as a reset: the counter then grows by the new count, as Prometheus' `rate()` expects after a reset.
/// Made by `MetricsExposition.counter(_:labels:)`, one per series.
public final class ScrapedCounter: Sendable {
    struct Key: Hashable {
        let name: String
        let labels: [[String]]
    }

    private let counter: Prometheus.Counter
    private let last = Mutex<UInt64>(0)

    /// The series `name{labels}` in `registry`, with the help text of `SeriesCatalog`.
    fileprivate init(_ registry: PrometheusCollectorRegistry, name: String, labels: [(String, String)]) {
        counter = registry.makeCounter(descriptor: .exactly(name), labels: labels)
    }

    /// Brings the counter up to `total`.
    public func update(to total: Int) { update(to: UInt64(max(0, total))) }

    /// Brings the counter up to `total`.
    public func update(to total: UInt64) {
        let delta = last.withLock { last -> UInt64 in
            defer { last = total }
            return total >= last ? total - last : total
        }
        if delta > 0 { counter.increment(by: Int64(clamping: delta)) }
    }
}

/// A counter series that follows one count of a statistics snapshot (`MetricsExposition.counter(_:labels:from:)`).
public struct SnapshotCounter<Snapshot>: Sendable {
    let counter: ScrapedCounter
    let count: @Sendable (Snapshot) -> UInt64

    /// Brings the series up to the count in `snapshot`.
    public func update(from snapshot: Snapshot) { counter.update(to: count(snapshot)) }
}

extension MetricNameDescriptor {
    /// A descriptor whose full name is `name` as given (no namespace, subsystem or unit suffix added), with the
    /// help text of `SeriesCatalog`.
    public static func exactly(_ name: String) -> MetricNameDescriptor {
        MetricNameDescriptor(metricName: name, unitName: "", helpText: SeriesCatalog.help(name))
    }
}

extension PrometheusCollectorRegistry {
    /// The gauge `name{labels}`, created on first use, with the help text of `SeriesCatalog`.
    public func gauge(_ name: String, labels: [(String, String)] = []) -> Prometheus.Gauge {
        makeGauge(descriptor: .exactly(name), labels: labels)
    }
}

/// swift-prometheus' `PrometheusMetricsFactory`, except that each series gets its `# HELP` text from
/// `SeriesCatalog` (swift-metrics has no help text, and that factory registers every series without one). A
/// registry wants the same help text for every label set of a name, which one catalog guarantees.
struct HelpTextMetricsFactory: MetricsFactory {
    private let base: PrometheusMetricsFactory
    private var registry: PrometheusCollectorRegistry { base.registry }

    init(registry: PrometheusCollectorRegistry) {
        base = PrometheusMetricsFactory(registry: registry)
    }

    func makeCounter(label: String, dimensions: [(String, String)]) -> any CounterHandler {
        registry.makeCounter(descriptor: .exactly(label), labels: dimensions)
    }

    func makeFloatingPointCounter(label: String, dimensions: [(String, String)]) -> any FloatingPointCounterHandler {
        registry.makeCounter(descriptor: .exactly(label), labels: dimensions)
    }

    func makeRecorder(label: String, dimensions: [(String, String)], aggregate: Bool) -> any RecorderHandler {
        guard aggregate else { return registry.makeGauge(descriptor: .exactly(label), labels: dimensions) }
        return registry.makeValueHistogram(
            descriptor: .exactly(label), labels: dimensions,
            buckets: base.valueHistogramBuckets[label] ?? base.defaultValueHistogramBuckets)
    }

    func makeMeter(label: String, dimensions: [(String, String)]) -> any MeterHandler {
        registry.makeGauge(descriptor: .exactly(label), labels: dimensions)
    }

    func makeTimer(label: String, dimensions: [(String, String)]) -> any TimerHandler {
        registry.makeDurationHistogram(
            descriptor: .exactly(label), labels: dimensions,
            buckets: base.durationHistogramBuckets[label] ?? base.defaultDurationHistogramBuckets)
    }

    func destroyCounter(_ handler: any CounterHandler) { base.destroyCounter(handler) }
    func destroyFloatingPointCounter(_ handler: any FloatingPointCounterHandler) {
        base.destroyFloatingPointCounter(handler)
    }
    func destroyRecorder(_ handler: any RecorderHandler) { base.destroyRecorder(handler) }
    func destroyMeter(_ handler: any MeterHandler) { base.destroyMeter(handler) }
    func destroyTimer(_ handler: any TimerHandler) { base.destroyTimer(handler) }
}
