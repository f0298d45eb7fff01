import Foundation

/// Journal files for tests of the journald source, written by Debian's `systemd-journal-remote` (package
/// `systemd-journal-remote`) from the journal export format: no running journald needed. Each `append` runs it once;
/// it opens the `.journal` file given (creating it, or appending to an existing one) and exits.
public enum TestJournal {
    /// Where Debian installs it.
    public static let remotePath = "/usr/lib/systemd/systemd-journal-remote"

    /// Whether `systemd-journal-remote` is installed; tests that need it say so and skip when it is not.
    public static var isAvailable: Bool { FileManager.default.isExecutableFile(atPath: remotePath) }

    /// The message printed when a test skips.
    public static let skipMessage = "systemd-journal-remote is not installed (apt-get install systemd-journal-remote): skipped"

    /// One journal entry: its fields (any bytes as values) and the journal's timestamp.
    public struct Entry: Sendable {
        public var fields: [(name: String, value: [UInt8])]
        /// `__REALTIME_TIMESTAMP`, microseconds since the Unix epoch.
        public var realtime: UInt64

        public init(message: String, realtime: UInt64, fields: [(String, String)] = []) {
            self.init(message: Array(message.utf8), realtime: realtime, fields: fields)
        }

        public init(message: [UInt8], realtime: UInt64, fields: [(String, String)] = []) {
            self.fields = [("MESSAGE", message)] + fields.map { ($0.0, Array($0.1.utf8)) }
            self.realtime = realtime
        }
    }

    /// A boot id shared by all test entries.
    public static let bootID = "0123456789abcdef0123456789abcdef"

    /// The export format of `entries`: text fields as `NAME=value`, values with a newline or other control bytes in
    /// the binary form (name, newline, 64-bit little-endian length, bytes).
    public static func export(_ entries: [Entry]) -> [UInt8] {
        var bytes: [UInt8] = []
        for entry in entries {
            bytes += Array("__REALTIME_TIMESTAMP=\(entry.realtime)\n__MONOTONIC_TIMESTAMP=\(entry.realtime)\n_BOOT_ID=\(bootID)\n".utf8)
            for (name, value) in entry.fields {
                if value.contains(where: { $0 < 0x20 || $0 == 0x7f }) {
                    bytes += Array(name.utf8) + [0x0a]
                    withUnsafeBytes(of: UInt64(value.count).littleEndian) { bytes += $0 }
                    bytes += value + [0x0a]
                } else {
                    bytes += Array("\(name)=".utf8) + value + [0x0a]
                }
            }
            bytes.append(0x0a)
        }
        return bytes
    }

    public struct Failure: Error, CustomStringConvertible {
        public let description: String
    }

    /// Appends `entries` to the journal file `path` (which must end in `.journal`), creating it when missing.
    public static func append(_ entries: [Entry], to path: String) async throws {
        let exportPath = path + ".export-\(UInt64.random(in: 0...UInt64.max))"
        let logPath = exportPath + ".log"
        defer {
            try? FileManager.default.removeItem(atPath: exportPath)
            try? FileManager.default.removeItem(atPath: logPath)
        }
        try Data(export(entries)).write(to: URL(fileURLWithPath: exportPath))
        let process = try ChildProcess([remotePath, "--output=\(path)", exportPath], outputPath: logPath)
        guard await process.waitForExit(seconds: 60) else {
            await process.terminate(grace: 1)
            throw Failure(description: "systemd-journal-remote did not finish within 60 s")
        }
        guard process.exitStatus == 0 else {
            let log = (try? String(contentsOfFile: logPath, encoding: .utf8)) ?? ""
            throw Failure(description: "systemd-journal-remote failed (status \(process.exitStatus ?? -1)): \(log)")
        }
    }

    /// Entries `numbers` with the message `<prefix><number>` and 1 ms apart from `base` microseconds, each with a unit,
    /// a priority (number modulo 8), a pid, a host name and a syslog identifier.
    public static func numbered(_ numbers: Range<Int>, prefix: String = "n=", base: UInt64 = 1_700_000_000_000_000) -> [Entry] {
        numbers.map { number in
            Entry(
                message: "\(prefix)\(number)", realtime: base + UInt64(number) * 1000,
                fields: [
                    ("_SYSTEMD_UNIT", number % 2 == 0 ? "even.service" : "odd.service"), ("PRIORITY", "\(number % 8)"),
                    ("_PID", "\(1000 + number % 7)"), ("_HOSTNAME", "box"), ("SYSLOG_IDENTIFIER", "app"),
                ])
        }
    }
}
