import Logging
import ServiceLifecycle
import UplinkAgent
import UplinkCollector
import UplinkCore
import UplinkFiles
import UplinkPersistentBuffer
import UplinkTransport
import UplinkWire

#if canImport(Glibc)
import Glibc
#endif

/// `buffer.persist`: what `always` costs (throughput, CPU, bytes written per byte of record) against the memory-only
/// ring and `spill` on the same pipeline, and how long a restart takes to deliver a persisted backlog.
///
/// The producer appends ready-made frames with the plain `append` (as sensors do; log tailers' frames are only
/// recorded as placeholders in `always` mode, their file being their store), as fast as the collector acknowledges
/// them: it pauses while a quarter of the ring is unacknowledged, so the ring never overflows.
enum PersistBenchmark {
    static func throughput(
        records: Int, recordBytes: Int, mode: PersistentBufferSettings.Mode?, logger: Logger
    ) async throws -> BenchmarkResult {
        let directory = try temporaryDirectory(prefix: "uplink-bench-persist")
        defer { Directories.removeTree(directory) }
        let background = try await startCollector(directory + "/collector", logger: logger)
        var configuration = AgentConfiguration(
            uplink: UplinkConfiguration(url: background.url, agentID: "bench", streamBufferBytes: 256 << 10), sources: [])
        if let mode {
            configuration.persistence = PersistentBufferSettings(directory: directory + "/buffer", maxBytes: 1 << 30, mode: mode)
        }
        let agent = try Agent.open(configuration: configuration, logger: logger)
        let frame = Self.frame(recordBytes: recordBytes)

        let writtenBefore = storageWriteBytes()
        let usage = ResourceUsage.now()
        let started = ContinuousClock.now
        let group = BackgroundServices(agent.serviceConfigurations, logger: logger)
        let ring = agent.ring
        let limit = UInt64(ring.capacity / 4 / (frame.count + RecordRing.frameHeaderBytes))
        let producer = Task.detached {
            let source = ring.registerSource("gen")
            var appended: UInt64 = 0
            while appended < UInt64(records) {
                if appended - min(appended, ring.acknowledgedSequence) > limit {
                    try? await Task.sleep(for: .microseconds(200))
                    continue
                }
                ring.append(frame, source: source)
                appended += 1
            }
        }
        await producer.value
        while ring.acknowledgedSequence < UInt64(records) { try await Task.sleep(for: .milliseconds(1)) }
        let elapsed = ContinuousClock.now - started
        let cpu = ResourceUsage.now().cpuSeconds - usage.cpuSeconds
        let written = storageWriteBytes() - writtenBefore
        let persisted = ring.persistentStatistics()
        try await group.stop()
        try await background.stop()

        let recordBytesTotal = Double(records * frame.count)
        let mebibytes = recordBytesTotal / 1_048_576
        var lines = [
            "records: \(records) frames of \(frame.count) bytes (\(format(mebibytes)) MiB of frames)",
            "throughput: \(format(mebibytes / elapsed.seconds)) MiB/s of frames, \(format(Double(records) / elapsed.seconds / 1000)) k records/s",
            "cpu: \(format(cpu)) s for agent + collector = \(format(cpu / (recordBytesTotal / 1_073_741_824))) cpu-s per GiB",
            "storage writes of the process (/proc/self/io write_bytes, collector's records.jsonl included): "
                + "\(written) bytes = \(format(Double(written) / recordBytesTotal)) per byte of frame",
        ]
        if let persisted {
            lines.append(
                "buffer wrote \(persisted.bytesWritten) bytes in \(persisted.framesWritten) frames = "
                    + "\(format(Double(persisted.bytesWritten) / recordBytesTotal)) per byte of frame (headers: 24 bytes each)")
        }
        return BenchmarkResult(
            name: "persistent buffer \(mode.map { "'\($0.rawValue)'" } ?? "off (memory only)"), appends as sensors make them, "
                + "collector in this process (records.jsonl), \(recordBytes)-byte messages",
            lines: lines)
    }

    /// Fills a `spill` buffer with `backlogBytes` of frames while no collector exists and shuts it down (all of it is
    /// written then); then starts a collector and an agent on the same directory and times the recovery (opening,
    /// which scans every segment) and the delivery of the whole backlog.
    static func recovery(backlogBytes: Int, recordBytes: Int, logger: Logger) async throws -> BenchmarkResult {
        let directory = try temporaryDirectory(prefix: "uplink-bench-persist")
        defer { Directories.removeTree(directory) }
        let settings = PersistentBufferSettings(directory: directory + "/buffer", maxBytes: 1 << 30, mode: .spill)
        let frame = Self.frame(recordBytes: recordBytes)
        let buffer = try PersistentBuffer.open(settings, proposedEpoch: 42, logger: logger)
        let filling = RecordRing(capacity: backlogBytes + (1 << 20), persistentBuffer: buffer)
        let source = filling.registerSource("gen")
        var frames = 0
        while filling.statistics().usedBytes + frame.count + RecordRing.frameHeaderBytes <= backlogBytes {
            for _ in 0..<1000 { filling.append(frame, source: source) }
            frames += 1000
        }
        let closing = ContinuousClock.now
        filling.closePersistentBuffer()
        let closeTime = ContinuousClock.now - closing
        let diskBytes = filling.persistentStatistics()?.diskBytes ?? 0

        let background = try await startCollector(directory + "/collector", logger: logger)
        var configuration = AgentConfiguration(
            uplink: UplinkConfiguration(url: background.url, agentID: "bench", streamBufferBytes: 256 << 10), sources: [])
        configuration.persistence = settings
        let started = ContinuousClock.now
        let agent = try Agent.open(configuration: configuration, logger: logger)
        let opened = ContinuousClock.now - started
        let group = BackgroundServices(agent.serviceConfigurations, logger: logger)
        var firstAck: Duration?
        while agent.ring.acknowledgedSequence < UInt64(frames) {
            if firstAck == nil, agent.ring.acknowledgedSequence > 0 { firstAck = ContinuousClock.now - started }
            try await Task.sleep(for: .milliseconds(1))
        }
        let delivered = ContinuousClock.now - started
        let peak = ResourceUsage.now().maxResidentBytes
        try await group.stop()
        try await background.stop()
        return BenchmarkResult(
            name: "persistent buffer: restart with a \(backlogBytes >> 20) MiB persisted backlog (spill), collector in this process",
            lines: [
                "backlog: \(frames) frames, \(diskBytes) bytes in segment files; writing it at shutdown took \(format(closeTime.seconds * 1000)) ms",
                "recovery: opening (scanning and checking every frame) \(format(opened.seconds * 1000)) ms, first acknowledgement after "
                    + "\(format((firstAck ?? delivered).seconds * 1000)) ms, whole backlog acknowledged after \(format(delivered.seconds * 1000)) ms",
                "peak RSS of the process: \(peak >> 20) MiB",
            ])
    }

    private static func frame(recordBytes: Int) -> [UInt8] {
        let message = String(repeating: "x", count: recordBytes)
        return NDJSONFrameEncoder().frame(
            for: Record(timestamp: WallClock.nowNanoseconds(), source: "gen", payload: .log(LogLine(message: message))))
    }

    private static func startCollector(_ directory: String, logger: Logger) async throws -> BackgroundCollector {
        mkdir(directory, 0o755)
        return try await BackgroundCollector.start(
            configuration: CollectorConfiguration(port: 0, dataDirectory: directory, stdoutSink: false), logger: logger)
    }
}
