import Foundation
import Logging
import Synchronization

/// Keeps every log event of the logger it hands out, for tests that check what an operator would read. With
/// `UPLINK_TEST_LOG` set in the environment each event is written to stderr too.
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
    public var warnings: [Entry] { entries(at: .warning) }

    /// The events whose message contains `text` (at `level` if given).
    public func entries(containing text: String, at level: Logger.Level? = nil) -> [Entry] {
        all.filter { $0.message.contains(text) && (level == nil || $0.level == level) }
    }

    /// Whether an event's message contains `text` (at `level` if given).
    public func contains(_ text: String, at level: Logger.Level? = nil) -> Bool {
        !entries(containing: text, at: level).isEmpty
    }

    /// The events at `level`.
    public func entries(at level: Logger.Level) -> [Entry] { all.filter { $0.level == level } }

    fileprivate func append(_ entry: Entry) {
        entries.withLock { $0.append(entry) }
        if Self.echo { FileHandle.standardError.write(Data("\(entry)\n".utf8)) }
    }

    private static let echo = ProcessInfo.processInfo.environment["UPLINK_TEST_LOG"] != nil

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
