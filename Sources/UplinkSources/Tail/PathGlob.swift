/// A glob pattern of file paths, with the `tail` source's syntax and matching (`*`, `?`, `[a-z]`, `[!x]` within one
/// path component, `**` as a whole component for any number of directories, `\` escapes), for code outside this
/// module that must judge paths and patterns the way the tailer expands them: the remote configuration's allow-list
/// (`remote_config.allow.tail_paths`, `sysfs_paths`, `journald_units`).
public struct PathGlob: Sendable, Equatable, CustomStringConvertible {
    let glob: TailGlob

    /// The pattern as written.
    public var pattern: String { glob.pattern }

    public var description: String { glob.pattern }

    public init(_ pattern: String) {
        glob = TailGlob(pattern)
    }

    /// Whether the whole `path` matches (an absolute pattern matches only absolute paths).
    public func matches(_ path: String) -> Bool {
        glob.matches(path)
    }

    /// Whether every path `other` can match is also matched by this pattern: a static, conservative check on the two
    /// patterns (no file system). True means contained for certain; false may also mean "cannot tell", e.g. for
    /// `[a-c]` against `[ab]`. `/var/log/app/**` contains `/var/log/app/*.log` and `/var/log/app/x/**`, not
    /// `/var/log/**`.
    public func contains(_ other: PathGlob) -> Bool {
        guard glob.isAbsolute == other.glob.isAbsolute else { return false }
        return Self.covers(glob.components, 0, other.glob.components, 0)
    }

    /// Whether `name` matches `pattern` as one path component (`app-*.service` and `app-web.service`).
    public static func matchesComponent(pattern: String, name: String) -> Bool {
        TailGlob.matchComponent(Array(pattern.utf8), Array(name.utf8))
    }

    // MARK: Containment

    private static func covers(_ outer: [TailGlob.Component], _ o: Int, _ inner: [TailGlob.Component], _ i: Int) -> Bool {
        if o == outer.count { return i == inner.count }
        if case .recursive = outer[o] {
            // `**` takes any run of whole components, an inner `**` among them.
            for next in i...inner.count where covers(outer, o + 1, inner, next) { return true }
            return false
        }
        guard i < inner.count else { return false }
        let covered: Bool
        switch (outer[o], inner[i]) {
        case (_, .recursive):
            covered = false  // any depth against one component
        case (.literal(let name), .literal(let innerName)):
            covered = name == innerName
        case (.wildcard(let bytes), .literal(let innerName)):
            covered = TailGlob.matchComponent(bytes, Array(innerName.utf8))
        case (.wildcard(let bytes), .wildcard(let innerBytes)):
            covered = componentCovers(tokens(bytes), tokens(innerBytes))
        default:
            covered = false  // a literal against a wildcard
        }
        return covered && covers(outer, o + 1, inner, i + 1)
    }

    /// One element of a component pattern.
    private enum Token: Equatable {
        case star
        case any
        /// A `[…]` set, as written.
        case set([UInt8])
        case byte(UInt8)

        var isSingle: Bool { self != .star }
    }

    private static func tokens(_ bytes: [UInt8]) -> [Token] {
        var tokens: [Token] = []
        var index = 0
        while index < bytes.count {
            let byte = bytes[index]
            switch byte {
            case UInt8(ascii: "*"):
                tokens.append(.star)
                index += 1
            case UInt8(ascii: "?"):
                tokens.append(.any)
                index += 1
            case UInt8(ascii: "\\") where index + 1 < bytes.count:
                tokens.append(.byte(bytes[index + 1]))
                index += 2
            case UInt8(ascii: "["):
                if let end = setEnd(bytes, index) {
                    tokens.append(.set(Array(bytes[index...end])))
                    index = end + 1
                } else {
                    tokens.append(.byte(byte))
                    index += 1
                }
            default:
                tokens.append(.byte(byte))
                index += 1
            }
        }
        return tokens
    }

    /// The index of the `]` closing the set that starts at `start`, or nil when it is not closed (`[` is literal).
    private static func setEnd(_ bytes: [UInt8], _ start: Int) -> Int? {
        var index = start + 1
        if index < bytes.count, bytes[index] == UInt8(ascii: "!") || bytes[index] == UInt8(ascii: "^") { index += 1 }
        var first = true
        while index < bytes.count {
            if bytes[index] == UInt8(ascii: "]"), !first { return index }
            first = false
            index += bytes[index] == UInt8(ascii: "\\") ? 2 : 1
        }
        return nil
    }

    /// Whether every name `inner` matches is matched by `outer`: an outer `*` takes any run of inner tokens, `?` one
    /// single-character token, a set a byte it holds (or the same set), a byte the same byte.
    private static func componentCovers(_ outer: [Token], _ inner: [Token]) -> Bool {
        var memo: [Int: Bool] = [:]
        func covers(_ o: Int, _ i: Int) -> Bool {
            let key = o * (inner.count + 1) + i
            if let known = memo[key] { return known }
            let result: Bool
            if o == outer.count {
                result = i == inner.count
            } else if outer[o] == .star {
                result = (i...inner.count).contains { covers(o + 1, $0) }
            } else if i == inner.count {
                result = false
            } else {
                let single: Bool
                switch (outer[o], inner[i]) {
                case (.any, let token): single = token.isSingle
                case (.byte(let a), .byte(let b)): single = a == b
                case (.set(let set), .byte(let b)): single = TailGlob.matchComponent(set, [b])
                case (.set(let set), .set(let other)): single = set == other
                default: single = false
                }
                result = single && covers(o + 1, i + 1)
            }
            memo[key] = result
            return result
        }
        return covers(0, 0)
    }
}
