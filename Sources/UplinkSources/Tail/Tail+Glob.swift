#if canImport(Glibc)
import Glibc
#elseif canImport(Musl)
import Musl
#elseif canImport(Darwin)
import Darwin
#endif

/// A glob pattern of file paths, split into `/`-separated components.
///
/// A component is matched against one path component: `*` matches any run of bytes (dots included), `?` one
/// byte, `[abc]`, `[a-z]` one byte of a set (`[!…]` or `[^…]` negated; a `]` first in the set is literal), `\`
/// escapes the next byte. A component that is exactly `**` matches zero or more whole directories.
struct TailGlob: Sendable, Equatable {
    enum Component: Sendable, Equatable {
        /// A name without wildcards (escapes removed).
        case literal(String)
        /// A name with wildcards, as raw pattern bytes.
        case wildcard([UInt8])
        /// `**`: any number of directories.
        case recursive
    }

    let pattern: String
    let isAbsolute: Bool
    let components: [Component]

    init(_ pattern: String) {
        self.pattern = pattern
        isAbsolute = pattern.hasPrefix("/")
        var components = pattern.split(separator: "/", omittingEmptySubsequences: true).map { part -> Component in
            let bytes = Array(part.utf8)
            if bytes == Array("**".utf8) { return .recursive }
            if let literal = Self.literalValue(bytes) { return .literal(literal) }
            return .wildcard(bytes)
        }
        // `dir/**` means every file below `dir`.
        if components.last == .recursive { components.append(.wildcard(Array("*".utf8))) }
        self.components = components
    }

    /// The component without escapes when it has no wildcard, nil otherwise.
    private static func literalValue(_ bytes: [UInt8]) -> String? {
        var result: [UInt8] = []
        var index = 0
        while index < bytes.count {
            let byte = bytes[index]
            switch byte {
            case UInt8(ascii: "*"), UInt8(ascii: "?"), UInt8(ascii: "["):
                return nil
            case UInt8(ascii: "\\") where index + 1 < bytes.count:
                result.append(bytes[index + 1])
                index += 2
            default:
                result.append(byte)
                index += 1
            }
        }
        return String(decoding: result, as: UTF8.self)
    }

    // MARK: Matching

    /// Whether the whole `path` matches (component by component; `**` spans directories).
    func matches(_ path: String) -> Bool {
        guard path.hasPrefix("/") == isAbsolute else { return false }
        let parts = path.split(separator: "/", omittingEmptySubsequences: true).map { Array($0.utf8) }
        return Self.match(components, 0, parts, 0)
    }

    private static func match(_ pattern: [Component], _ p: Int, _ parts: [[UInt8]], _ s: Int) -> Bool {
        if p == pattern.count { return s == parts.count }
        switch pattern[p] {
        case .recursive:
            for next in s...parts.count where match(pattern, p + 1, parts, next) { return true }
            return false
        case .literal(let name):
            guard s < parts.count, Array(name.utf8) == parts[s] else { return false }
            return match(pattern, p + 1, parts, s + 1)
        case .wildcard(let bytes):
            guard s < parts.count, matchComponent(bytes, parts[s]) else { return false }
            return match(pattern, p + 1, parts, s + 1)
        }
    }

    /// Whether the name `name` matches the component pattern `pattern` (wildcards within one component).
    static func matchComponent(_ pattern: [UInt8], _ name: [UInt8]) -> Bool {
        var p = 0
        var s = 0
        var starP = -1
        var starS = 0
        while s < name.count {
            if p < pattern.count {
                let c = pattern[p]
                if c == UInt8(ascii: "*") {
                    starP = p
                    starS = s
                    p += 1
                    continue
                }
                if c == UInt8(ascii: "?") {
                    p += 1
                    s += 1
                    continue
                }
                if c == UInt8(ascii: "["), let (matched, next) = matchClass(pattern, p, name[s]) {
                    if matched {
                        p = next
                        s += 1
                        continue
                    }
                } else {
                    var literal = c
                    var width = 1
                    if c == UInt8(ascii: "\\"), p + 1 < pattern.count {
                        literal = pattern[p + 1]
                        width = 2
                    }
                    if literal == name[s] {
                        p += width
                        s += 1
                        continue
                    }
                }
            }
            // Mismatch: let the last `*` absorb one more byte, if there is one.
            guard starP >= 0 else { return false }
            p = starP + 1
            starS += 1
            s = starS
        }
        while p < pattern.count, pattern[p] == UInt8(ascii: "*") { p += 1 }
        return p == pattern.count
    }

    /// Matches `byte` against the set starting at `pattern[start] == "["`. Returns whether it matched and the
    /// index after the closing `]`, or nil when the set is not closed (then `[` is a literal).
    private static func matchClass(_ pattern: [UInt8], _ start: Int, _ byte: UInt8) -> (Bool, Int)? {
        var index = start + 1
        var negated = false
        if index < pattern.count, pattern[index] == UInt8(ascii: "!") || pattern[index] == UInt8(ascii: "^") {
            negated = true
            index += 1
        }
        var matched = false
        var first = true
        while index < pattern.count {
            var low = pattern[index]
            if low == UInt8(ascii: "]"), !first {
                return (matched != negated, index + 1)
            }
            first = false
            if low == UInt8(ascii: "\\"), index + 1 < pattern.count {
                index += 1
                low = pattern[index]
            }
            index += 1
            var high = low
            if index + 1 < pattern.count, pattern[index] == UInt8(ascii: "-"), pattern[index + 1] != UInt8(ascii: "]") {
                high = pattern[index + 1]
                if high == UInt8(ascii: "\\"), index + 2 < pattern.count {
                    high = pattern[index + 2]
                    index += 1
                }
                index += 2
            }
            if low <= byte, byte <= high { matched = true }
        }
        return nil
    }

    // MARK: Expansion

    /// What one expansion of the globs found.
    struct Expansion: Sendable, Equatable {
        /// Paths of matching regular files, sorted, without duplicates.
        var files: [String] = []
        /// Directories whose changes can add or remove matches: every directory listed or looked into, and for a
        /// missing directory the deepest existing one above it.
        var directories: Set<String> = []
    }

    /// Deepest `**` descent; protects against absurd trees.
    static let maximumDepth = 40

    /// Whether `path` (as an expansion would spell it) matches one of `patterns` and no `exclude` pattern.
    static func matches(_ path: String, _ patterns: [TailGlob], exclude: TailExclude) -> Bool {
        patterns.contains { $0.matches(path) } && !exclude.excludes(path)
    }

    /// The path of `name` in the watched directory `directory`, spelled as an expansion spells it (a directory
    /// listed as `.` stands for the empty prefix of a relative pattern).
    static func path(of name: String, in directory: String) -> String {
        directory == "." ? name : joinPath(directory, name)
    }

    /// Expands `patterns` on the file system, leaving out paths that `exclude` matches.
    static func expand(_ patterns: [TailGlob], exclude: TailExclude) -> Expansion {
        var found = Set<String>()
        var directories = Set<String>()
        for glob in patterns {
            glob.walk(prefix: glob.isAbsolute ? "/" : "", index: 0, depth: 0, found: &found, directories: &directories)
        }
        return Expansion(files: found.filter { !exclude.excludes($0) }.sorted(), directories: directories)
    }

    private func walk(prefix: String, index: Int, depth: Int, found: inout Set<String>, directories: inout Set<String>) {
        let listing = prefix.isEmpty ? "." : prefix
        guard index < components.count else {
            if TailFS.isRegularFile(prefix) { found.insert(prefix) }
            return
        }
        let isLast = index == components.count - 1
        switch components[index] {
        case .literal(let name):
            let next = joinPath(prefix, name)
            if isLast {
                directories.insert(listing)
                if TailFS.isRegularFile(next) { found.insert(next) }
            } else if SourceFiles.isDirectory(next) {
                walk(prefix: next, index: index + 1, depth: depth, found: &found, directories: &directories)
            } else {
                directories.insert(listing)
            }
        case .wildcard(let bytes):
            directories.insert(listing)
            for entry in TailFS.list(listing) where Self.matchComponent(bytes, Array(entry.name.utf8)) {
                let next = joinPath(prefix, entry.name)
                if isLast {
                    // The directory entry's type spares a `stat` per file (thousands of rotated files).
                    if (entry.isRegular ?? TailFS.isRegularFile(next)) || (entry.isSymbolicLink && TailFS.isRegularFile(next)) {
                        found.insert(next)
                    }
                } else if entry.isDirectory ?? SourceFiles.isDirectory(next) {
                    walk(prefix: next, index: index + 1, depth: depth, found: &found, directories: &directories)
                }
            }
        case .recursive:
            directories.insert(listing)
            walk(prefix: prefix, index: index + 1, depth: depth, found: &found, directories: &directories)
            guard depth < Self.maximumDepth else { return }
            // Real directories only: following symbolic links could loop.
            for entry in TailFS.list(listing) where entry.isDirectory ?? TailFS.isRealDirectory(joinPath(prefix, entry.name)) {
                if entry.isSymbolicLink { continue }
                walk(
                    prefix: joinPath(prefix, entry.name), index: index, depth: depth + 1, found: &found,
                    directories: &directories)
            }
        }
    }
}

/// The `exclude` patterns: one without `/` is matched against the file name, one with `/` against the path.
struct TailExclude: Sendable, Equatable {
    private var namePatterns: [[UInt8]] = []
    private var pathPatterns: [TailGlob] = []

    init(_ patterns: [String]) {
        for pattern in patterns {
            if pattern.utf8.contains(UInt8(ascii: "/")) {
                pathPatterns.append(TailGlob(pattern))
            } else {
                namePatterns.append(Array(pattern.utf8))
            }
        }
    }

    func excludes(_ path: String) -> Bool {
        if !namePatterns.isEmpty {
            let name = Array((path.split(separator: "/").last ?? Substring(path)).utf8)
            if namePatterns.contains(where: { TailGlob.matchComponent($0, name) }) { return true }
        }
        return pathPatterns.contains { $0.matches(path) }
    }
}
