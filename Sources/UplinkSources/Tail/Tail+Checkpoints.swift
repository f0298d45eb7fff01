import UplinkCore
import UplinkFiles

#if canImport(Glibc)
import Glibc
#elseif canImport(Musl)
import Musl
#elseif canImport(Darwin)
import Darwin
#endif

/// Where one file incarnation stands: what identifies it and how far the collector has acknowledged its lines.
struct TailCheckpoint: Sendable, Equatable {
    var inode: FileIdentity
    var fingerprint: TailFingerprint
    var originID: UInt64
    /// Offset just past the last acknowledged line: reading resumes here.
    var offset: UInt64
    /// The path the file was last seen under.
    var path: String
}

/// The checkpoint file, `<state_dir>/tail/<source name>.checkpoints`: UTF-8 text, one file per line.
///
/// ```
/// uplink-tail-checkpoints 1
/// <device> <inode> <fingerprint length> <fingerprint, 16 hex digits> <origin id> <offset> <path>
/// …
/// end <number of file lines>
/// ```
///
/// Numbers are decimal except the fingerprint. The path is the rest of the line, with `\` written as `\\` and
/// a line feed as `\n`. The `end` line shows the file is complete. The file is replaced atomically (written to
/// `<file>.tmp`, flushed, renamed over it, directory flushed).
enum TailCheckpointFile {
    static let header = "uplink-tail-checkpoints 1"

    /// The checkpoint file's path for a source: its name with characters other than letters, digits, `.`, `_`
    /// and `-` replaced by `_`.
    static func path(stateDirectory: String, sourceName: String) -> String {
        sourceStateFile(stateDirectory: stateDirectory, kindDirectory: "tail", sourceName: sourceName, suffix: ".checkpoints")
    }

    static func encode(_ checkpoints: [TailCheckpoint]) -> [UInt8] {
        encode(lines: checkpoints.map(encodeLine))
    }

    /// The file made of entry lines from `encodeLine`.
    static func encode(lines: [[UInt8]]) -> [UInt8] {
        var bytes = Array((header + "\n").utf8)
        bytes.reserveCapacity(bytes.count + lines.reduce(0) { $0 + $1.count } + 32)
        for line in lines { bytes += line }
        bytes += Array("end \(lines.count)\n".utf8)
        return bytes
    }

    /// One entry's line, with its line feed.
    static func encodeLine(_ checkpoint: TailCheckpoint) -> [UInt8] {
        var text = "\(checkpoint.inode.device) \(checkpoint.inode.inode) \(checkpoint.fingerprint.length) "
        text += hex(checkpoint.fingerprint.hash)
        text += " \(checkpoint.originID) \(checkpoint.offset) \(escape(checkpoint.path))\n"
        return Array(text.utf8)
    }

    struct FormatError: Error, CustomStringConvertible {
        var line: Int
        var reason: String
        var description: String { "line \(line): \(reason)" }
    }

    static func decode(_ bytes: [UInt8]) -> Result<[TailCheckpoint], FormatError> {
        decode(bytes, header: { $0 == header ? () : nil }, expected: header).map(\.checkpoints)
    }

    /// The lines of a checkpoint or changes file: a header that `header` accepts (returning what it carries), entry
    /// lines, and the end line.
    static func decode<Header>(
        _ bytes: [UInt8], header: (Substring) -> Header?, expected: String
    ) -> Result<(header: Header, checkpoints: [TailCheckpoint]), FormatError> {
        guard let text = String(validating: bytes, as: UTF8.self) else {
            return .failure(FormatError(line: 0, reason: "not UTF-8"))
        }
        var lines = text.split(separator: "\n", omittingEmptySubsequences: false)
        if lines.last == "" { lines.removeLast() }
        guard let first = lines.first, let headerValue = header(first) else {
            return .failure(FormatError(line: 1, reason: "expected \"\(expected)\""))
        }
        var checkpoints: [TailCheckpoint] = []
        var ended = false
        for (index, line) in lines.enumerated().dropFirst() {
            let number = index + 1
            if ended { return .failure(FormatError(line: number, reason: "text after the end line")) }
            if line.hasPrefix("end ") {
                guard decimal(line.dropFirst(4), upTo: .max) == UInt64(checkpoints.count) else {
                    return .failure(FormatError(line: number, reason: "the end line does not match the entries"))
                }
                ended = true
                continue
            }
            let fields = line.split(separator: " ", maxSplits: 6, omittingEmptySubsequences: false)
            // Every number in range where it is read: origin and offset go on the wire (docs/protocol.md,
            // "Integer ranges": 1...2^63-1 and 0...2^63-1).
            guard fields.count == 7,
                let device = decimal(fields[0], upTo: .max), let inode = decimal(fields[1], upTo: .max),
                let length = decimal(fields[2], upTo: UInt64(TailFingerprint.maximumLength)).map(Int.init),
                let hash = hexadecimal(fields[3]),
                let origin = decimal(fields[4], upTo: UInt64(Int64.max)), origin >= 1,
                let offset = decimal(fields[5], upTo: UInt64(Int64.max)),
                let path = unescape(fields[6]), !path.isEmpty
            else {
                return .failure(FormatError(line: number, reason: "malformed entry"))
            }
            checkpoints.append(TailCheckpoint(
                inode: FileIdentity(device: device, inode: inode),
                fingerprint: TailFingerprint(length: length, hash: hash), originID: origin, offset: offset,
                path: path))
        }
        guard ended else { return .failure(FormatError(line: lines.count, reason: "incomplete (no end line)")) }
        return .success((headerValue, checkpoints))
    }

    /// Exactly 16 hexadecimal digits.
    static func hexadecimal(_ field: Substring) -> UInt64? {
        field.utf8.count == 16 ? ASCIIHexadecimal.value(field.utf8) : nil
    }

    /// A field of ASCII digits only (no sign, which `UInt64(_:)` would take) whose value is at most `maximum`.
    private static func decimal(_ field: Substring, upTo maximum: UInt64) -> UInt64? {
        guard let value = ASCIIDecimal.value(field.utf8), value <= maximum else { return nil }
        return value
    }

    static func hex(_ value: UInt64) -> String {
        let digits = String(value, radix: 16)
        return String(repeating: "0", count: 16 - digits.count) + digits
    }

    static func escape(_ path: String) -> String {
        var result = ""
        for character in path.unicodeScalars {
            switch character {
            case "\\": result += "\\\\"
            case "\n": result += "\\n"
            default: result.unicodeScalars.append(character)
            }
        }
        return result
    }

    static func unescape(_ text: Substring) -> String? {
        var result = ""
        var escaping = false
        for character in text.unicodeScalars {
            if escaping {
                switch character {
                case "\\": result += "\\"
                case "n": result += "\n"
                default: return nil
                }
                escaping = false
            } else if character == "\\" {
                escaping = true
            } else {
                result.unicodeScalars.append(character)
            }
        }
        return escaping ? nil : result
    }
}

/// The changes file beside a checkpoint file, `<checkpoint file>.changes`: the entries that differ from the
/// checkpoint file (files whose offset moved since it was written, and new files), so that with thousands of files
/// mostly at rest a checkpoint does not rewrite every file's line.
///
/// ```
/// uplink-tail-checkpoint-changes 1 <FNV-1a hash of the checkpoint file's bytes, 16 hex digits>
/// <entry lines as in the checkpoint file>
/// end <number of entry lines>
/// ```
///
/// It applies only to the checkpoint file whose bytes have that hash: one left behind by a crash after the checkpoint
/// file was rewritten (and before this file was removed) is ignored. Replaced atomically like the checkpoint file.
enum TailCheckpointChanges {
    static let header = "uplink-tail-checkpoint-changes 1"

    static func path(checkpointFile: String) -> String { checkpointFile + ".changes" }

    /// The identity of a checkpoint file's content that a changes file names.
    static func contentHash(_ bytes: [UInt8]) -> UInt64 {
        bytes.withUnsafeBytes { TailFingerprint.fnv1a($0) }
    }

    static func encode(base: UInt64, lines: [[UInt8]]) -> [UInt8] {
        var bytes = Array("\(header) \(TailCheckpointFile.hex(base))\n".utf8)
        bytes.reserveCapacity(bytes.count + lines.reduce(0) { $0 + $1.count } + 32)
        for line in lines { bytes += line }
        bytes += Array("end \(lines.count)\n".utf8)
        return bytes
    }

    static func decode(_ bytes: [UInt8]) -> Result<(base: UInt64, checkpoints: [TailCheckpoint]), TailCheckpointFile.FormatError> {
        TailCheckpointFile.decode(
            bytes,
            header: { line -> UInt64? in
                guard line.hasPrefix(header + " ") else { return nil }
                return TailCheckpointFile.hexadecimal(line.dropFirst(header.utf8.count + 1))
            },
            expected: header + " <hash>"
        ).map { (base: $0.header, checkpoints: $0.checkpoints) }
    }

    /// The checkpoints that `checkpointFile` (its bytes) and the changes file beside it say together: each change
    /// replaces the entry of its file or is added. A changes file that is missing, unreadable, corrupt or written
    /// against other content is left out, with the reason (nil when there is simply none).
    static func merge(
        _ checkpoints: [TailCheckpoint], checkpointFileBytes: [UInt8], checkpointFile: String
    ) -> (checkpoints: [TailCheckpoint], problem: String?) {
        let changesPath = path(checkpointFile: checkpointFile)
        let bytes: [UInt8]
        switch SourceFiles.readAll(changesPath) {
        case .success(let content): bytes = content
        case .failure(let error):
            return (checkpoints, error.code == ENOENT ? nil : "cannot read \(changesPath) (\(error))")
        }
        switch decode(bytes) {
        case .failure(let error):
            return (checkpoints, "\(changesPath) is corrupt (\(error))")
        case .success(let changes):
            guard changes.base == contentHash(checkpointFileBytes) else {
                return (checkpoints, nil)  // left from before the checkpoint file was last rewritten
            }
            var merged = checkpoints
            var index: [FileIdentity: Int] = [:]
            for (position, checkpoint) in merged.enumerated() { index[checkpoint.inode] = position }
            for change in changes.checkpoints {
                if let position = index[change.inode] {
                    merged[position] = change
                } else {
                    index[change.inode] = merged.count
                    merged.append(change)
                }
            }
            return (merged, nil)
        }
    }
}
