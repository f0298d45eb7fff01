import CSodium

/// A SHA-256 digest: the name of a remote document, an envelope or a downloaded blob (content addressing).
public struct SHA256Digest: Sendable, Hashable, CustomStringConvertible {
    /// The 32 bytes.
    public let bytes: [UInt8]

    /// The digest of `bytes`.
    public init(of bytes: some Collection<UInt8>) {
        var hasher = SHA256Hasher()
        hasher.update(bytes)
        self = hasher.finalize()
    }

    fileprivate init(digest: [UInt8]) {
        bytes = digest
    }

    /// Parses 64 lower-case hexadecimal digits; nil for anything else.
    public init?(hex: some StringProtocol) {
        guard hex.utf8.count == 64, let bytes = Hex.decode(hex) else { return nil }
        self.bytes = bytes
    }

    /// 64 lower-case hexadecimal digits.
    public var hex: String { Hex.encode(bytes) }

    /// `sha256:<hex>`, as manifests, ETags and blob URLs name content.
    public var prefixed: String { "sha256:" + hex }

    /// Parses `sha256:<64 hex digits>`; nil for anything else.
    public init?(prefixed text: some StringProtocol) {
        guard text.hasPrefix("sha256:") else { return nil }
        self.init(hex: text.dropFirst("sha256:".count))
    }

    public var description: String { prefixed }
}

/// SHA-256 over bytes that arrive in parts (a download written to disk as it streams).
public struct SHA256Hasher: Sendable {
    private var state = crypto_hash_sha256_state()

    public init() {
        Sodium.prepare()
        crypto_hash_sha256_init(&state)
    }

    /// Adds the next part.
    public mutating func update(_ part: some Collection<UInt8>) {
        let done = part.withContiguousStorageIfAvailable { buffer in
            crypto_hash_sha256_update(&state, buffer.baseAddress, UInt64(buffer.count))
        }
        if done == nil {
            let copy = Array(part)
            copy.withUnsafeBufferPointer { buffer in
                _ = crypto_hash_sha256_update(&state, buffer.baseAddress, UInt64(buffer.count))
            }
        }
    }

    /// The digest of every part added.
    public consuming func finalize() -> SHA256Digest {
        var digest = [UInt8](repeating: 0, count: Int(crypto_hash_sha256_BYTES))
        crypto_hash_sha256_final(&state, &digest)
        return SHA256Digest(digest: digest)
    }
}
