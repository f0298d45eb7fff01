import FoundationEssentials

/// What the collector assigns one agent (`GET /v1/config`): the generation of its assignments file, a revision that
/// names the whole set, and each document with its envelope, both as content-addressed blobs
/// (`GET /v1/config/blobs/sha256:<hex>`).
///
/// ```json
/// {"version":1,"generation":17,"rev":"sha256:1d3e…",
///  "documents":[{"name":"base","sha256":"ab12…","size":1874,"sig_sha256":"77aa…","sig_size":412},
///               {"name":"lab","sha256":"c0de…","size":310}]}
/// ```
///
/// A document without `sig_sha256` and `sig_size` has no envelope: a collector with `require_signature: false`
/// serves it unsigned, and only an agent with `require_signature: false` applies it. (Agents from before unsigned
/// documents refuse such a manifest as a whole, and keep what runs.)
public struct ConfigManifest: Sendable, Equatable {
    /// The only version: 1.
    public static let version = 1
    /// A manifest lists at most this many documents.
    public static let maximumDocuments = 256
    /// Manifests are small; a larger body is refused while it streams.
    public static let maximumBytes = 64 * 1024

    /// A blob the manifest names: its digest and length.
    public struct Blob: Sendable, Equatable, Hashable {
        public var sha256: SHA256Digest
        public var size: Int

        public init(sha256: SHA256Digest, size: Int) {
            self.sha256 = sha256
            self.size = size
        }

        /// The digest and length of `bytes`.
        public init(of bytes: [UInt8]) {
            self.init(sha256: SHA256Digest(of: bytes), size: bytes.count)
        }
    }

    /// One assigned document.
    public struct Document: Sendable, Equatable, Codable {
        /// The document's name (`documents/<name>.yaml` on the collector).
        public var name: String
        /// The document's digest and length.
        public var sha256: SHA256Digest
        public var size: Int
        /// The digest and length of its envelope (`<name>.yaml.sig`); nil for a document served unsigned.
        public var envelope: Blob?

        /// A document and its envelope, or without one (`envelope: nil`).
        public init(name: String, sha256: SHA256Digest, size: Int, envelope: Blob?) {
            self.name = name
            self.sha256 = sha256
            self.size = size
            self.envelope = envelope
        }

        /// A signed document: its envelope's digest and length.
        public init(name: String, sha256: SHA256Digest, size: Int, signatureSHA256: SHA256Digest, signatureSize: Int) {
            self.init(name: name, sha256: sha256, size: size, envelope: Blob(sha256: signatureSHA256, size: signatureSize))
        }

        /// The document's own blob.
        public var blob: Blob { Blob(sha256: sha256, size: size) }

        enum CodingKeys: String, CodingKey {
            case name, sha256, size
            case signatureSHA256 = "sig_sha256"
            case signatureSize = "sig_size"
        }

        public init(from decoder: any Decoder) throws {
            let container = try decoder.container(keyedBy: CodingKeys.self)
            name = try container.decode(String.self, forKey: .name)
            guard ConfigEnvelope.isValidName(name) else {
                throw ConfigEnvelope.DecodingFailure(reason: "document name '\(name)' is not 1 to 128 of A-Z a-z 0-9 . _ -")
            }
            guard let digest = SHA256Digest(hex: try container.decode(String.self, forKey: .sha256)) else {
                throw ConfigEnvelope.DecodingFailure(reason: "document '\(name)': a digest is not 64 lower-case hex digits")
            }
            sha256 = digest
            size = try container.decode(Int.self, forKey: .size)
            guard size >= 0 else { throw ConfigEnvelope.DecodingFailure(reason: "document '\(name)': a size is negative") }
            let signatureHex = try container.decodeIfPresent(String.self, forKey: .signatureSHA256)
            let signatureSize = try container.decodeIfPresent(Int.self, forKey: .signatureSize)
            switch (signatureHex, signatureSize) {
            case (nil, nil):
                envelope = nil
            case (let hex?, let size?):
                guard let signatureDigest = SHA256Digest(hex: hex) else {
                    throw ConfigEnvelope.DecodingFailure(reason: "document '\(name)': a digest is not 64 lower-case hex digits")
                }
                guard size >= 0 else { throw ConfigEnvelope.DecodingFailure(reason: "document '\(name)': a size is negative") }
                envelope = Blob(sha256: signatureDigest, size: size)
            default:
                throw ConfigEnvelope.DecodingFailure(
                    reason: "document '\(name)': sig_sha256 and sig_size come together (both for an envelope, neither without)")
            }
        }

        public func encode(to encoder: any Encoder) throws {
            var container = encoder.container(keyedBy: CodingKeys.self)
            try container.encode(name, forKey: .name)
            try container.encode(sha256.hex, forKey: .sha256)
            try container.encode(size, forKey: .size)
            if let envelope {
                try container.encode(envelope.sha256.hex, forKey: .signatureSHA256)
                try container.encode(envelope.size, forKey: .signatureSize)
            }
        }
    }

    /// The assignments file's `generation`: an agent refuses a manifest with a lower one than it has seen (two
    /// collectors behind one address with different files do not make it flap).
    public var generation: UInt64
    /// The documents, sorted by name, names unique.
    public var documents: [Document]

    /// The documents sorted by name. Names must be unique (the collector's loader guarantees it).
    public init(generation: UInt64, documents: [Document]) {
        self.generation = generation
        self.documents = documents.sorted { $0.name < $1.name }
    }

    /// The revision of this set of documents: SHA-256 over `name`, `sha256` and `sig_sha256` (`-` for a document
    /// without an envelope) of each document in name order, one line each, separated by spaces. The generation is
    /// not part of it: moving a rollout on without changing what an agent gets leaves its revision alone.
    public var revision: SHA256Digest {
        var text = ""
        for document in documents {
            text += "\(document.name) \(document.sha256.hex) \(document.envelope?.sha256.hex ?? "-")\n"
        }
        return SHA256Digest(of: Array(text.utf8))
    }

    /// Every blob the manifest names: each document and each envelope.
    public var blobs: [Blob] {
        documents.flatMap { [$0.blob] + ($0.envelope.map { [$0] } ?? []) }
    }

    /// The manifest as JSON (keys sorted, one line, a final newline).
    public var json: [UInt8] {
        let encoder = JSONEncoder()
        encoder.outputFormatting = [.sortedKeys, .withoutEscapingSlashes]
        let wire = Wire(version: Self.version, generation: generation, rev: revision.prefixed, documents: documents)
        return Array((try? encoder.encode(wire)) ?? Data()) + [UInt8(ascii: "\n")]
    }

    /// Parses a manifest strictly: version 1, at most `maximumDocuments` documents with unique names, one size per
    /// digest, and `rev` equal to the revision of the documents listed (a manifest cannot name one set and list another).
    public init(json bytes: [UInt8]) throws(ConfigEnvelope.DecodingFailure) {
        guard bytes.count <= Self.maximumBytes else {
            throw ConfigEnvelope.DecodingFailure(reason: "the manifest is \(bytes.count) bytes, more than \(Self.maximumBytes)")
        }
        let wire: Wire
        do {
            wire = try JSONDecoder().decode(Wire.self, from: Data(bytes))
        } catch let failure as ConfigEnvelope.DecodingFailure {
            throw failure
        } catch {
            throw ConfigEnvelope.DecodingFailure(reason: "not a manifest (version, generation, rev and documents are required)")
        }
        guard wire.version == Self.version else {
            throw ConfigEnvelope.DecodingFailure(reason: "manifest version \(wire.version), this agent reads version \(Self.version)")
        }
        guard wire.documents.count <= Self.maximumDocuments else {
            throw ConfigEnvelope.DecodingFailure(reason: "the manifest lists \(wire.documents.count) documents, more than \(Self.maximumDocuments)")
        }
        guard Set(wire.documents.map(\.name)).count == wire.documents.count else {
            throw ConfigEnvelope.DecodingFailure(reason: "the manifest lists a document name twice")
        }
        self.init(generation: wire.generation, documents: wire.documents)
        // One blob is one file: listed twice with two sizes, each download would throw the other away.
        var sizes: [SHA256Digest: Int] = [:]
        for blob in blobs {
            if let size = sizes.updateValue(blob.size, forKey: blob.sha256), size != blob.size {
                throw ConfigEnvelope.DecodingFailure(
                    reason: "the manifest lists blob \(blob.sha256.prefixed) with two sizes (\(size) and \(blob.size))")
            }
        }
        guard wire.rev == revision.prefixed else {
            throw ConfigEnvelope.DecodingFailure(reason: "the manifest's rev is not the revision of the documents it lists")
        }
    }

    private struct Wire: Codable {
        var version: Int
        var generation: UInt64
        var rev: String
        var documents: [Document]
    }
}
