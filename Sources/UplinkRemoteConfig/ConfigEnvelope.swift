import FoundationEssentials
import UplinkCore

/// The detached signature of one remote configuration document (`<name>.yaml.sig`, JSON), written by
/// `uplink config sign` with an offline key. It binds the document's bytes (through `sha256` and `size`) to its
/// name, a serial that only grows, the agents it is for and a date after which it may no longer be newly applied.
///
/// The signature covers `signedBytes`, a length-prefixed encoding of every other field in a fixed order, so that
/// no change to any field (or to the document) keeps it valid, and no two different envelopes sign the same bytes.
public struct ConfigEnvelope: Sendable, Equatable {
    /// The only algorithm: `ed25519`.
    public static let algorithm = "ed25519"
    /// Envelopes are a few hundred bytes; a larger one is refused before it is parsed.
    public static let maximumBytes = 16 * 1024

    /// `alg`: always `ed25519`.
    public var algorithm: String
    /// `key_id`: which trusted key signed it.
    public var keyID: String
    /// `name`: the document's name (its file name without `.yaml`).
    public var name: String
    /// `sha256`: the document's digest.
    public var sha256: SHA256Digest
    /// `size`: the document's length in bytes.
    public var size: Int
    /// `serial`: greater than every earlier serial of the same name; an agent never applies a lower or equal one
    /// after it has seen a higher one (no replay of an older signed document).
    public var serial: UInt64
    /// `audience`: the agents it is for.
    public var audience: Audience
    /// `not_after`: seconds since the Unix epoch (RFC 3339 UTC in JSON) after which an agent refuses to apply it
    /// anew; a document already running keeps running.
    public var notAfter: Int64
    /// `sig`: the Ed25519 signature of `signedBytes` (base64 in JSON).
    public var signature: [UInt8]

    public init(
        keyID: String, name: String, sha256: SHA256Digest, size: Int, serial: UInt64, audience: Audience,
        notAfter: Int64, signature: [UInt8] = []
    ) {
        self.algorithm = Self.algorithm
        self.keyID = keyID
        self.name = name
        self.sha256 = sha256
        self.size = size
        self.serial = serial
        self.audience = audience
        self.notAfter = notAfter
        self.signature = signature
    }

    /// The envelope of `document` signed with `key`.
    public static func sign(
        document: [UInt8], name: String, serial: UInt64, audience: Audience, notAfter: Int64,
        with key: SigningKeyFile.SigningKey
    ) -> ConfigEnvelope {
        var envelope = ConfigEnvelope(
            keyID: key.id, name: name, sha256: SHA256Digest(of: document), size: document.count, serial: serial,
            audience: audience, notAfter: notAfter)
        envelope.signature = key.key.signature(for: envelope.signedBytes)
        return envelope
    }

    /// What the signature covers: a tag and every field but the signature, each as an 8-byte little-endian length
    /// followed by its UTF-8 bytes; labels sorted by name, each name then its glob, after their count.
    public var signedBytes: [UInt8] {
        var fields = [
            "uplink-config-envelope", "1", algorithm, keyID, name, sha256.hex, String(size), String(serial),
            audience.agent, String(audience.labels.count),
        ]
        for label in audience.labels.keys.sorted() {
            fields.append(label)
            fields.append(audience.labels[label]!)
        }
        fields.append(String(notAfter))
        var output: [UInt8] = []
        for field in fields {
            let bytes = Array(field.utf8)
            var length = UInt64(bytes.count).littleEndian
            withUnsafeBytes(of: &length) { output.append(contentsOf: $0) }
            output.append(contentsOf: bytes)
        }
        return output
    }

    /// Whether `name` can name a document: 1 to 128 of `A-Z a-z 0-9 . _ -`, not starting with a dot.
    public static func isValidName(_ name: String) -> Bool {
        PortableName.isValid(name, maximumBytes: 128) && !name.hasPrefix(".")
    }
}

// MARK: - JSON

extension ConfigEnvelope {
    /// Why envelope bytes are not an envelope.
    public struct DecodingFailure: Error, Sendable, Equatable, CustomStringConvertible {
        public let reason: String
        public var description: String { reason }
    }

    /// The envelope as JSON (keys sorted, one line, a final newline).
    public var json: [UInt8] {
        let wire = Wire(
            alg: algorithm, key_id: keyID, name: name, sha256: sha256.hex, size: size, serial: serial,
            audience: audience, not_after: Self.rfc3339(notAfter), sig: Base64.encode(signature))
        let encoder = JSONEncoder()
        encoder.outputFormatting = [.sortedKeys, .withoutEscapingSlashes]
        // Encoding plain strings and integers cannot fail.
        return Array((try? encoder.encode(wire)) ?? Data()) + [UInt8(ascii: "\n")]
    }

    /// Parses an envelope strictly: every field present and well formed, no other field (a field the signature does
    /// not cover must not travel with it), at most `maximumBytes`.
    public init(json bytes: [UInt8]) throws(DecodingFailure) {
        guard bytes.count <= Self.maximumBytes else {
            throw DecodingFailure(reason: "the envelope is \(bytes.count) bytes, more than \(Self.maximumBytes)")
        }
        let wire: Wire
        do {
            wire = try JSONDecoder().decode(Wire.self, from: Data(bytes))
        } catch let error as DecodingFailure {
            throw error
        } catch {
            throw DecodingFailure(reason: "not an envelope: \(Self.describe(error))")
        }
        guard wire.alg == Self.algorithm else {
            throw DecodingFailure(reason: "alg is '\(wire.alg)', only '\(Self.algorithm)' is supported")
        }
        guard SigningKeyFile.isValidKeyID(wire.key_id) else {
            throw DecodingFailure(reason: "key_id '\(wire.key_id)' is not 1 to 64 of A-Z a-z 0-9 . _ -")
        }
        guard Self.isValidName(wire.name) else {
            throw DecodingFailure(reason: "name '\(wire.name)' is not 1 to 128 of A-Z a-z 0-9 . _ - (not starting with '.')")
        }
        guard let digest = SHA256Digest(hex: wire.sha256) else {
            throw DecodingFailure(reason: "sha256 is not 64 lower-case hexadecimal digits")
        }
        guard wire.size >= 0 else { throw DecodingFailure(reason: "size is negative") }
        guard let notAfter = Self.seconds(rfc3339: wire.not_after) else {
            throw DecodingFailure(reason: "not_after '\(wire.not_after)' is not a UTC time like 2027-05-27T00:00:00Z")
        }
        guard let signature = Base64.decode(Array(wire.sig.utf8)), signature.count == 64 else {
            throw DecodingFailure(reason: "sig is not a base64 Ed25519 signature (64 bytes)")
        }
        self.init(
            keyID: wire.key_id, name: wire.name, sha256: digest, size: wire.size, serial: wire.serial,
            audience: wire.audience, notAfter: notAfter, signature: signature)
    }

    /// `2027-05-27T00:00:00Z` for a time in whole seconds.
    public static func rfc3339(_ seconds: Int64) -> String {
        Date(timeIntervalSince1970: Double(seconds)).formatted(.iso8601)
    }

    /// Seconds since the epoch of an RFC 3339 UTC time in whole seconds (`2027-05-27T00:00:00Z`); nil otherwise.
    public static func seconds(rfc3339 text: String) -> Int64? {
        guard text.utf8.count == 20, text.hasSuffix("Z"),
            let date = try? Date(text, strategy: .iso8601)
        else { return nil }
        let seconds = Int64(date.timeIntervalSince1970.rounded())
        // Refuse what the parser would have normalised (e.g. 2027-02-30): the signed text must mean one time.
        return rfc3339(seconds) == text ? seconds : nil
    }

    private static func describe(_ error: any Error) -> String {
        switch error {
        case DecodingError.keyNotFound(let key, _): "field '\(key.stringValue)' is missing"
        case DecodingError.typeMismatch(_, let context), DecodingError.valueNotFound(_, let context):
            "field '\(context.codingPath.map(\.stringValue).joined(separator: "."))' has the wrong type"
        case DecodingError.dataCorrupted(let context):
            context.codingPath.isEmpty ? "not valid JSON" : "field '\(context.codingPath.map(\.stringValue).joined(separator: "."))' is malformed"
        default: "\(error)"
        }
    }

    /// The JSON shape, field names as they travel.
    private struct Wire: Codable {
        var alg: String
        var key_id: String
        var name: String
        var sha256: String
        var size: Int
        var serial: UInt64
        var audience: Audience
        var not_after: String
        var sig: String

        init(
            alg: String, key_id: String, name: String, sha256: String, size: Int, serial: UInt64, audience: Audience,
            not_after: String, sig: String
        ) {
            self.alg = alg
            self.key_id = key_id
            self.name = name
            self.sha256 = sha256
            self.size = size
            self.serial = serial
            self.audience = audience
            self.not_after = not_after
            self.sig = sig
        }

        init(from decoder: any Decoder) throws {
            let container = try decoder.container(keyedBy: AnyKey.self)
            let known: Set = ["alg", "key_id", "name", "sha256", "size", "serial", "audience", "not_after", "sig"]
            if let unknown = container.allKeys.first(where: { !known.contains($0.stringValue) }) {
                throw DecodingFailure(reason: "unknown field '\(unknown.stringValue)' (the signature would not cover it)")
            }
            func value<T: Decodable>(_ name: String) throws -> T {
                guard container.contains(AnyKey(name)) else { throw DecodingFailure(reason: "field '\(name)' is missing") }
                do {
                    return try container.decode(T.self, forKey: AnyKey(name))
                } catch {
                    throw DecodingFailure(reason: "field '\(name)' is not \(T.self == String.self ? "a string" : "an integer in range")")
                }
            }
            alg = try value("alg")
            key_id = try value("key_id")
            name = try value("name")
            sha256 = try value("sha256")
            size = try value("size")
            serial = try value("serial")
            not_after = try value("not_after")
            sig = try value("sig")
            guard let audienceContainer = try? container.nestedContainer(keyedBy: AnyKey.self, forKey: AnyKey("audience")) else {
                throw DecodingFailure(reason: "field 'audience' is missing or not an object")
            }
            if let unknown = audienceContainer.allKeys.first(where: { $0.stringValue != "agent" && $0.stringValue != "labels" }) {
                throw DecodingFailure(reason: "unknown field 'audience.\(unknown.stringValue)' (the signature would not cover it)")
            }
            do {
                audience = Audience(
                    agent: try audienceContainer.decode(String.self, forKey: AnyKey("agent")),
                    labels: try audienceContainer.decodeIfPresent([String: String].self, forKey: AnyKey("labels")) ?? [:])
            } catch {
                throw DecodingFailure(reason: "field 'audience' needs 'agent' (a string) and 'labels' (strings by name)")
            }
        }
    }

    private struct AnyKey: CodingKey {
        var stringValue: String
        var intValue: Int? { nil }
        init(_ string: String) { stringValue = string }
        init?(stringValue: String) { self.stringValue = stringValue }
        init?(intValue: Int) { nil }
    }
}
