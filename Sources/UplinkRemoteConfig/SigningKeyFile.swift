import UplinkCore
import UplinkFiles

/// The text files `uplink config keygen` writes and the rest reads: one line `uplink-ed25519-<kind> <key-id> <base64>`,
/// after optional `#` comment lines. The public file lists the 32-byte public key, the secret file the 32-byte seed.
///
/// The key id names the key in every envelope it signs, so that an agent that trusts several keys (a rotation)
/// knows which one to try; a wrong id only makes the signature check fail.
public enum SigningKeyFile {
    /// Why a key file was not accepted: the path and what is wrong, as one sentence.
    public struct Failure: Error, Sendable, Equatable, CustomStringConvertible {
        public let path: String
        public let reason: String
        public var description: String { "\(path): \(reason)" }
    }

    /// A public key and its id, as an agent's `remote_config.trusted_keys` lists them.
    public struct TrustedKey: Sendable, Hashable {
        public let id: String
        public let key: Ed25519.PublicKey

        public init(id: String, key: Ed25519.PublicKey) {
            self.id = id
            self.key = key
        }
    }

    /// A secret key and its id, for `uplink config sign`.
    public struct SigningKey: Sendable {
        public let id: String
        public let key: Ed25519.SecretKey

        public init(id: String, key: Ed25519.SecretKey) {
            self.id = id
            self.key = key
        }
    }

    /// Key files are a few hundred bytes; anything much larger is not one.
    static let maximumBytes = 4096

    /// Whether `id` can name a key: 1 to 64 of `A-Z a-z 0-9 . _ -`.
    public static func isValidKeyID(_ id: String) -> Bool {
        PortableName.isValid(id, maximumBytes: 64)
    }

    /// The contents of a public key file.
    public static func publicText(_ key: TrustedKey) -> String {
        "# uplink Ed25519 public key: list this file in remote_config.trusted_keys\n"
            + "uplink-ed25519-public \(key.id) \(Base64.encode(key.key.bytes))\n"
    }

    /// The contents of a secret key file (written with mode 0600; keep it offline).
    public static func secretText(_ key: SigningKey) -> String {
        "# uplink Ed25519 secret key: signs remote configuration documents; keep it off the collector\n"
            + "uplink-ed25519-secret \(key.id) \(Base64.encode(key.key.seed))\n"
    }

    /// Reads a public key file.
    public static func readPublic(path: String) -> Result<TrustedKey, Failure> {
        parse(path: path, kind: "public").flatMap { id, bytes in
            guard let key = Ed25519.PublicKey(bytes: bytes) else {
                return .failure(Failure(path: path, reason: "the key is \(bytes.count) bytes, an Ed25519 public key is 32"))
            }
            return .success(TrustedKey(id: id, key: key))
        }
    }

    /// Reads a secret key file.
    public static func readSecret(path: String) -> Result<SigningKey, Failure> {
        parse(path: path, kind: "secret").flatMap { id, bytes in
            guard let key = Ed25519.SecretKey(seed: bytes) else {
                return .failure(Failure(path: path, reason: "the seed is \(bytes.count) bytes, an Ed25519 seed is 32"))
            }
            return .success(SigningKey(id: id, key: key))
        }
    }

    /// Parses the key line of `text` (the contents of `path`): its id and decoded bytes.
    static func parse(text: String, path: String, kind: String) -> Result<(String, [UInt8]), Failure> {
        let lines = text.split(whereSeparator: { $0 == "\n" || $0 == "\r" })
            .map { $0.trimmingSpacesAndTabs }
            .filter { !$0.isEmpty && !$0.hasPrefix("#") }
        guard lines.count == 1 else {
            return .failure(Failure(path: path, reason: "expected one line `uplink-ed25519-\(kind) <key-id> <base64>`, found \(lines.count) lines"))
        }
        let fields = lines[0].split(separator: " ", omittingEmptySubsequences: true)
        guard fields.count == 3, fields[0] == "uplink-ed25519-\(kind)" else {
            let other = kind == "public" ? "secret" : "public"
            if fields.first == "uplink-ed25519-\(other)" {
                return .failure(Failure(path: path, reason: "this is a \(other) key file, a \(kind) one is needed here"))
            }
            return .failure(Failure(path: path, reason: "not an uplink \(kind) key file (expected `uplink-ed25519-\(kind) <key-id> <base64>`)"))
        }
        let id = String(fields[1])
        guard isValidKeyID(id) else {
            return .failure(Failure(path: path, reason: "key id '\(id)' is not 1 to 64 of A-Z a-z 0-9 . _ -"))
        }
        guard let bytes = Base64.decode(Array(fields[2].utf8)) else {
            return .failure(Failure(path: path, reason: "the key is not valid base64"))
        }
        return .success((id, bytes))
    }

    private static func parse(path: String, kind: String) -> Result<(String, [UInt8]), Failure> {
        switch WholeFile.read(path: path, limit: maximumBytes) {
        case .failure(let failure):
            return .failure(Failure(path: path, reason: "cannot read the \(kind) key: \(failure.reasonDescription)"))
        case .success(let bytes):
            return parse(text: String(decoding: bytes, as: UTF8.self), path: path, kind: kind)
        }
    }
}
