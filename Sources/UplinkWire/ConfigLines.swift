import NIOCore
import UplinkCore

/// The remote configuration a collector offers an agent (docs/protocol.md, "Remote configuration"): the revision
/// of the documents assigned to it (`sha256:<64 hex digits>`) and the generation of the collector's assignments.
/// It travels as the response header `Uplink-Config: rev=sha256:<hex>, generation=<N>` and as the response line
/// `{"config":{"rev":"sha256:<hex>","generation":N}}`.
public struct ConfigHint: Sendable, Equatable {
    /// `sha256:` and 64 lower-case hexadecimal digits.
    public var revision: String
    /// The assignments file's generation.
    public var generation: UInt64

    /// Nil unless `revision` is `sha256:` and 64 lower-case hexadecimal digits.
    public init?(revision: String, generation: UInt64) {
        guard Self.isRevision(revision.utf8) else { return nil }
        self.revision = revision
        self.generation = generation
    }

    /// Whether `text` is `sha256:` followed by 64 lower-case hexadecimal digits.
    public static func isRevision<Bytes: Collection<UInt8>>(_ text: Bytes) -> Bool {
        let prefix = Array("sha256:".utf8)
        guard text.count == prefix.count + 64, text.starts(with: prefix) else { return false }
        return ASCIIHexadecimal.isLowercase(text.dropFirst(prefix.count))
    }

    /// The `Uplink-Config` header's value: `rev=sha256:<hex>, generation=<N>`.
    public var headerValue: String { "rev=\(revision), generation=\(generation)" }

    /// Reads an `Uplink-Config` header value: `rev=…` and `generation=…`, comma-separated in either order, spaces
    /// around each allowed; nil for anything else.
    public init?(headerValue: String) {
        var revision: String?
        var generation: UInt64?
        for part in headerValue.split(separator: ",", omittingEmptySubsequences: false) {
            let term = part.trimmingSpacesAndTabs
            guard let equals = term.firstIndex(of: "=") else { return nil }
            let key = term[..<equals]
            let value = term[term.index(after: equals)...]
            switch key {
            case "rev" where revision == nil: revision = String(value)
            case "generation" where generation == nil:
                guard let number = WireIntegers.decimal(value.utf8, in: WireIntegers.mark) else { return nil }
                generation = number
            default: return nil
            }
        }
        guard let revision, let generation else { return nil }
        self.init(revision: revision, generation: generation)
    }

    /// Reads a response line (without its terminator) when it is a `config` line; nil for every other line, which
    /// an agent handles (`resume`, `ack`, a heartbeat answer) or ignores. A JSON object with the key `config`, an
    /// object holding `rev` (a revision) and `generation` (an integer from 0 to 2^63 − 1), each once; other keys, at
    /// either level, are skipped (what a later version may add).
    public static func parse(_ bytes: UnsafeRawBufferPointer) -> ConfigHint? {
        var revision: String?
        var generation: UInt64?
        let parsed: Void? = try? WireObject.walk(bytes, container: "config") { key, scanner throws(WireDecodingError) in
            switch key {
            case "rev":
                guard revision == nil else { throw scanner.syntaxError("'rev' appears more than once") }
                revision = try scanner.requireString(key, maximumBytes: ConfigStatus.maximumRevisionBytes)
            case "generation":
                guard generation == nil else { throw scanner.syntaxError("'generation' appears more than once") }
                generation = try scanner.requireUInt64(key)
            default:
                try scanner.skipValue(depth: 2)
            }
        }
        guard parsed != nil, let revision, let generation else { return nil }
        return ConfigHint(revision: revision, generation: generation)
    }

    /// Reads a response line from a buffer's readable bytes; see `parse(_:)`.
    public static func parse(_ line: ByteBuffer) -> ConfigHint? {
        line.withUnsafeReadableBytes { parse($0) }
    }
}

/// What an agent reports about its remote configuration: the body line `{"config_status":{…}}` on a stream (once
/// the collector sent `Uplink-Config`), and the body of `POST /v1/config/status`.
public struct ConfigStatus: Sendable, Equatable {
    /// Where the agent is with its remote documents (the agent's `RemoteConfigStatus.State` but `disabled` and
    /// `idle`, which it does not report).
    public enum State: String, Sendable, Equatable, CaseIterable {
        /// A set was applied and is on probation.
        case applying
        /// The desired set runs and passed its probation.
        case applied
        /// A set was refused before it was applied; what ran before still runs.
        case failed
        /// A set failed its probation; the last-known-good runs again.
        case rolledBack = "rolled_back"
        /// `uplink config pin`: remote documents are ignored on the box.
        case pinned
        /// `remote_config.enabled` is false on the box (turned off by a reload): no remote source runs, nothing is
        /// asked. Sent on a stream only (a box without remote configuration does not post its status).
        case disabled
    }

    /// Longest revision accepted (`sha256:` and 64 digits).
    public static let maximumRevisionBytes = 71
    /// Longest `error` accepted, in bytes.
    public static let maximumErrorBytes = 4096

    /// The revision the collector offered and the agent is working towards.
    public var desired: String?
    /// The revision running now.
    public var effective: String?
    /// The last-known-good revision.
    public var lastKnownGood: String?
    public var state: State
    /// Why the last apply failed or was rolled back.
    public var error: String?
    /// The generation of the manifest the agent worked from.
    public var generation: UInt64?

    public init(
        desired: String? = nil, effective: String? = nil, lastKnownGood: String? = nil, state: State,
        error: String? = nil, generation: UInt64? = nil
    ) {
        self.desired = desired
        self.effective = effective
        self.lastKnownGood = lastKnownGood
        self.state = state
        self.error = error
        self.generation = generation
    }

    /// Parses a whole `{"config_status":{…}}` line or body (without a terminator): `state` is required; `desired`,
    /// `effective`, `lkg` are revisions (`sha256:<hex>`) or null; `error` a string (at most `maximumErrorBytes`) or
    /// null; `generation` an integer or null; each once. Other keys, at either level, are skipped (a later version
    /// may add some).
    public static func parse(_ bytes: UnsafeRawBufferPointer) throws(WireDecodingError) -> ConfigStatus {
        var seen = Set<String>()
        var status = ConfigStatus(state: .applying)
        var state: State?
        try WireObject.walk(bytes, container: "config_status") { key, scanner throws(WireDecodingError) in
            let offset = scanner.index
            guard ["desired", "effective", "lkg", "state", "error", "generation"].contains(key) else {
                // A later version may add keys: they are skipped.
                return try scanner.skipValue(depth: 2)
            }
            guard seen.insert(key).inserted else {
                throw JSONScanner.error(WireDecodingError.Code.duplicateKey, "key '\(key)' appears more than once", at: offset)
            }
            switch key {
            case "desired", "effective", "lkg":
                let value = try scanner.optionalString(key, maximumBytes: maximumRevisionBytes)
                if let value, !ConfigHint.isRevision(value.utf8) {
                    throw JSONScanner.error(
                        WireDecodingError.Code.invalidValue, "'\(key)' must be sha256:<64 hex digits> or null", at: offset)
                }
                switch key {
                case "desired": status.desired = value
                case "effective": status.effective = value
                default: status.lastKnownGood = value
                }
            case "state":
                let text = try scanner.requireString(key, maximumBytes: 32)
                guard let parsed = State(rawValue: text) else {
                    throw JSONScanner.error(
                        WireDecodingError.Code.invalidValue,
                        "'state' must be one of \(State.allCases.map(\.rawValue).joined(separator: ", "))", at: offset)
                }
                state = parsed
            case "error":
                status.error = try scanner.optionalString(key, maximumBytes: maximumErrorBytes)
            case "generation":
                if scanner.current == UInt8(ascii: "n") {
                    try scanner.scanLiteral("null")
                } else {
                    status.generation = try scanner.requireUInt64(key)
                }
            default:
                break
            }
        }
        guard let state else {
            throw JSONScanner.error(WireDecodingError.Code.missingKey, "missing key 'state' in config_status", at: bytes.count)
        }
        status.state = state
        return status
    }

    /// Parses a buffer's readable bytes; see `parse(_:)`.
    public static func parse(_ line: ByteBuffer) throws(WireDecodingError) -> ConfigStatus {
        try line.withUnsafeReadableBytes { bytes in
            Result { () throws(WireDecodingError) in try parse(bytes) }
        }.get()
    }
}

extension WireLineWriter {
    /// Appends a response line `{"config":{"rev":"sha256:<hex>","generation":N}}` and its newline.
    @discardableResult
    public static func appendConfigLine(_ hint: ConfigHint, to buffer: inout ByteBuffer) -> Int {
        var line = Array(#"{"config":{"rev":"#.utf8)
        JSONWriting.appendString(hint.revision, to: &line)
        line.append(contentsOf: #","generation":"#.utf8)
        JSONWriting.appendInteger(hint.generation, to: &line)
        line.append(contentsOf: "}}\n".utf8)
        return buffer.writeBytes(line)
    }

    /// Appends a body line `{"config_status":{…}}` and its newline (every key written, absent values as `null`).
    public static func appendConfigStatusLine(_ status: ConfigStatus, to output: inout [UInt8]) {
        func optional(_ value: String?) {
            if let value { JSONWriting.appendString(value, to: &output) } else { output.append(contentsOf: "null".utf8) }
        }
        output.append(contentsOf: #"{"config_status":{"desired":"#.utf8)
        optional(status.desired)
        output.append(contentsOf: #","effective":"#.utf8)
        optional(status.effective)
        output.append(contentsOf: #","lkg":"#.utf8)
        optional(status.lastKnownGood)
        output.append(contentsOf: #","state":"#.utf8)
        JSONWriting.appendString(status.state.rawValue, to: &output)
        output.append(contentsOf: #","error":"#.utf8)
        optional(status.error)
        output.append(contentsOf: #","generation":"#.utf8)
        if let generation = status.generation {
            JSONWriting.appendInteger(generation, to: &output)
        } else {
            output.append(contentsOf: "null".utf8)
        }
        output.append(contentsOf: "}}\n".utf8)
    }
}

/// Reads the lines of the form `{"<container>":{"key":value,…}}`: the container object's members go to `member`,
/// which must consume each value. Other keys, at either level, are validated and skipped (docs/protocol.md,
/// "Versioning": adding keys is compatible); the container must appear exactly once.
enum WireObject {
    static func walk(
        _ bytes: UnsafeRawBufferPointer, container: StaticString,
        member: (String, inout JSONScanner) throws(WireDecodingError) -> Void
    ) throws(WireDecodingError) {
        var scanner = JSONScanner(bytes, maximumDepth: WireLineParser.maximumDepth)
        scanner.skipWhitespace()
        guard scanner.current == UInt8(ascii: "{") else {
            throw JSONScanner.error(WireDecodingError.Code.notAnObject, "the line is not a JSON object", at: scanner.index)
        }
        var found = false
        try members(&scanner, depth: 1) { key, offset, scanner throws(WireDecodingError) in
            guard scanner.string(key, equals: container) else { return try scanner.skipValue(depth: 1) }
            guard !found else {
                throw JSONScanner.error(WireDecodingError.Code.duplicateKey, "key '\(container)' appears more than once", at: offset)
            }
            found = true
            guard scanner.current == UInt8(ascii: "{") else {
                throw JSONScanner.error(WireDecodingError.Code.wrongType, "'\(container)' must be an object", at: scanner.index)
            }
            try members(&scanner, depth: 2) { name, _, scanner throws(WireDecodingError) in
                try member(scanner.string(name), &scanner)
            }
        }
        scanner.skipWhitespace()
        guard scanner.isAtEnd else { throw scanner.unexpected(expecting: "the end of the line") }
        guard found else {
            throw JSONScanner.error(WireDecodingError.Code.missingKey, "missing key '\(container)'", at: bytes.count)
        }
    }

    /// Reads the object at `scanner.index` (its `{`), handing each key (and its offset) to `member`, which must
    /// consume the value; `depth` is the object's own nesting depth.
    private static func members(
        _ scanner: inout JSONScanner, depth: Int,
        _ member: (StringSpan, Int, inout JSONScanner) throws(WireDecodingError) -> Void
    ) throws(WireDecodingError) {
        guard depth <= scanner.maximumDepth else {
            throw JSONScanner.error(WireDecodingError.Code.tooDeep, "nested too deeply", at: scanner.index)
        }
        guard scanner.enterContainer(closing: UInt8(ascii: "}")) else { return }
        while true {
            let (key, offset) = try scanner.scanMemberKey()
            try member(key, offset, &scanner)
            if try scanner.separatorFollows(closing: UInt8(ascii: "}")) { continue }
            return
        }
    }
}

extension JSONScanner {
    /// A string value of at most `maximumBytes` (as sent, escapes included).
    mutating func requireString(_ key: String, maximumBytes: Int) throws(WireDecodingError) -> String {
        let offset = index
        guard current == UInt8(ascii: "\"") else {
            try skipValue(depth: 2)
            throw JSONScanner.error(WireDecodingError.Code.wrongType, "'\(key)' must be a string", at: offset)
        }
        let span = try scanString()
        guard span.end - span.start <= maximumBytes else {
            throw JSONScanner.error(WireDecodingError.Code.invalidValue, "'\(key)' is longer than \(maximumBytes) bytes", at: offset)
        }
        return string(span)
    }

    /// A string value or `null`.
    mutating func optionalString(_ key: String, maximumBytes: Int) throws(WireDecodingError) -> String? {
        if current == UInt8(ascii: "n") {
            try scanLiteral("null")
            return nil
        }
        return try requireString(key, maximumBytes: maximumBytes)
    }

    /// An integer value from 0 to 2^63 − 1 (`WireIntegers.mark`).
    mutating func requireUInt64(_ key: String) throws(WireDecodingError) -> UInt64 {
        let offset = index
        guard let byte = current, byte == UInt8(ascii: "-") || JSONScanner.isDigit(byte) else {
            try skipValue(depth: 2)
            throw JSONScanner.error(WireDecodingError.Code.wrongType, "'\(key)' must be an integer", at: offset)
        }
        let number = try scanNumber()
        guard number.isInteger, let value = uint64(number), WireIntegers.mark.contains(value) else {
            throw JSONScanner.error(
                WireDecodingError.Code.invalidValue, "'\(key)' must be an integer from 0 to 2^63-1", at: offset)
        }
        return value
    }
}
