import NIOCore
import UplinkCollector
import UplinkCore
import UplinkWire

/// The collector's work per received byte on one core, without sockets or files: a body of wire lines cut into
/// 64 KiB chunks is sorted by a `StreamProcessor` (lines found, each validated, marks kept) and spliced into the
/// records.jsonl form, as a stream does. Less noisy than the end-to-end run, whose two sides share the cores.
enum IngestBenchmark {
    /// The shape of the lines.
    enum Kind: String {
        /// The generator's log records: a message and one field.
        case generator
        /// The tailer's log records: a message, the file path, origin and offset.
        case tail
    }

    static func run(kind: Kind, records: Int, messageBytes: Int, rounds: Int) -> BenchmarkResult {
        let chunks = body(kind: kind, records: records, messageBytes: messageBytes)
        let bodyBytes = chunks.reduce(0) { $0 + $1.readableBytes }
        var stored: [UInt8] = []
        stored.reserveCapacity(8 << 20)
        var accepted = 0
        let usage = ResourceUsage.now()
        let started = ContinuousClock.now
        for _ in 0..<rounds {
            var processor = StreamProcessor(stream: StreamKey(agent: "bench", epoch: 1), mark: 0, maxLineBytes: 1 << 20)
            for chunk in chunks {
                let batch = processor.process(chunk)
                accepted += batch.lines.count
                stored.removeAll(keepingCapacity: true)
                StoredLine.append(
                    CollectorBatch(
                        stream: StreamKey(agent: "bench", epoch: 1), lines: batch.lines,
                        highestSequence: batch.highestSequence),
                    to: &stored)
            }
        }
        let elapsed = ContinuousClock.now - started
        let cpu = ResourceUsage.now().cpuSeconds - usage.cpuSeconds
        precondition(accepted == records * rounds, "accepted \(accepted) of \(records * rounds)")
        let gibibytes = Double(bodyBytes * rounds) / 1_073_741_824
        return BenchmarkResult(
            name: "collector ingest on one core (\(kind.rawValue) lines, \(messageBytes)-byte messages, 64 KiB chunks)",
            lines: [
                "lines: \(records * rounds), body bytes: \(bodyBytes * rounds) (\(format(Double(bodyBytes) / Double(records))) bytes/line)",
                "throughput: \(format(Double(bodyBytes * rounds) / 1_048_576 / elapsed.seconds)) MiB/s, "
                    + "\(format(elapsed.seconds * 1e9 / Double(records * rounds))) ns/line",
                "cpu: \(format(cpu / gibibytes)) cpu-s per GiB",
            ]
        )
    }

    /// Wire lines as an agent sends them, cut into 64 KiB chunks at arbitrary places.
    private static func body(kind: Kind, records: Int, messageBytes: Int) -> [ByteBuffer] {
        let encoder = NDJSONFrameEncoder()
        let message = String(repeating: "x", count: messageBytes)
        var frame: [UInt8] = []
        var body = ByteBufferAllocator().buffer(capacity: records * (messageBytes + 200))
        for index in 1...records {
            frame.removeAll(keepingCapacity: true)
            let timestamp = 1_763_704_818_000_000_000 + Int64(index) * 1_000
            switch kind {
            case .generator:
                encoder.encodeFrame(
                    .log(message, fields: [Tag("n", String(index))], source: "gen", timestamp: timestamp), into: &frame)
            case .tail:
                encoder.encodeFrame(
                    Record(
                        timestamp: timestamp, source: "app",
                        payload: .log(LogLine(
                            message: message, fields: [Tag("path", "/var/log/app/service.log")],
                            origin: RecordOrigin(id: 5_290_871_390_245_127_081, offset: UInt64(index * (messageBytes + 1)))))),
                    into: &frame)
            }
            frame.withUnsafeBytes { frame in
                _ = WireLineWriter.appendRecordLine(sequence: UInt64(index), frame: frame, to: &body)
            }
        }
        var chunks: [ByteBuffer] = []
        while body.readableBytes > 0 {
            chunks.append(body.readSlice(length: min(64 << 10, body.readableBytes))!)
        }
        return chunks
    }
}
