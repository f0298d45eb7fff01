import NIOCore
import Synchronization
import UplinkCore

/// One record of the log, decoded (`StoredLine.entry(of:)`), with its idempotent key: (agent, epoch, sequence) for
/// every record and, for file lines, (agent, origin, offset) in `record`'s `LogLine.origin`.
public struct LogEntry: Sendable, Equatable {
    /// The agent id.
    public var agent: String
    /// The agent's stream epoch.
    public var epoch: UInt64
    /// The record's sequence within the epoch.
    public var sequence: UInt64
    /// The record.
    public var record: Record

    /// An entry; `StoredLine.entry(of:)` makes them from the log's lines.
    public init(agent: String, epoch: UInt64, sequence: UInt64, record: Record) {
        self.agent = agent
        self.epoch = epoch
        self.sequence = sequence
        self.record = record
    }
}

/// What a forwarder hands a sink: whole stored lines of the log, in log order, as they are in the log. A sink that
/// copies lines (`jsonl`, `http`) sends `lines` and never decodes; a sink that needs the records (`stdout`,
/// `victoriametrics`, `clickhouse`) reads `entries`, which decodes the lines on first use, once per batch.
public struct ForwardBatch: Sendable {
    /// The stored lines, each ending in `\n` (the log's own bytes: `{"agent":…,"epoch":…,"seq":…}`).
    public let lines: ByteBuffer
    /// How many lines `lines` holds.
    public let count: Int
    private let decoded: Decoded

    /// A batch of `lines`, whole lines that each end in `\n`.
    public init(lines: ByteBuffer) {
        self.lines = lines
        var count = 0
        RecordLines.forEachLine(in: lines) { _ in count += 1 }
        self.count = count
        self.decoded = Decoded()
    }

    /// The lines' records, in the same order, decoded on first use; lines that are not stored records are left out
    /// (the forwarder writes them to the dead-letter file after the delivery).
    public var entries: [LogEntry] { decoded.get(lines).entries }

    /// The lines that did not decode, once `entries` was read; nil when it was not, or when every line decoded.
    var unreadable: (lines: ByteBuffer, count: Int)? {
        guard let result = decoded.ifDecoded, result.unreadableCount > 0 else { return nil }
        return (result.unreadable, result.unreadableCount)
    }

    /// The decoding, shared by the copies of a batch value.
    private final class Decoded: Sendable {
        struct Result {
            var entries: [LogEntry] = []
            var unreadable = ByteBuffer()
            var unreadableCount = 0
        }
        private let result = Mutex<Result?>(nil)

        var ifDecoded: Result? { result.withLock { $0 } }

        func get(_ lines: ByteBuffer) -> Result {
            result.withLock { result in
                if let result { return result }
                var decoded = Result()
                RecordLines.forEachLine(in: lines) { raw in
                    if let entry = StoredLine.entry(of: raw) {
                        decoded.entries.append(entry)
                    } else {
                        decoded.unreadable.writeBytes(raw)
                        decoded.unreadable.writeInteger(UInt8(ascii: "\n"))
                        decoded.unreadableCount += 1
                    }
                }
                result = decoded
                return decoded
            }
        }
    }
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
