/// The checkpoint file of a `journald` source, `<state_dir>/journald/<source name>.cursor`: UTF-8 text,
///
/// ```
/// uplink-journald-cursor 1
/// <the journal cursor of the last entry the collector acknowledged>
/// end
/// ```
///
/// The `end` line shows the file is complete. It is replaced atomically (the tailer's helper: `<file>.tmp`, flushed,
/// renamed over it, directory flushed), and only ever names an entry the collector acknowledged.
enum JournaldCheckpointFile {
    static let header = "uplink-journald-cursor 1"
    /// Longest cursor accepted (sd-journal's are about 130 bytes).
    static let maximumCursorBytes = 4096

    /// The file's path for a source: its name with characters other than letters, digits, `.`, `_` and `-`
    /// replaced by `_` (as the tailer's).
    static func path(stateDirectory: String, sourceName: String) -> String {
        sourceStateFile(stateDirectory: stateDirectory, kindDirectory: "journald", sourceName: sourceName, suffix: ".cursor")
    }

    static func encode(cursor: String) -> [UInt8] {
        Array("\(header)\n\(cursor)\nend\n".utf8)
    }

    /// The cursor, or why the bytes are not a checkpoint file.
    static func decode(_ bytes: [UInt8]) -> Result<String, SourceError> {
        guard let text = String(validating: bytes, as: UTF8.self) else { return .failure(SourceError("not UTF-8")) }
        let lines = text.split(separator: "\n", omittingEmptySubsequences: false)
        guard lines.count == 4, lines[0] == header, lines[2] == "end", lines[3].isEmpty else {
            return .failure(SourceError("expected \"\(header)\", a cursor and \"end\""))
        }
        let cursor = lines[1]
        guard !cursor.isEmpty, cursor.utf8.count <= maximumCursorBytes,
            cursor.utf8.allSatisfy({ $0 > 0x20 && $0 < 0x7f })
        else {
            return .failure(SourceError("the cursor is empty, too long or holds spaces or control characters"))
        }
        return .success(String(cursor))
    }
}
