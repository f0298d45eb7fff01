import Logging
import Synchronization

/// Keeps every log event of the logger it hands out, for tests that check what an operator would read.
public final class LogCapture: Sendable {
    /// One event.
    public struct Entry: Sendable, CustomStringConvertible {
        public var level: Logger.Level
        public var message: String
        public var metadata: [String: String]

        public var description: String {
            "\(level) \(message) " + metadata.sorted { $0.key < $1.key }.map { "\($0.key)=\($0.value)" }.joined(separator: " ")
        }
    }

    private let entries = Mutex<[Entry]>([])
    private let level: Logger.Level

    /// A capture of events at `level` and above (every event by default).
    public init(level: Logger.Level = .trace) {
        self.level = level
    }

    /// A logger whose events this capture keeps.
    public var logger: Logger {
        var logger = Logger(label: "test") { _ in Handler(capture: self) }
        logger.logLevel = level
        return logger
    }

    /// Every event so far, in order.
    public var all: [Entry] { entries.withLock { $0 } }

    /// The events at `warning` level.
    public var warnings: [Entry] { all.filter { $0.level == .warning } }

    /// The events whose message contains `text`.
    public func entries(containing text: String) -> [Entry] { all.filter { $0.message.contains(text) } }

    fileprivate func append(_ entry: Entry) { entries.withLock { $0.append(entry) } }

    private struct Handler: LogHandler {
        let capture: LogCapture
        var metadata: Logger.Metadata = [:]
        var logLevel: Logger.Level = .trace

        func log(event: LogEvent) {
            var merged = metadata
            if let extra = event.metadata { merged.merge(extra) { $1 } }
            capture.append(Entry(level: event.level, message: "\(event.message)", metadata: merged.mapValues { "\($0)" }))
        }

        subscript(metadataKey key: String) -> Logger.Metadata.Value? {
            get { metadata[key] }
            set { metadata[key] = newValue }
        }
    }
}
