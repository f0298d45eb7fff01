import Logging
import NIOCore
import UplinkCore
import UplinkFiles
import UplinkWire

/// Start-up recovery of the marks, so that a restarted collector neither stores duplicates nor asks agents for
/// data it has, whenever the previous process stopped (including `SIGKILL` at any instant):
///
/// 1. read the marks ledger, ignoring a torn last line;
/// 2. open the log (`CollectorLog.recover`: `records.jsonl`, or the segments under `log/`) and scan it from the
///    offset on the ledger's last line to the end, raising the marks of records that were written but not yet
///    ledgered;
/// 3. truncate an unterminated last line of the log's last segment: a torn write, never acknowledged;
/// 4. rewrite the ledger compacted, one line per stream (temporary file + rename).
enum StorageRecovery {
    struct Recovered {
        var marks: [StreamKey: UInt64]
        var ledger: MarksLedger
        var log: CollectorLog
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
        let settings = configuration.log
        let log = try CollectorLog.recover(
            configuration.logLayout, ledgerOffset: ledger.lastRecordsSize, fsync: configuration.fsync,
            segmentBytes: settings.segmentBytes, segmentAge: settings.segmentAge, maxLineBytes: configuration.maxLineBytes,
            marks: &marks, logger: logger)
        let rejectsDescriptor = try FileIO.openForAppending(rejectsPath)
        do throws(CollectorError) {
            let ledgerFile = try MarksLedger.create(
                path: configuration.marksFile, marks: marks, recordsSize: log.committedEnd, fsync: configuration.fsync)
            return Recovered(marks: marks, ledger: ledgerFile, log: log, rejectsDescriptor: rejectsDescriptor)
        } catch {
            FileIO.closeFile(rejectsDescriptor)
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
            guard case .line(let line) = piece, let key = StoredLine.key(of: line) else {
                unreadable += 1
                return
            }
            marks[key.stream] = max(marks[key.stream] ?? 0, key.sequence)
            if let origin = key.origin {
                let originKey = StreamKey.origin(agent: key.stream.agent, id: origin.id)
                marks[originKey] = max(marks[originKey] ?? 0, origin.offset)
            }
            recovered += 1
        }
        if unreadable > 0 {
            logger.warning(
                "The log has lines that are not stored records; they are ignored",
                metadata: ["file": "\(path)", "lines": "\(unreadable)"])
        }
        logger.debug(
            "Scanned the end of the log for records not in the ledger",
            metadata: ["file": "\(path)", "from": "\(start)", "to": "\(end - Int64(tail))", "records": "\(recovered)"])
        return tail
    }
}
