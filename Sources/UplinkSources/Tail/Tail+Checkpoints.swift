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
        let safe = String(
            sourceName.unicodeScalars.map { scalar -> Character in
                let ok = (scalar >= "a" && scalar <= "z") || (scalar >= "A" && scalar <= "Z")
                    || (scalar >= "0" && scalar <= "9") || scalar == "." || scalar == "_" || scalar == "-"
                return ok ? Character(scalar) : "_"
            })
        let name = safe.isEmpty || safe == "." || safe == ".." ? "_" : safe
        return joinPath(joinPath(stateDirectory, "tail"), name + ".checkpoints")
    }

    static func encode(_ checkpoints: [TailCheckpoint]) -> [UInt8] {
        var text = header + "\n"
        for checkpoint in checkpoints {
            text += "\(checkpoint.inode.device) \(checkpoint.inode.inode) \(checkpoint.fingerprint.length) "
            text += hex(checkpoint.fingerprint.hash)
            text += " \(checkpoint.originID) \(checkpoint.offset) \(escape(checkpoint.path))\n"
        }
        text += "end \(checkpoints.count)\n"
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
                guard Int(line.dropFirst(4)) == checkpoints.count else {
                    return .failure(FormatError(line: number, reason: "the end line does not match the entries"))
                }
                ended = true
                continue
            }
            let fields = line.split(separator: " ", maxSplits: 6, omittingEmptySubsequences: false)
            guard fields.count == 7,
                let device = UInt64(fields[0]), let inode = UInt64(fields[1]),
                let length = Int(fields[2]), (0...TailFingerprint.maximumLength).contains(length),
                fields[3].utf8.count == 16, let hash = UInt64(fields[3], radix: 16),
                let origin = UInt64(fields[4]), origin >= 1, origin <= UInt64(Int64.max),
                let offset = UInt64(fields[5]),
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
