import NIOCore
import UplinkAgent
import UplinkCollector
import UplinkConfig
import UplinkCore
import UplinkRemoteConfig
import UplinkWire

/// The fuzz targets (README, "Fuzzing"): each takes arbitrary bytes, runs one parser or checker on them and traps
/// when a property that must hold for every input does not. libFuzzer drives them through `uplink-fuzz` built by
/// `fuzz/run.sh`; `FuzzDriver` drives them with seeded mutations in the test suite and in a plain `uplink-fuzz`.
public enum FuzzTarget: String, CaseIterable, Sendable {
    /// The collector's body line scanner and validator (`WireLineParser`, `JSONScanner`).
    case wireLine = "wire-line"
    /// `LineSplitter` fed in chunks cut where the input's first bytes say, against a reference split.
    case lineSplitter = "line-splitter"
    /// The collector's `StreamProcessor` (splitter, scanner, marks, gaps, statistics) with random chunk cuts:
    /// the cuts change nothing, and no input traps.
    case streamProcessor = "stream-processor"
    /// The agent's response line parser (`AckLine.parse`).
    case ackLine = "ack-line"
    /// The stream request's header checks (`StreamHeaders`): agent id, epoch, protocol version, bearer token.
    case streamHeaders = "stream-headers"
    /// The YAML configuration loader: bytes → `UplinkFile.decode` with the collector section decoded as `uplink` does.
    case config = "config"
    /// A remote configuration document (`RemoteConfiguration.merge`) against a fixed local file: what is accepted
    /// holds no `${`, only allowed sources (tail sources restricted to the allowed real paths) and no local name; every
    /// issue names the document and is one line.
    case remoteDocument = "remote-document"
    /// The collector's body decompressors (`StreamDecompressor`, zstd and gzip): arbitrary bytes as a compressed body
    /// in random chunks never trap and never give more than the per-chunk limit; the same bytes as plain text,
    /// compressed with a flush at random points, come back exactly, whatever the chunk cuts.
    case decompress = "decompress"
    /// The remote configuration lines (`ConfigHint.parse`, the `Uplink-Config` header, `ConfigStatus.parse`):
    /// what they accept is well formed and writes back to an equal value.
    case configLine = "config-line"
    /// The signed remote configuration's JSON (`ConfigEnvelope(json:)`, `ConfigManifest(json:)`): what they accept
    /// is well formed (valid names and digests, a manifest's revision matching its documents) and writes back to an
    /// equal value; an accepted envelope's signature never verifies with a key that did not make it.
    case signedConfig = "signed-config"

    /// Runs the target on one input.
    public func run(_ data: UnsafeRawBufferPointer) {
        switch self {
        case .wireLine: FuzzChecks.wireLine(data)
        case .lineSplitter: FuzzChecks.lineSplitter(data)
        case .streamProcessor: FuzzChecks.streamProcessor(data)
        case .ackLine: FuzzChecks.ackLine(data)
        case .streamHeaders: FuzzChecks.streamHeaders(data)
        case .config: FuzzChecks.config(data)
        case .remoteDocument: FuzzChecks.remoteDocument(data)
        case .decompress: FuzzChecks.decompress(data)
        case .configLine: FuzzChecks.configLine(data)
        case .signedConfig: FuzzChecks.signedConfig(data)
        }
    }

    /// Runs the target on one input.
    public func run(_ data: [UInt8]) {
        data.withUnsafeBytes { run($0) }
    }
}

/// Stops the process with `message` when `condition` is false, in every build configuration (a fuzzer's crash).
@inline(__always)
func require(_ condition: @autoclosure () -> Bool, _ message: @autoclosure () -> String) {
    if !condition() { fatalError("fuzz property violated: \(message())") }
}

enum FuzzChecks {
    // MARK: wire-line

    static func wireLine(_ data: UnsafeRawBufferPointer) {
        let summary = try? WireLineParser.scan(data)
        let line = try? WireLineParser.decode(data)
        switch (summary, line) {
        case (nil, nil):
            return
        case (.heartbeat(let a)?, .heartbeat(let b)?):
            require(a == b, "scan and decode disagree on a heartbeat")
        case (.configStatus(let a)?, .configStatus(let b)?):
            require(a == b, "scan and decode disagree on a config_status line")
        case (.record(let sequence, let timestamp, let origin)?, .record(let decodedSequence, let record)?):
            require(sequence == decodedSequence, "scan and decode disagree on seq")
            require(timestamp == record.timestamp, "scan and decode disagree on ts")
            require(WireIntegers.sequence.contains(sequence), "seq \(sequence) out of range")
            if let origin {
                require(WireIntegers.origin.contains(origin.id), "origin out of range")
                require(WireIntegers.offset.contains(origin.offset), "offset out of range")
            }
            if case .log(let log) = record.payload { require(log.origin == origin, "scan and decode disagree on origin") }
        default:
            fatalError("fuzz property violated: scan and decode disagree on \(Array(data))")
        }
    }

    // MARK: line-splitter

    /// Input: one byte of `maxLineBytes` (1...64), one byte seeding the cuts, then the stream.
    static func lineSplitter(_ data: UnsafeRawBufferPointer) {
        guard data.count >= 2 else { return }
        let maxLineBytes = Int(data[0] % 64) + 1
        var random = SplitMix64(seed: UInt64(data[1]))
        let stream = Array(data[2...])

        var splitter = LineSplitter(maxLineBytes: maxLineBytes)
        var pieces: [LineSplitter.Piece] = []
        var position = 0
        while position < stream.count {
            let length = Int(random.next() % 9)  // empty chunks too
            let end = min(stream.count, position + length)
            splitter.append(ByteBuffer(bytes: stream[position..<end]))
            while let piece = splitter.nextLine() { pieces.append(piece) }
            require(splitter.bufferedBytes <= maxLineBytes + 1 + 8, "splitter holds \(splitter.bufferedBytes) bytes")
            position = end
        }
        let leftover = splitter.finish()

        // The reference: split the whole stream at once.
        var expected: [LineSplitter.Piece] = []
        var start = 0
        for (index, byte) in stream.enumerated() where byte == UInt8(ascii: "\n") {
            var line = stream[start..<index]
            if line.last == UInt8(ascii: "\r") { line = line.dropLast() }
            expected.append(line.count > maxLineBytes ? .tooLong(length: line.count) : .line(ByteBuffer(bytes: line)))
            start = index + 1
        }
        let expectedLeftover = stream.count > start ? stream.count - start : nil
        require(pieces == expected, "splitter pieces differ from the reference split")
        require(leftover == expectedLeftover, "splitter leftover \(String(describing: leftover)) != \(String(describing: expectedLeftover))")
    }

    // MARK: stream-processor

    /// Input: one byte seeding the cuts, one byte choosing the starting mark, then the body.
    static func streamProcessor(_ data: UnsafeRawBufferPointer) {
        guard data.count >= 2 else { return }
        var random = SplitMix64(seed: UInt64(data[0]))
        let marks: [UInt64] = [0, 1, 5, 1 << 32, WireIntegers.maximum - 1, WireIntegers.maximum]
        let mark = marks[Int(data[1]) % marks.count]
        let body = Array(data[2...])
        let stream = StreamKey(agent: "fuzz", epoch: 1)
        let recorder = StatisticsRecorder()

        func summarize(_ chunks: [ArraySlice<UInt8>]) -> ProcessorSummary {
            var processor = StreamProcessor(stream: stream, mark: mark, maxLineBytes: 256)
            var summary = ProcessorSummary(mark: mark)
            for chunk in chunks {
                let batch = processor.process(ByteBuffer(bytes: chunk))
                require(batch.highestSequence >= summary.mark, "the mark went down")
                summary.add(batch)
                recorder.received(batch)
            }
            if let cut = processor.finish() {
                summary.add(cut)
                recorder.received(cut)
            }
            return summary
        }

        let whole = summarize([body[...]])
        var chunks: [ArraySlice<UInt8>] = []
        var position = 0
        while position < body.count {
            let end = min(body.count, position + Int(random.next() % 40))
            chunks.append(body[position..<end])
            position = end
        }
        let cut = summarize(chunks)
        require(whole == cut, "chunk cuts changed the result: \(whole) vs \(cut)")
        let statistics = recorder.snapshot(marks: [:])
        require(statistics.recordsMissing >= whole.missing, "the missing count went down")
    }

    struct ProcessorSummary: Equatable {
        var mark: UInt64
        var lines = 0
        var duplicates: UInt64 = 0
        var resent: UInt64 = 0
        var heartbeats: UInt64 = 0
        var gaps = 0
        var missing: UInt64 = 0
        var malformed: UInt64 = 0
        var tooLong: UInt64 = 0

        mutating func add(_ batch: ReceivedBatch) {
            mark = batch.highestSequence
            lines += batch.lines.count
            duplicates += batch.duplicates
            resent += batch.resent
            heartbeats += batch.heartbeats
            gaps += batch.gapCount
            let (sum, overflow) = missing.addingReportingOverflow(batch.missing)
            missing = overflow ? .max : sum
            malformed += batch.malformed
            tooLong += batch.tooLong
        }
    }

    // MARK: ack-line

    static func ackLine(_ data: UnsafeRawBufferPointer) {
        guard let line = AckLine.parse(data) else { return }
        let value: UInt64
        switch line {
        case .resume(let mark), .ack(let mark): value = mark
        }
        require(WireIntegers.mark.contains(value), "ack/resume \(value) out of range")
        var buffer = ByteBufferAllocator().buffer(capacity: 32)
        WireLineWriter.appendAckLine(line, to: &buffer)
        buffer.moveWriterIndex(to: buffer.writerIndex - 1)
        require(AckLine.parse(buffer) == line, "the writer's line does not parse back")
        // Only spaces and tabs may separate what the writer writes.
        let stripped = data.filter { $0 != UInt8(ascii: " ") && $0 != UInt8(ascii: "\t") }
        require(stripped == Array(buffer.readableBytesView), "a non-canonical line was accepted")
    }

    // MARK: signed-config

    /// A key no fuzz input was signed with.
    static let unrelatedKey = Ed25519.SecretKey(seed: [UInt8](repeating: 7, count: 32))!.publicKey

    static func signedConfig(_ data: UnsafeRawBufferPointer) {
        let bytes = Array(data)
        if let envelope = try? ConfigEnvelope(json: bytes) {
            require(ConfigEnvelope.isValidName(envelope.name), "an envelope with an invalid name was accepted")
            require(envelope.signature.count == 64, "an envelope with a malformed signature was accepted")
            require(ConfigEnvelope.seconds(rfc3339: ConfigEnvelope.rfc3339(envelope.notAfter)) == envelope.notAfter,
                "not_after does not write back")
            require((try? ConfigEnvelope(json: envelope.json)) == envelope, "an envelope does not write back")
            require(!unrelatedKey.isValidSignature(envelope.signature, for: envelope.signedBytes),
                "a signature verified with a key that did not make it")
        }
        if let manifest = try? ConfigManifest(json: bytes) {
            require(manifest.documents.count <= ConfigManifest.maximumDocuments, "too many documents were accepted")
            require(Set(manifest.documents.map(\.name)).count == manifest.documents.count, "a name twice was accepted")
            require(manifest.documents.allSatisfy { ConfigEnvelope.isValidName($0.name) && $0.size >= 0 },
                "a malformed document entry was accepted")
            require((try? ConfigManifest(json: manifest.json)) == manifest, "a manifest does not write back")
        }
    }

    // MARK: config-line

    static func configLine(_ data: UnsafeRawBufferPointer) {
        if let hint = ConfigHint.parse(data) {
            require(ConfigHint.isRevision(hint.revision.utf8), "a config line with a malformed rev was accepted")
            require(WireIntegers.mark.contains(hint.generation), "generation \(hint.generation) out of range")
            var buffer = ByteBufferAllocator().buffer(capacity: 128)
            WireLineWriter.appendConfigLine(hint, to: &buffer)
            buffer.moveWriterIndex(to: buffer.writerIndex - 1)
            require(ConfigHint.parse(buffer) == hint, "the writer's config line does not parse back")
            require(ConfigHint(headerValue: hint.headerValue) == hint, "the Uplink-Config header does not parse back")
        }
        if let header = ConfigHint(headerValue: String(decoding: data, as: UTF8.self)) {
            require(ConfigHint(headerValue: header.headerValue) == header, "a header value does not parse back")
        }
        if let status = try? ConfigStatus.parse(data) {
            for revision in [status.desired, status.effective, status.lastKnownGood] {
                if let revision { require(ConfigHint.isRevision(revision.utf8), "a malformed revision was accepted") }
            }
            var line: [UInt8] = []
            WireLineWriter.appendConfigStatusLine(status, to: &line)
            line.removeLast()
            let again = line.withUnsafeBytes { try? ConfigStatus.parse($0) }
            require(again == status, "the writer's config_status line does not parse back")
            let summary = line.withUnsafeBytes { try? WireLineParser.scan($0) }
            require(summary == .configStatus(status), "the body line parser does not read the config_status line")
        }
    }

    // MARK: stream-headers

    /// Input: fields separated by `\n`: agent id, epoch, protocol, authorization, token.
    static func streamHeaders(_ data: UnsafeRawBufferPointer) {
        let fields = data.split(separator: UInt8(ascii: "\n"), maxSplits: 4, omittingEmptySubsequences: false)
        func field(_ index: Int) -> [UInt8] { index < fields.count ? Array(fields[index]) : [] }
        let (agent, epoch, version, authorization, token) = (field(0), field(1), field(2), field(3), field(4))

        if let id = StreamHeaders.agentID(agent) {
            require(Array(id.utf8) == agent && (1...128).contains(agent.count), "agent id not kept as given")
            require(agent.allSatisfy(StreamHeaders.isAgentIDByte), "agent id with a forbidden byte")
        } else {
            require(agent.isEmpty || agent.count > 128 || !agent.allSatisfy(StreamHeaders.isAgentIDByte), "valid agent id refused")
        }

        if let value = StreamHeaders.epoch(epoch) {
            require(WireIntegers.epoch.contains(value), "epoch out of range")
            require(Array(String(value).utf8) == epoch, "epoch not canonical")
        } else if let text = String(validating: epoch, as: UTF8.self), let value = UInt64(text),
            String(value) == text, WireIntegers.epoch.contains(value)
        {
            fatalError("fuzz property violated: canonical epoch \(text) refused")
        }

        // `Uplink-Window` has the epoch's spelling and range: the same field checks it.
        if let value = StreamHeaders.window(epoch) {
            require(WireIntegers.window.contains(value) && Array(String(value).utf8) == epoch, "window not canonical")
        }
        require((StreamHeaders.window(epoch) == nil) == (StreamHeaders.epoch(epoch) == nil), "window and epoch disagree")

        let trimmed = version.drop { $0 == 32 || $0 == 9 }.reversed().drop { $0 == 32 || $0 == 9 }
        require(StreamHeaders.isSupportedProtocol(version) == (Array(trimmed) == [UInt8(ascii: "1")]), "protocol check")

        require(
            StreamHeaders.isBearer(authorization, token: token) == (authorization == Array("Bearer ".utf8) + token),
            "bearer comparison")
    }

    // MARK: decompress

    /// Input: one byte choosing the encoding (low bit) and seeding the cuts, then the bytes.
    static func decompress(_ data: UnsafeRawBufferPointer) {
        guard let first = data.first else { return }
        let encoding: WireCompression = first & 1 == 0 ? .zstd : .gzip
        var random = SplitMix64(seed: UInt64(first))
        let body = UnsafeRawBufferPointer(rebasing: data[1...])

        // 1. As a compressed body: decode in chunks until it ends or fails; never more than the limit per chunk.
        do {
            let decompressor = try StreamDecompressor(encoding)
            var offset = 0
            decoding: while offset < body.count {
                let length = min(body.count - offset, Int.random(in: 1...64, using: &random))
                decompressor.feed(ByteBuffer(bytes: UnsafeRawBufferPointer(rebasing: body[offset..<(offset + length)])))
                offset += length
                var produced = 0
                do {
                    while let piece = try decompressor.next() {
                        require(piece.readableBytes <= StreamDecompressor.pieceBytes, "a piece above pieceBytes")
                        produced += piece.readableBytes
                    }
                } catch {
                    break decoding  // corrupt or a bomb: the collector ends the stream
                }
                require(
                    produced <= StreamDecompressor.outputLimit(inputBytes: length) + StreamDecompressor.pieceBytes,
                    "a chunk of \(length) bytes gave \(produced) bytes")
            }
        } catch {
            fatalError("fuzz property violated: no decompressor: \(error)")
        }

        // 2. As plain text: compressed with flushes at random points, decoded in random chunks, it comes back.
        do {
            let compressor = try StreamCompressor(encoding)
            var compressed = ByteBuffer()
            var offset = 0
            while offset < body.count {
                let length = min(body.count - offset, Int.random(in: 1...200, using: &random))
                try compressor.compress(UnsafeRawBufferPointer(rebasing: body[offset..<(offset + length)]), flush: Bool.random(using: &random), into: &compressed)
                offset += length
            }
            try compressor.compress(UnsafeRawBufferPointer(start: nil, count: 0), flush: true, into: &compressed)
            let decompressor = try StreamDecompressor(encoding)
            var output: [UInt8] = []
            while compressed.readableBytes > 0 {
                let chunk = compressed.readSlice(length: min(compressed.readableBytes, Int.random(in: 1...100, using: &random)))!
                decompressor.feed(chunk)
                while let piece = try decompressor.next() { output.append(contentsOf: piece.readableBytesView) }
            }
            require(output.elementsEqual(body), "a round trip through \(encoding) changed \(body.count) bytes")
        } catch {
            fatalError("fuzz property violated: a round trip through \(encoding) failed: \(error)")
        }
    }

    // MARK: remote-document

    /// The local file the remote documents are merged into.
    static let remoteLocal: UplinkFile = {
        let yaml = """
            uplink: { url: http://127.0.0.1:4318 }
            sources: [{ name: cpu, type: cpu }]
            remote_config:
              enabled: true
              require_signature: false
              allow:
                source_types: [cpu, memory, tail, sysfs, journald, exec]
                tail_paths: ["/var/log/app/**"]
                sysfs_paths: ["/sys/bus/iio/devices/**"]
                journald_units: ["app-*"]
                exec: [{ argv: [/usr/local/lib/uplink/probes/read, "*"] }]
                max_sources: 8
            """
        guard let local = UplinkFile.decode(yaml, file: "local.yaml", environment: [:], collectorSection: { _ in }).value else {
            fatalError("the remote-document target's local file does not decode")
        }
        return local
    }()

    static func remoteDocument(_ data: UnsafeRawBufferPointer) {
        let bytes = Array(data)
        let sha256 = SHA256Digest(of: bytes).hex
        let result = RemoteConfiguration.merge(local: remoteLocal, documents: [("fuzz", bytes, sha256)])
        require((result.value == nil) == !result.issues.isEmpty, "a value with issues, or no value and no issue")
        let file = RemoteDocument.issueFile(name: "fuzz", sha256: sha256)
        for issue in result.issues {
            require(issue.file == file, "an issue of another file: \(issue.file)")
            require(
                !issue.description.unicodeScalars.contains { $0.value < 0x20 || (0x7F...0x9F).contains($0.value) },
                "an issue with a control character: \(issue.description.debugDescription)")
        }
        guard let merged = result.value else { return }
        require(
            !bytes.indices.dropLast().contains { bytes[$0] == UInt8(ascii: "$") && bytes[$0 + 1] == UInt8(ascii: "{") },
            "accepted a ${")
        let allow = remoteLocal.remoteConfig.allow
        let remote = merged.sources.dropFirst(remoteLocal.sources.count)
        require(remote.count <= allow.maxSources, "more than max_sources")
        for source in remote {
            require(source.name != "cpu", "accepted a local name")
            require(allow.sourceTypes.contains(source.config.kind), "accepted the type \(source.config.kind)")
        }
        // The merged file is what the agent would run: it must build.
        require(
            merged.agentConfiguration(embedded: nil, environment: [:]).sources.count == merged.sources.count,
            "the merged file lost sources")
    }

    // MARK: config

    static func config(_ data: UnsafeRawBufferPointer) {
        let text = String(decoding: data, as: UTF8.self)
        let result = UplinkFile.decode(text, file: "fuzz.yaml", environment: ["HOME": "/nonexistent", "UPLINK_FUZZ": "x\n\u{1b}"]) {
            _ = CollectorConfiguration.decode($0)
        }
        require((result.value == nil) == !result.issues.isEmpty, "a value with issues, or no value and no issue")
        for issue in result.issues {
            let line = issue.description
            require(
                !line.unicodeScalars.contains { $0.value < 0x20 || (0x7F...0x9F).contains($0.value) || $0 == "\u{2028}" || $0 == "\u{2029}" },
                "an issue with a control character: \(line.debugDescription)")
            require(issue.line >= 0 && issue.column >= 0, "negative position")
        }
    }
}
