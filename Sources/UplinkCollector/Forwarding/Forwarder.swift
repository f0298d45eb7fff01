import Logging
import NIOCore
import NIOPosix
import Synchronization
import UplinkCore
import UplinkFiles

/// Tails the collector's log for one sink: reads batches from its cursor (`batchMaxBytes`, `batchLinger`),
/// delivers them, retries with the sink's backoff while the store is unreachable or answers 5xx/429, writes
/// refused batches (4xx) to `<data_dir>/dead-letter/<sink>.jsonl`, and persists the cursor after each.
///
/// It never holds up the collector's acknowledgements: agents are acknowledged once records are in the log.
final class Forwarder: Sendable {
    let configuration: SinkConfiguration
    let sink: any ForwardingSink
    let log: CollectorLog
    let statistics: SinkStatisticsRecorder
    let cursorPath: String
    let deadLetterPath: String
    let logger: Logger
    /// The cursor as last persisted; retention reads it.
    private let persisted: Atomic<Int64>
    /// Whether `run` first writes the starting cursor, which no file holds yet.
    private let persistsStart: Bool

    /// A sink without a cursor file starts at the oldest record the log still has, or, with `startAtLogEnd`, at the
    /// log's end: the implicit `collector.stdout` sink prints what arrives from now on, not the records a collector
    /// of an earlier version printed into `records.jsonl`. A cursor past the log's end (a log that was removed or
    /// replaced) starts at the end.
    init(
        configuration: SinkConfiguration, sink: any ForwardingSink, log: CollectorLog, cursorDirectory: String,
        deadLetterDirectory: String, startAtLogEnd: Bool = false, logger: Logger
    ) throws(CollectorError) {
        self.configuration = configuration
        self.sink = sink
        self.log = log
        self.statistics = SinkStatisticsRecorder(name: configuration.name)
        self.cursorPath = cursorDirectory + "/" + configuration.name
        self.deadLetterPath = deadLetterDirectory + "/" + configuration.name + ".jsonl"
        var logger = logger
        logger[metadataKey: "sink"] = "\(configuration.name)"
        self.logger = logger
        let stored = try CursorFile.read(cursorPath)
        // A sink that starts at the log's end persists that start at once: records acknowledged before its first
        // delivery are then still forwarded after a crash.
        self.persistsStart = stored == nil && startAtLogEnd
        var cursor = stored ?? (startAtLogEnd ? log.committedEnd : log.segments.first?.base ?? 0)
        if cursor > log.committedEnd {
            logger.warning(
                "The sink's cursor is past the end of the log (the log was removed or replaced); forwarding from its end",
                metadata: ["cursor": "\(cursor)", "log_end": "\(log.committedEnd)", "file": "\(cursorPath)"])
            cursor = log.committedEnd
        }
        self.persisted = Atomic(cursor)
        statistics.update { $0.cursor = cursor }
    }

    /// The offset this sink has delivered up to, durably.
    var cursor: Int64 { persisted.load(ordering: .acquiring) }

    /// Forwards until the task is cancelled. A batch in flight at cancellation is not acknowledged: it is sent
    /// again by the next run.
    ///
    /// Between batches it sleeps until the log's committed end moves (`CollectorLog.committed`): a batch leaves
    /// when `batchMaxBytes` are waiting or when its first record has waited `batchLinger`, whichever comes first.
    func run() async {
        var cursor = self.cursor
        if persistsStart { await persist(cursor) }
        await prepare()
        while !Task.isCancelled {
            // Wait for a first record, then for a full batch or the linger, whichever comes first.
            await log.committed.wait(until: cursor + 1)
            if Task.isCancelled { break }
            let full = cursor + Int64(configuration.batchMaxBytes)
            if (log.committedEnd < full) && configuration.batchLinger > .zero {
                await log.committed.wait(until: full, deadline: .now + configuration.batchLinger, clock: .continuous)
                if Task.isCancelled { break }
            }
            let chunk: LogReader.Chunk
            do {
                let log = self.log
                let from = cursor
                let maxBytes = configuration.batchMaxBytes
                chunk = try await NIOThreadPool.singleton.runIfActive { try LogReader.read(log, from: from, maxBytes: maxBytes) }
            } catch {
                logger.error("Could not read the collector's log", metadata: ["error": "\(error)"])
                try? await Task.sleep(for: .seconds(1))
                continue
            }
            if chunk.start > cursor {
                // Retention deleted what was at the cursor (counted by `LogRetention`).
                cursor = chunk.start
            }
            if chunk.lines.readableBytes == 0 {
                if chunk.end > cursor {
                    cursor = chunk.end  // the cursor sat at a deleted segment's end: move on
                } else {
                    // Nothing whole past the cursor yet: wait for the next write rather than read again at once.
                    await log.committed.wait(until: log.committedEnd + 1)
                }
                continue
            }
            guard await deliver(chunk.lines) else { return }
            cursor = chunk.end
            await persist(cursor)
        }
    }

    private func prepare() async {
        var attempt = 0
        var generator = SystemRandomNumberGenerator()
        while !Task.isCancelled {
            do throws(SinkFailure) {
                try await sink.prepare()
                return
            } catch {
                logger.warning("Could not prepare the sink's store; retrying", metadata: ["error": "\(error)"])
                try? await Task.sleep(for: configuration.backoff.delay(attempt: attempt, using: &generator))
                attempt += 1
            }
        }
    }

    /// Delivers `lines` until the store takes them or refuses them for good; false when cancelled first.
    private func deliver(_ lines: ByteBuffer) async -> Bool {
        let batch = ForwardBatch(lines: lines)
        var attempt = 0
        var generator = SystemRandomNumberGenerator()
        while !Task.isCancelled {
            do throws(SinkFailure) {
                try await sink.deliver(batch)
                if attempt > 0 { logger.info("The sink's store accepts records again", metadata: ["retries": "\(attempt)"]) }
                // Only a sink that decoded the records knows which lines are not records; it left them out.
                let unreadable = batch.unreadable
                if let unreadable { await deadLetter(unreadable.lines, count: unreadable.count, reason: "not a stored record") }
                statistics.update {
                    $0.recordsForwarded += UInt64(batch.count - (unreadable?.count ?? 0))
                    $0.batchesForwarded += 1
                }
                return true
            } catch {
                switch error.kind {
                case .reject:
                    await deadLetter(lines, count: batch.count, reason: error.message)
                    return true
                case .retry:
                    statistics.update { $0.retries += 1 }
                    if attempt == 0 {
                        logger.warning(
                            "Could not deliver to the sink's store; retrying with backoff (records wait in the log)",
                            metadata: ["error": "\(error)"])
                    }
                    try? await Task.sleep(for: configuration.backoff.delay(attempt: attempt, using: &generator))
                    attempt += 1
                    if attempt % 8 == 0 { await prepare() }
                }
            }
        }
        return false
    }

    private func deadLetter(_ lines: ByteBuffer, count: Int, reason: String) async {
        statistics.update { $0.recordsDeadLettered += UInt64(count) }
        logger.error(
            "The sink's store refused records; they are written to the dead-letter file",
            metadata: ["records": "\(count)", "file": "\(deadLetterPath)", "error": "\(reason)"])
        let path = deadLetterPath
        do {
            try await BlockingFileWork.run {
                try FileIO.makeDirectories(AtomicFile.parentDirectory(of: path))
                let descriptor = try FileIO.openForAppending(path)
                defer { FileIO.closeFile(descriptor) }
                try lines.withUnsafeReadableBytes { raw in
                    try Result { () throws(CollectorError) in try FileIO.writeAll(descriptor, raw, path: path) }.get()
                }
            }
        } catch {
            logger.error("Could not write the dead-letter file", metadata: ["file": "\(path)", "error": "\(error)"])
        }
    }

    private func persist(_ cursor: Int64) async {
        let path = cursorPath
        do {
            try await BlockingFileWork.run {
                try FileIO.makeDirectories(AtomicFile.parentDirectory(of: path))
                try CursorFile.write(path, cursor)
            }
        } catch {
            logger.error("Could not persist the sink's cursor", metadata: ["file": "\(path)", "error": "\(error)"])
        }
        persisted.store(cursor, ordering: .releasing)
        statistics.update { $0.cursor = cursor }
        log.retentionChanges.bump()
    }
}
