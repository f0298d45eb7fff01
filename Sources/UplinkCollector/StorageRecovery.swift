import Logging
import NIOCore
import UplinkCore
import UplinkWire

/// Start-up recovery of the marks, so that a restarted collector neither stores duplicates nor asks agents for
/// data it has, whenever the previous process stopped (including `SIGKILL` at any instant):
///
/// 1. read the marks ledger, ignoring a torn last line;
/// 2. when the JSONL sink is on, scan `records.jsonl` from the records size on the ledger's last line to the end,
///    raising the marks of records that were written but not yet ledgered (with `collector.sinks`, the same over
///    the write-ahead log's segments, from the ledger's log offset: `CollectorLog.recover`);
/// 3. truncate an unterminated last line of `records.jsonl` (or of the log's last segment): a torn write, never
///    acknowledged;
/// 4. rewrite the ledger compacted, one line per stream (temporary file + rename).
///
/// When the JSONL sink is off the ledger alone is the state.
enum StorageRecovery {
    struct Recovered {
        var marks: [StreamKey: UInt64]
        var ledger: MarksLedger
        /// `records.jsonl` opened for appending, when the JSONL sink is on (and there is no log).
        var recordsDescriptor: Int32?
        /// The write-ahead log, when `collector.sinks` is configured.
        var log: CollectorLog?
        var recordsSize: Int64
        var rejectsDescriptor: Int32
    }

    static func recover(_ configuration: CollectorConfiguration, logger: Logger) throws(CollectorError) -> Recovered {
        try FileIO.makeDirectories(configuration.dataDirectory)
        let rejectsPath = configuration.resolvedRejectsFile
        try FileIO.makeDirectories(AtomicFile.parentDirectory(of: rejectsPath))

        let ledger = try MarksLedger.read(path: configuration.marksFile)
        if ledger.invalidLines > 0 || ledger.tornBytes > 0 {
            logger.warning(
                "Marks ledger had unreadable lines; they are ignored",
                metadata: [
                    "file": "\(configuration.marksFile)", "invalid_lines": "\(ledger.invalidLines)",
                    "torn_bytes": "\(ledger.tornBytes)",
                ])
        }
        var marks = ledger.marks
        var recordsSize: Int64 = 0
        var recordsDescriptor: Int32?
        var log: CollectorLog?
        if configuration.sinks != nil {
            let settings = configuration.log
            let opened = try CollectorLog.recover(
                directory: configuration.logDirectory, ledgerOffset: ledger.lastRecordsSize, fsync: configuration.fsync,
                segmentBytes: settings.segmentBytes, segmentAge: settings.segmentAge,
                maxLineBytes: configuration.maxLineBytes, marks: &marks, logger: logger)
            recordsSize = opened.size
            log = opened
        } else if configuration.jsonlSink {
            let path = configuration.recordsFile
            guard let descriptor = try FileIO.openForUpdate(path, create: true) else {
                throw CollectorError(code: "io_error", message: "cannot open \(path)")
            }
            defer { FileIO.closeFile(descriptor) }
            let size = try FileIO.fileSize(descriptor, path: path)
            let start = min(ledger.lastRecordsSize ?? 0, size)
            let tail = try scanRecords(
                descriptor, path: path, from: start, to: size, maxLineBytes: configuration.maxLineBytes, marks: &marks,
                logger: logger)
            if tail > 0 {
                logger.warning(
                    "Removing an unterminated last line from the records file (a write cut off by a crash; never acknowledged)",
                    metadata: ["file": "\(path)", "bytes": "\(tail)"])
                try FileIO.truncateFile(descriptor, to: size - Int64(tail), path: path)
            }
            recordsSize = size - Int64(tail)
            recordsDescriptor = try FileIO.openForAppending(path)
        }
        do throws(CollectorError) {
            let rejectsDescriptor = try FileIO.openForAppending(rejectsPath)
            do throws(CollectorError) {
                let ledgerFile = try MarksLedger.create(
                    path: configuration.marksFile, marks: marks, recordsSize: recordsSize, fsync: configuration.fsync)
                return Recovered(
                    marks: marks, ledger: ledgerFile, recordsDescriptor: recordsDescriptor, log: log, recordsSize: recordsSize,
                    rejectsDescriptor: rejectsDescriptor)
            } catch {
                FileIO.closeFile(rejectsDescriptor)
                throw error
            }
        } catch {
            if let recordsDescriptor { FileIO.closeFile(recordsDescriptor) }
            throw error
        }
    }

    /// Raises `marks` with the records of `path` between `start` and `end` (records written but not yet in the
    /// ledger); returns the length of an unterminated last line.
    static func scanRecords(
        _ descriptor: Int32, path: String, from start: Int64, to end: Int64, maxLineBytes: Int,
        marks: inout [StreamKey: UInt64], logger: Logger
    ) throws(CollectorError) -> Int {
        var recovered = 0
        var unreadable = 0
        let tail = try LineReader.forEachLine(
            descriptor, path: path, from: start, to: end, maxLineBytes: 2 * max(maxLineBytes, 1 << 20) + 4096
        ) { piece in
            guard case .line(let line) = piece, let (stream, sequence, origin) = parseStoredRecord(line) else {
                unreadable += 1
                return
            }
            marks[stream] = max(marks[stream] ?? 0, sequence)
            if let origin {
                let key = StreamKey.origin(agent: stream.agent, id: origin.id)
                marks[key] = max(marks[key] ?? 0, origin.offset)
            }
            recovered += 1
        }
        if unreadable > 0 {
            logger.warning(
                "Records file has lines that are not stored records; they are ignored",
                metadata: ["file": "\(path)", "lines": "\(unreadable)"])
        }
        logger.debug(
            "Scanned the end of the records file for records not in the ledger",
            metadata: ["file": "\(path)", "from": "\(start)", "to": "\(end - Int64(tail))", "records": "\(recovered)"])
        return tail
    }

    /// The stream, sequence and origin of a line of `records.jsonl`: `{"agent":"<id>","epoch":<E>,` + a record
    /// line's keys.
    static func parseStoredRecord(_ line: ByteBuffer) -> (StreamKey, UInt64, RecordOrigin?)? {
        line.withUnsafeReadableBytes { raw -> (StreamKey, UInt64, RecordOrigin?)? in
            guard let stream = parseStoredPrefix(raw),
                case .record(let sequence, let origin)? = try? WireLineParser.scan(raw)
            else { return nil }
            return (stream, sequence, origin)
        }
    }

    /// The agent and epoch at the front of a stored line, `{"agent":"<id>","epoch":<E>,`.
    static func parseStoredPrefix(_ raw: UnsafeRawBufferPointer) -> StreamKey? {
        let agentKey: StaticString = #"{"agent":""#
        let epochKey: StaticString = #"","epoch":"#
        var index = 0
        func consume(_ literal: StaticString) -> Bool { raw.consume(literal, at: &index) }
        guard consume(agentKey) else { return nil }
        let agentStart = index
        while index < raw.count && raw[index] != UInt8(ascii: "\"") { index += 1 }
        guard let agent = AgentID.validated(raw[agentStart..<index]), consume(epochKey) else { return nil }
        let epochStart = index
        while index < raw.count && raw[index] != UInt8(ascii: ",") { index += 1 }
        guard let epoch = StreamHeaders.epoch(raw[epochStart..<index]) else { return nil }
        return StreamKey(agent: agent, epoch: epoch)
    }
}
