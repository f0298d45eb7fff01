/// Where one file incarnation stands: what identifies it and how far the collector has acknowledged its lines.
struct TailCheckpoint: Sendable, Equatable {
    var inode: TailFS.Inode
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
        guard let text = String(validating: bytes, as: UTF8.self) else {
            return .failure(FormatError(line: 0, reason: "not UTF-8"))
        }
        var lines = text.split(separator: "\n", omittingEmptySubsequences: false)
        if lines.last == "" { lines.removeLast() }
        guard lines.first.map(String.init) == header else {
            return .failure(FormatError(line: 1, reason: "expected \"\(header)\""))
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
                fields[3].utf8.count == 16, fields[3].utf8.allSatisfy({ (0x30...0x39).contains($0) || (0x61...0x66).contains($0 | 0x20) }),
                let hash = UInt64(fields[3], radix: 16),
                let origin = decimal(fields[4], upTo: UInt64(Int64.max)), origin >= 1,
                let offset = decimal(fields[5], upTo: UInt64(Int64.max)),
                let path = unescape(fields[6]), !path.isEmpty
            else {
                return .failure(FormatError(line: number, reason: "malformed entry"))
            }
            checkpoints.append(TailCheckpoint(
                inode: TailFS.Inode(device: device, inode: inode),
                fingerprint: TailFingerprint(length: length, hash: hash), originID: origin, offset: offset,
                path: path))
        }
        guard ended else { return .failure(FormatError(line: lines.count, reason: "incomplete (no end line)")) }
        return .success(checkpoints)
    }

    /// A field of ASCII digits only (no sign, which `UInt64(_:)` would take) whose value is at most `maximum`.
    private static func decimal(_ field: Substring, upTo maximum: UInt64) -> UInt64? {
        guard !field.isEmpty, field.utf8.allSatisfy({ $0 >= UInt8(ascii: "0") && $0 <= UInt8(ascii: "9") }),
            let value = UInt64(field), value <= maximum
        else { return nil }
        return value
    }

    private static func hex(_ value: UInt64) -> String {
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
