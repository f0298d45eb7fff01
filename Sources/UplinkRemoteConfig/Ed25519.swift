import CSodium

/// Ed25519 signatures (RFC 8032) from Debian's libsodium: remote configuration documents are signed offline with a
/// secret key the collector never holds, and verified on the box against the public keys its local file trusts.
public enum Ed25519 {
    /// A public key: the 32 bytes that verify.
    public struct PublicKey: Sendable, Hashable {
        public let bytes: [UInt8]

        /// Nil unless `bytes` holds exactly 32 bytes.
        public init?(bytes: [UInt8]) {
            guard bytes.count == Int(crypto_sign_PUBLICKEYBYTES) else { return nil }
            self.bytes = bytes
        }

        /// Whether `signature` is this key's signature of `message`.
        public func isValidSignature(_ signature: [UInt8], for message: [UInt8]) -> Bool {
            Sodium.prepare()
            guard signature.count == Int(crypto_sign_BYTES) else { return false }
            return crypto_sign_verify_detached(signature, message, UInt64(message.count), bytes) == 0
        }
    }

    /// A secret key, kept as its 32-byte seed (what a key file stores); the public key derives from it.
    public struct SecretKey: Sendable {
        /// The seed: whoever holds it can sign.
        public let seed: [UInt8]
        /// The matching public key.
        public let publicKey: PublicKey
        private let expanded: [UInt8]

        /// A new key from libsodium's random generator.
        public static func generate() -> SecretKey {
            Sodium.prepare()
            var seed = [UInt8](repeating: 0, count: Int(crypto_sign_SEEDBYTES))
            randombytes_buf(&seed, seed.count)
            return SecretKey(seed: seed)!
        }

        /// The key of a 32-byte seed; nil for any other length.
        public init?(seed: [UInt8]) {
            Sodium.prepare()
            guard seed.count == Int(crypto_sign_SEEDBYTES) else { return nil }
            var publicBytes = [UInt8](repeating: 0, count: Int(crypto_sign_PUBLICKEYBYTES))
            var expanded = [UInt8](repeating: 0, count: Int(crypto_sign_SECRETKEYBYTES))
            guard crypto_sign_seed_keypair(&publicBytes, &expanded, seed) == 0 else { return nil }
            self.seed = seed
            self.expanded = expanded
            self.publicKey = PublicKey(bytes: publicBytes)!
        }

        /// The 64-byte signature of `message`.
        public func signature(for message: [UInt8]) -> [UInt8] {
            var signature = [UInt8](repeating: 0, count: Int(crypto_sign_BYTES))
            var length: UInt64 = 0
            let status = crypto_sign_detached(&signature, &length, message, UInt64(message.count), expanded)
            precondition(status == 0, "crypto_sign_detached failed")
            return signature
        }
    }
}
