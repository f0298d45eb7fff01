import Logging
import UplinkCollector
import UplinkCore

#if canImport(Glibc)
import Glibc
#endif

// `swift run -c release uplink-bench [ring|e2e|tls|persist|ingest|latency|tail|tail-processes|tailscale|idle|encode|sinks|wire]...`:
// runs the named benchmarks (all but `encode`, `tls`, `persist`, `sinks`, `wire` and `tailscale` by default) and prints their
// numbers. Agent and collector share this process, so CPU time covers both sides, except in `tail-processes`.
// `uplink-bench one-loop-floor PORT FILE` is not a benchmark but a peer that deploy/steady-rate.sh measures (see
// OneLoopFloor): it runs until its connection closes.
// `uplink-bench fleet --port P --agents N --rate R --seconds S …` is the load generator of deploy/fleet.sh (see
// FleetBenchmark): N simulated agents, each streaming R lines/s to a collector process; the script measures the
// collector. Exit status 0 when every record was acknowledged.
if CommandLine.arguments.dropFirst().first == "fleet" {
    do {
        exit(try FleetBenchmark.run(arguments: Array(CommandLine.arguments.dropFirst(2))) ? 0 : 1)
    } catch {
        FleetBenchmark.report("\(error)")
        exit(1)
    }
}
if CommandLine.arguments.dropFirst().first == "one-loop-floor" {
    do {
        try OneLoopFloor.run(arguments: Array(CommandLine.arguments.dropFirst(2)))
        exit(0)
    } catch {
        let message = Array("uplink-bench one-loop-floor: \(error)\n".utf8)
        _ = message.withUnsafeBytes { write(STDERR_FILENO, $0.baseAddress, $0.count) }
        exit(1)
    }
}
let requested = Set(CommandLine.arguments.dropFirst())
func wanted(_ name: String) -> Bool { requested.isEmpty || requested.contains(name) }

// UPLINK_BENCH_DEBUG=1 logs everything agent and collector log (to stderr), for a benchmark that does not progress.
LoggingSystem.bootstrap { label in
    var handler = StreamLogHandler.standardError(label: label)
    handler.logLevel = getenv("UPLINK_BENCH_DEBUG") != nil ? .debug : .error
    return handler
}
let logger = Logger(label: "uplink-bench")

if wanted("ring") {
    RingBenchmark.run(frames: 20_000_000, frameBytes: 200).print()
}
// The producing side alone (not in the default set): what encoding costs per record, for work on the encoder.
if requested.contains("encode") { for result in try await EncodeBenchmark.run(logger: logger) { result.print() } }
if wanted("e2e") {
    // UPLINK_BENCH_RECORDS=N runs fewer records, e.g. under `valgrind --tool=callgrind` to count instructions.
    let records = Int(getenv("UPLINK_BENCH_RECORDS").map { String(cString: $0) } ?? "") ?? 2_000_000
    for streamBufferBytes in [64 << 10, 256 << 10, 1 << 20] {
        try await EndToEndBenchmark.throughput(
            records: records, recordBytes: 200, streamBufferBytes: streamBufferBytes, logger: logger
        ).print()
    }
    // The default uplink.compression, zstd, on the same pipeline.
    try await EndToEndBenchmark.throughput(
        records: records, recordBytes: 200, streamBufferBytes: 256 << 10, compression: .zstd, logger: logger
    ).print()
}
// TLS: stream throughput over TLS and plaintext side by side (64 KiB and 1 MiB stream buffers), and what a TLS
// handshake costs per new connection. Needs the openssl command to make a private CA. Not in the default set.
if requested.contains("tls") {
    let records = Int(getenv("UPLINK_BENCH_RECORDS").map { String(cString: $0) } ?? "") ?? 2_000_000
    let files = try TLSBenchmark.Files.make()
    defer { files.remove() }
    for streamBufferBytes in [64 << 10, 1 << 20] {
        for tls in [nil, files] {
            try await EndToEndBenchmark.throughput(
                records: records, recordBytes: 200, streamBufferBytes: streamBufferBytes, tls: tls, logger: logger
            ).print()
        }
    }
    try await TLSBenchmark.handshakes(connections: 1_000, files: files, logger: logger).print()
}
// buffer.persist: throughput, CPU and bytes written per byte of record with the buffer off, 'spill' (healthy: writes
// nothing) and 'always'; then a restart that delivers a 64 MiB persisted backlog. Writes about 1 GiB to /tmp; not in
// the default set.
if requested.contains("persist") {
    let records = Int(getenv("UPLINK_BENCH_RECORDS").map { String(cString: $0) } ?? "") ?? 2_000_000
    for mode in [nil, PersistentBufferSettings.Mode.spill, .always] {
        try await PersistBenchmark.throughput(records: records, recordBytes: 200, mode: mode, logger: logger).print()
    }
    try await PersistBenchmark.recovery(backlogBytes: 64 << 20, recordBytes: 200, logger: logger).print()
}
if wanted("ingest") {
    for kind in [IngestBenchmark.Kind.generator, .tail] {
        IngestBenchmark.run(kind: kind, records: 500_000, messageBytes: 200, rounds: 4).print()
    }
}
if wanted("latency") {
    try await EndToEndBenchmark.latency(records: 10_000, logger: logger).print()
}
if wanted("tail") {
    for streamBufferBytes in [64 << 10, 1 << 20] {
        try await TailBenchmark.run(mebibytes: 1024, streamBufferBytes: streamBufferBytes, logger: logger).print()
    }
}
// The same with agent and collector as two `uplink` processes (the executable beside this one), CPU of each apart.
if wanted("tail-processes") {
    if let uplink = TailProcessesBenchmark.siblingUplink() {
        try TailProcessesBenchmark.run(uplink: uplink, mebibytes: 1024).print()
        // UPLINK_BENCH_COLLECTOR_SINKS='[{name: records, type: jsonl}]' runs it again with that `collector.sinks`.
        if let sinks = getenv("UPLINK_BENCH_COLLECTOR_SINKS").map({ String(cString: $0) }) {
            try TailProcessesBenchmark.run(uplink: uplink, mebibytes: 1024, sinks: sinks).print()
        }
        // UPLINK_BENCH_STREAM_BUFFERS=64,256,1024 (KiB) runs it again with each of those uplink.stream_buffer sizes.
        for kibibytes in (getenv("UPLINK_BENCH_STREAM_BUFFERS").map { String(cString: $0) } ?? "").split(separator: ",").compactMap({ Int($0) }) {
            try TailProcessesBenchmark.run(uplink: uplink, mebibytes: 1024, streamBufferBytes: kibibytes << 10).print()
        }
    } else {
        print("tail-processes: no uplink executable beside uplink-bench (build both: swift build -c release)")
    }
}
// The tailer following many files (not in the default set): `paths: [app.log*]` matching 1 file and 10,000 files
// (UPLINK_BENCH_TAIL_FILES, comma-separated counts), idle and at 1,000 lines/s, UPLINK_BENCH_TAIL_SECONDS (default 20)
// each: CPU, append → collector latency, open descriptors and inotify watches. deploy/tail-scale.sh runs it for an
// old and a new build side by side.
if requested.contains("tailscale") {
    let counts = (getenv("UPLINK_BENCH_TAIL_FILES").map { String(cString: $0) } ?? "1,10000").split(separator: ",").compactMap { Int($0) }
    let seconds = Int(getenv("UPLINK_BENCH_TAIL_SECONDS").map { String(cString: $0) } ?? "") ?? 20
    for files in counts {
        try await TailScaleBenchmark.run(files: files, seconds: seconds, logger: logger).print()
    }
}
if wanted("idle") {
    for result in try await IdleBenchmark.run(seconds: 60, logger: logger) { result.print() }
}
// The collector's sinks against real stores (not in the default set): deploy/bench-sinks.sh starts VictoriaMetrics and
// ClickHouse on loopback and passes their URLs. Forwarding throughput and CPU per million records (collector side), then
// the lag from append to queryable at 1,000 records/s with batch_linger 100 ms and 1 s.
if requested.contains("sinks") {
    func environment(_ name: String) -> String? { getenv(name).map { String(cString: $0) } }
    let records = Int(environment("UPLINK_BENCH_SINK_RECORDS") ?? "") ?? 500_000
    let seconds = Int(environment("UPLINK_BENCH_LAG_SECONDS") ?? "") ?? 20
    var stores: [SinksBenchmark.Store] = []
    if let url = environment("UPLINK_BENCH_VM_URL") { stores.append(.init(kind: .victoriametrics, url: url, password: nil)) }
    if let url = environment("UPLINK_BENCH_CLICKHOUSE_URL") {
        stores.append(.init(kind: .clickhouse, url: url, password: environment("UPLINK_BENCH_CLICKHOUSE_PASSWORD")))
    }
    if stores.isEmpty { print("sinks: set UPLINK_BENCH_VM_URL and/or UPLINK_BENCH_CLICKHOUSE_URL (deploy/bench-sinks.sh does)") }
    for store in stores {
        for compression in [SinkCompression.none, .gzip] {
            try await SinksBenchmark.throughput(store: store, records: records, compression: compression, logger: logger).print()
        }
        for linger in [Duration.milliseconds(100), .seconds(1)] {
            try await SinksBenchmark.lag(store: store, rate: 1000, seconds: seconds, linger: linger, logger: logger).print()
        }
    }
}
// uplink.compression (not in the default set): wire bytes per metric sample of this machine's sensors at 1 s with
// none, gzip and zstd (UPLINK_BENCH_WIRE_SECONDS, default 60), and per generated access-log line, with the CPU
// that compressing costs per MiB.
if requested.contains("wire") {
    let seconds = Int(getenv("UPLINK_BENCH_WIRE_SECONDS").map { String(cString: $0) } ?? "") ?? 60
    try WireBenchmark.accessLogs(count: 200_000).print()
    try await WireBenchmark.metrics(seconds: seconds, logger: logger).print()
}
