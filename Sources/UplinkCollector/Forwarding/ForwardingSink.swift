import NIOCore
import UplinkCore
import UplinkWire

/// One record of the log, decoded, with its idempotent key: (agent, epoch, sequence) for every record and, for
/// file lines, (agent, origin, offset) in `record`'s `LogLine.origin`.
public struct LogEntry: Sendable, Equatable {
    /// The agent id.
    public var agent: String
    /// The agent's stream epoch.
    public var epoch: UInt64
    /// The record's sequence within the epoch.
    public var sequence: UInt64
    /// The record.
    public var record: Record

    /// The entry of one stored line (without its newline), nil when the line is not a stored record.
    public static func parse(_ line: UnsafeRawBufferPointer) -> LogEntry? {
        guard let stream = StorageRecovery.parseStoredPrefix(line),
            case .record(let sequence, let record)? = try? WireLineParser.decode(line)
        else { return nil }
        return LogEntry(agent: stream.agent, epoch: stream.epoch, sequence: sequence, record: record)
    }
}

/// What a forwarder hands a sink: whole stored lines of the log, in log order, and their decoded entries.
public struct ForwardBatch: Sendable {
    /// The stored lines, each ending in `\n` (the log's own bytes: `{"agent":…,"epoch":…,"seq":…}`).
    public var lines: ByteBuffer
    /// The lines' entries, in the same order (lines that do not decode are left out and dead-lettered).
    public var entries: [LogEntry]
}

/// Why a delivery failed.
public struct SinkFailure: Error, Sendable, CustomStringConvertible {
    /// `retry`: the store is unreachable, timed out, overloaded (5xx, 429): the same batch is sent again after a
    /// backoff delay. `reject`: the store refused the batch for good (4xx): it goes to the dead-letter file.
    public enum Kind: Sendable { case retry, reject }
    public var kind: Kind
    public var message: String

    public init(_ kind: Kind, _ message: String) {
        self.kind = kind
        self.message = message
    }

    public var description: String { message }

    /// The failure an HTTP status stands for, nil for 2xx: the store refusing the records themselves (400, 413,
    /// 415, 422) is a rejection; everything else is retried — 5xx and 429, and also 401, 403 and 404, which
    /// point at the sink's configuration or the store's set-up, not at the records (fix it and they go through).
    public static func forStatus(_ status: Int, body: String) -> SinkFailure? {
        switch status {
        case 200..<300: return nil
        case 400, 413, 415, 422: return SinkFailure(.reject, "HTTP \(status): \(body)")
        default: return SinkFailure(.retry, "HTTP \(status): \(body)")
        }
    }
}

/// A store that a forwarder delivers the log's records to. Each type lives in its own folder under `Sinks/`
/// and has one line in `SinkRegistry`.
///
/// `deliver` is called for one batch at a time, in log order; once it returns, the forwarder's cursor moves past
/// the batch. A batch may be delivered again after a crash (the cursor is persisted after delivery), so sinks
/// write idempotently where the store allows (see the idempotent key in `LogEntry`).
public protocol ForwardingSink: Sendable {
    /// Prepares the store (e.g. creates tables). Called before the first batch, and again after it failed.
    func prepare() async throws(SinkFailure)
    /// Delivers `batch`.
    func deliver(_ batch: ForwardBatch) async throws(SinkFailure)
    /// Releases connections; no call follows.
    func shutdown() async
}

extension ForwardingSink {
    public func prepare() async throws(SinkFailure) {}
    public func shutdown() async {}
}
