import Logging
import UplinkCore
import UplinkSources
import UplinkWire

#if canImport(Glibc)
import Glibc
#endif

/// The agent's producing side alone, without HTTP or a collector: records made, encoded and appended to a ring
/// that nothing drains (it is large enough, or acknowledged right away). Small enough to run under callgrind.
enum EncodeBenchmark {
    /// The unpaced generator (as in `e2e`) into a ring through `RingRecordSink`, acknowledged every 1024 records.
    static func generator(records: Int, recordBytes: Int = 200, logger: Logger) async throws -> BenchmarkResult {
        let ring = RecordRing(capacity: 64 << 20)
        let sink = AcknowledgingSink(inner: RingRecordSink(ring: ring, sourceName: "gen", encoder: NDJSONFrameEncoder()))
        let source = GeneratorSource(name: "gen", config: GeneratorConfig(rate: 0, recordBytes: recordBytes, count: records))
        let usage = ResourceUsage.now()
        let started = ContinuousClock.now
        try await source.run(context: SourceContext(sink: sink, logger: logger))
        let elapsed = ContinuousClock.now - started
        let cpu = ResourceUsage.now().cpuSeconds - usage.cpuSeconds
        let statistics = ring.statistics()
        precondition(statistics.source("gen")?.appended == records, "appended \(statistics)")
        return result(
            name: "generator → RingRecordSink → ring, \(recordBytes)-byte messages", count: records, unit: "record",
            elapsed: elapsed, cpu: cpu, frameBytes: nil)
    }

    /// Acknowledges everything whenever a sequence number passes a multiple of 1024, so the ring never fills.
    struct AcknowledgingSink: RecordSink {
        let inner: RingRecordSink

        func emit(_ record: Record) -> AppendOutcome {
            acknowledge(inner.emit(record), count: 1)
        }

        func emitWaitingForSpace(_ record: Record) async -> AppendOutcome {
            acknowledge(await inner.emitWaitingForSpace(record), count: 1)
        }

        nonisolated(nonsending) func emitWaitingForSpace(_ batch: LogLineBatch) async -> [AppendOutcome] {
            let outcomes = await inner.emitWaitingForSpace(batch)
            if let last = outcomes.last { acknowledge(last, count: UInt64(outcomes.count)) }
            return outcomes
        }

        @discardableResult
        private func acknowledge(_ outcome: AppendOutcome, count: UInt64) -> AppendOutcome {
            if case .appended(let sequence) = outcome, sequence % 1024 < count { inner.ring.acknowledge(through: sequence) }
            return outcome
        }
    }

    /// Batches of file lines (the tailer's `LogLineBatch`, as the tail benchmark's file has them) built from a chunk
    /// and handed to `RingRecordSink`, acknowledged after each batch.
    static func tailBatches(lines: Int, lineBytes: Int = 200, logger: Logger) async throws -> BenchmarkResult {
        let ring = RecordRing(capacity: 64 << 20)
        let sink = RingRecordSink(ring: ring, sourceName: "tail", encoder: NDJSONFrameEncoder())
        let linesPerBatch = 256 * 1024 / (lineBytes + 1)
        var chunk: [UInt8] = []
        for index in 0..<linesPerBatch {
            var line = Array("2026-11-21T08:00:00Z INFO request \(index) ".utf8)
            line += [UInt8](repeating: UInt8(ascii: "x"), count: max(0, lineBytes - line.count))
            chunk += line.prefix(lineBytes)
        }
        var batch = LogLineBatch(
            source: "tail", fields: [Tag("path", "/tmp/uplink-bench-tail-AbC123/app.log")], originID: 6_148_914_691_236_517_205)
        var frameBytes = 0
        var done = 0
        var offset: UInt64 = 0
        let usage = ResourceUsage.now()
        let started = ContinuousClock.now
        while done < lines {
            batch.removeAll()
            let count = min(linesPerBatch, lines - done)
            let timestamp = WallClock.nowNanoseconds()
            chunk.withUnsafeBytes { chunk in
                for index in 0..<count {
                    offset += UInt64(lineBytes + 1)
                    batch.append(
                        message: UnsafeRawBufferPointer(rebasing: chunk[(index * lineBytes)..<((index + 1) * lineBytes)]),
                        timestamp: timestamp, originOffset: offset)
                }
            }
            let before = ring.statistics().usedBytes
            let outcomes = await sink.emitWaitingForSpace(batch)
            frameBytes += ring.statistics().usedBytes - before - count * RecordRing.frameHeaderBytes
            guard case .appended(let last) = outcomes.last else { preconditionFailure("not appended: \(outcomes.last as Any)") }
            ring.acknowledge(through: last)
            done += count
        }
        let elapsed = ContinuousClock.now - started
        let cpu = ResourceUsage.now().cpuSeconds - usage.cpuSeconds
        return result(
            name: "tail batches of \(linesPerBatch) \(lineBytes)-byte lines → RingRecordSink → ring", count: lines,
            unit: "line", elapsed: elapsed, cpu: cpu, frameBytes: frameBytes)
    }

    private static func result(
        name: String, count: Int, unit: String, elapsed: Duration, cpu: Double, frameBytes: Int?
    ) -> BenchmarkResult {
        BenchmarkResult(
            name: "encoding: \(name)",
            lines: [
                "\(unit)s: \(count)"
                    + (frameBytes.map { ", frame bytes: \($0) (\(format(Double($0) / Double(count))) per \(unit))" } ?? ""),
                "\(format(elapsed.seconds * 1e9 / Double(count))) ns per \(unit) (wall), "
                    + "\(format(cpu * 1e9 / Double(count))) ns per \(unit) (cpu)",
            ])
    }
}

extension EncodeBenchmark {
    /// `uplink-bench encode`, not part of the default set. `UPLINK_BENCH_ENCODE_RECORDS` sets the size (default
    /// 1,000,000 records and lines; use ~50,000 under callgrind), `UPLINK_BENCH_ENCODE_ONLY` picks one part
    /// (`generator` or `tail`).
    static func run(logger: Logger) async throws -> [BenchmarkResult] {
        let count = getenv("UPLINK_BENCH_ENCODE_RECORDS").flatMap { Int(String(cString: $0)) } ?? 1_000_000
        let only = getenv("UPLINK_BENCH_ENCODE_ONLY").map { String(cString: $0) }
        var results: [BenchmarkResult] = []
        if only == nil || only == "generator" { results.append(try await generator(records: count, logger: logger)) }
        if only == nil || only == "tail" { results.append(try await tailBatches(lines: count, logger: logger)) }
        return results
    }
}
