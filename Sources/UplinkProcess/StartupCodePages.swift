import Logging
import UplinkFiles

#if canImport(Glibc)
import Glibc
#elseif canImport(Musl)
import Musl
#endif

/// Gives back the resident pages of code and read-only data that starting the process touched.
///
/// Starting the agent runs a lot of code once: argument parsing, the YAML parser, configuration checks, opening the
/// buffer and the state files. Those pages of the binary and its libraries stay mapped and count in the resident set,
/// several times the code that streaming touches (docs/deploy.md, "Start-up code pages"). They raise the peak a large
/// backlog reaches on top of the ring's capacity.
///
/// `MADV_DONTNEED` on a private, read-only file mapping only takes the pages out of this process's page tables: the
/// next access maps the same bytes again from the page cache (a minor fault; no disk read while the page stays
/// cached), so from then on the resident set holds the code that actually runs. Only mappings for which that is
/// exactly what was there are released: file-backed, private (`p`), not writable, and holding no private copy of any
/// page (`Anonymous: 0 kB` in `/proc/self/smaps`; a relocated or debugger-patched page would have one). Such mappings
/// belong to the executable and its shared libraries, which stay mapped for the life of the process (nothing here
/// unloads a library), so the addresses read from `smaps` still name them when `madvise` runs.
///
/// Linux only; elsewhere `release()` does nothing.
public enum StartupCodePages {
    /// What one `release()` gave back.
    public struct Released: Sendable, Equatable {
        /// Mappings whose pages were released.
        public var mappings: Int
        /// Resident bytes those mappings held just before.
        public var bytes: Int
        /// Why `/proc/self/smaps` could not be read, or nil.
        public var failure: String?
    }

    /// Releases the resident pages of every eligible mapping (see the type's documentation) and says how much.
    @discardableResult
    public static func release() -> Released {
        #if os(Linux)
        switch currentMappings() {
        case .success(let mappings):
            return release(mappings)
        case .failure(let failure):
            return Released(mappings: 0, bytes: 0, failure: "cannot read /proc/self/smaps: \(failure.reasonDescription)")
        }
        #else
        return Released(mappings: 0, bytes: 0, failure: nil)
        #endif
    }

    #if os(Linux)
    /// Releases those of `mappings` that are eligible (tests pass their own mappings, so as not to unmap the code of
    /// a whole test process under the other tests).
    static func release(_ mappings: [SmapsMapping]) -> Released {
        var released = Released(mappings: 0, bytes: 0, failure: nil)
        for mapping in mappings where mapping.isReleasable {
            guard let start = UnsafeMutableRawPointer(bitPattern: mapping.start) else { continue }
            if madvise(start, Int(mapping.end - mapping.start), MADV_DONTNEED) == 0 {
                released.mappings += 1
                released.bytes += mapping.residentKiB * 1024
            }
        }
        return released
    }
    #endif

    /// `release()`, logged at debug level (a failure at warning: nothing is lost, the memory stays resident).
    public static func release(logger: Logger, after stage: String) {
        let released = release()
        if let failure = released.failure {
            logger.warning("start-up code pages stay resident: \(failure)")
        } else {
            logger.debug(
                "gave back resident code pages", metadata: [
                    "after": "\(stage)", "mappings": "\(released.mappings)", "kib": "\(released.bytes / 1024)",
                ])
        }
    }

    #if os(Linux)
    /// This process's mappings now, from `/proc/self/smaps`.
    static func currentMappings() -> Result<[SmapsMapping], FileError> {
        WholeFile.read(path: "/proc/self/smaps").map { SmapsMapping.parse(String(decoding: $0, as: UTF8.self)) }
    }
    #endif
}

/// One mapping of `/proc/PID/smaps`: its header line and the fields `StartupCodePages` needs.
struct SmapsMapping: Equatable {
    var start: UInt
    var end: UInt
    /// `rwxp`-style permissions: the fourth letter is `p` (private) or `s` (shared).
    var permissions: String
    var inode: UInt64
    var path: String
    var residentKiB: Int = 0
    var anonymousKiB: Int = 0
    /// The two-letter flags of its `VmFlags:` line (`nh`: no transparent huge pages).
    var vmFlags: [String] = []

    /// File-backed, private, not writable, no private copy of any page, and something resident to give back.
    var isReleasable: Bool {
        let flags = Array(permissions.utf8)
        guard flags.count == 4, flags[1] != UInt8(ascii: "w"), flags[3] == UInt8(ascii: "p") else { return false }
        return inode != 0 && path.hasPrefix("/") && anonymousKiB == 0 && residentKiB > 0 && end > start
    }

    /// Parses `smaps` text. A header line starts a mapping (`start-end perms offset dev inode [path]`); the lines
    /// after it (`Rss:    123 kB`) describe it. Lines that fit neither are skipped, so a kernel that adds fields
    /// changes nothing; a mapping whose header does not parse is dropped with its fields.
    static func parse(_ text: String) -> [SmapsMapping] {
        var mappings: [SmapsMapping] = []
        var current: SmapsMapping?
        for line in text.split(separator: "\n", omittingEmptySubsequences: true) {
            if let header = header(line) {
                if let done = current { mappings.append(done) }
                current = header
                continue
            }
            guard current != nil, let colon = line.firstIndex(of: ":") else { continue }
            let name = line[..<colon]
            if name == "VmFlags" {
                current?.vmFlags = line[line.index(after: colon)...].split(separator: " ").map(String.init)
                continue
            }
            guard name == "Rss" || name == "Anonymous" else { continue }
            let value = line[line.index(after: colon)...].split(separator: " ").first.flatMap { Int($0) }
            guard let value else { continue }
            if name == "Rss" { current?.residentKiB = value } else { current?.anonymousKiB = value }
        }
        if let done = current { mappings.append(done) }
        return mappings
    }

    private static func header(_ line: Substring) -> SmapsMapping? {
        let fields = line.split(separator: " ", maxSplits: 5, omittingEmptySubsequences: true)
        guard fields.count >= 5, let dash = fields[0].firstIndex(of: "-"),
            let start = UInt(fields[0][..<dash], radix: 16),
            let end = UInt(fields[0][fields[0].index(after: dash)...], radix: 16),
            fields[1].count == 4, let inode = UInt64(fields[4])
        else { return nil }
        let path = fields.count > 5 ? String(fields[5].drop { $0 == " " }) : ""
        return SmapsMapping(start: start, end: end, permissions: String(fields[1]), inode: inode, path: path)
    }
}
