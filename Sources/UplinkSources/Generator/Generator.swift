import Logging
import UplinkCore

/// The `generator` source: synthetic log records at a configured rate, for tests and benchmarks.
///
/// Record `n` (from 0) is a log record with the message `"gen <name> <n as 12 digits> xxx…"` of
/// `GeneratorConfig.recordBytes` bytes and the field `n=<n>`, timestamped when it is made.
/// - With a positive `rate`, records are paced by elapsed time and offered with `emit` (drops in a full
///   buffer are counted by the ring).
/// - With `rate` 0, records are offered with `emitWaitingForSpace` as fast as the buffer accepts them, in
///   batches (`LogLineBatch`, the raw bytes the sink encodes without a `String` or a `Record` per record);
///   nothing is dropped.
/// `run` returns after `count` records, or when cancelled. If the sink rejects a record as larger than the
/// whole buffer, one error is logged and `run` returns (every record has the same size).
public struct GeneratorSource: Source {
    public let name: String
    public let config: GeneratorConfig

    /// Unpaced mode yields to other tasks after this many records, in case the sink never suspends.
    static let yieldEvery: UInt64 = 1024
    /// Most records in one batch of unpaced mode, and most message bytes (but at least one record). Batches start
    /// with one record and double up to this, so a sink that rejects every record (larger than the whole buffer) is
    /// found out after one.
    static let maximumBatch: UInt64 = 256
    static let maximumBatchBytes = 256 * 1024

    public init(name: String, config: GeneratorConfig = GeneratorConfig()) {
        self.name = name
        self.config = config
    }

    public func run(context: SourceContext) async throws {
        let limit: UInt64? = config.count.map { UInt64(max(0, $0)) }
        if !config.isPaced {
            await runUnpaced(limit: limit, context: context)
            return
        }

        var messages = MessageBuilder(sourceName: name, recordBytes: config.recordBytes)
        var emitted: UInt64 = 0
        func makeRecord() -> Record {
            .log(
                messages.message(for: emitted), fields: [Tag("n", String(emitted))], source: name,
                timestamp: WallClock.nowNanoseconds()
            )
        }

        let clock = ContinuousClock()
        let pacer = Pacer(rate: config.rate, start: clock.now)
        while limit.map({ emitted < $0 }) ?? true {
            if Task.isCancelled { return }
            let now = clock.now
            var due = pacer.due(at: now)
            if let limit { due = min(due, limit) }
            while emitted < due {
                if rejected(context.sink.emit(makeRecord()), logger: context.logger) { return }
                emitted += 1
            }
            if let limit, emitted >= limit { return }
            do {
                try await clock.sleep(until: pacer.wakeUp(afterEmitting: emitted, now: now), tolerance: nil)
            } catch {
                return  // cancelled
            }
        }
    }

    /// Whether the sink refused a record as larger than the whole buffer; logs it if so.
    private func rejected(_ outcome: AppendOutcome, logger: Logger) -> Bool {
        guard outcome == .rejectedOversize else { return false }
        logger.error("generator source: records of \(config.recordBytes) bytes are larger than the whole buffer; stopping")
        return true
    }

    /// Rate 0: batches of records, each batch offered with `emitWaitingForSpace` and waiting for room.
    private func runUnpaced(limit: UInt64?, context: SourceContext) async {
        var messages = MessageBuilder(sourceName: name, recordBytes: config.recordBytes)
        var batch = LogLineBatch(source: name, fields: [], originID: 0)
        var emitted: UInt64 = 0
        let maximumBatch = min(Self.maximumBatch, UInt64(max(1, Self.maximumBatchBytes / max(1, config.recordBytes))))
        var batchSize: UInt64 = 1
        var sinceYield: UInt64 = 0
        while limit.map({ emitted < $0 }) ?? true {
            if Task.isCancelled { return }
            let end = limit.map { min($0, emitted + batchSize) } ?? emitted + batchSize
            batch.removeAll()
            for counter in emitted..<end {
                messages.withMessageBytes(for: counter) { message in
                    batch.append(
                        message: message, timestamp: WallClock.nowNanoseconds(), originOffset: 0, extraField: "n",
                        decimal: counter)
                }
            }
            for outcome in await context.sink.emitWaitingForSpace(batch) {
                // `droppedNewest` comes only after cancellation.
                if rejected(outcome, logger: context.logger) || outcome == .droppedNewest { return }
            }
            sinceYield += end - emitted
            emitted = end
            batchSize = min(batchSize * 2, maximumBatch)
            if sinceYield >= Self.yieldEvery {
                sinceYield = 0
                await Task.yield()
            }
        }
    }
}
