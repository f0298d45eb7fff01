/// Checks a remote document against its envelope: everything an agent must know before it looks at the document's
/// content. The collector runs the signature part when it loads its directory; the agent runs all of it.
public struct EnvelopeVerifier: Sendable {
    /// Why a document was refused, in the order the checks run.
    public enum Refusal: Error, Sendable, Equatable, CustomStringConvertible {
        /// The document's bytes are not the ones the envelope names.
        case contentMismatch(expected: SHA256Digest, actual: SHA256Digest, expectedSize: Int, actualSize: Int)
        /// The envelope names another document.
        case nameMismatch(envelope: String, document: String)
        /// No trusted key has the envelope's key id.
        case untrustedKey(id: String)
        /// The trusted key with that id did not make this signature.
        case badSignature(keyID: String)
        /// The document is not for this agent.
        case notInAudience(audience: String)
        /// A higher serial of this name was seen already (a replay of an older document), or this serial with
        /// other content.
        case staleSerial(serial: UInt64, highestSeen: UInt64)
        /// The envelope's `not_after` has passed (checked for new applies only).
        case expired(notAfter: Int64)

        public var description: String {
            switch self {
            case .contentMismatch(let expected, let actual, let expectedSize, let actualSize):
                "the document is not the signed one (sha256 \(actual.hex.prefix(12))…, \(actualSize) bytes; "
                    + "the envelope names \(expected.hex.prefix(12))…, \(expectedSize) bytes)"
            case .nameMismatch(let envelope, let document):
                "the envelope signs document '\(envelope)', not '\(document)'"
            case .untrustedKey(let id):
                "signed with key '\(id)', which is not in remote_config.trusted_keys"
            case .badSignature(let id):
                "the signature does not verify with trusted key '\(id)' (the document or its envelope was changed)"
            case .notInAudience(let audience):
                "the document is for '\(audience)', which does not include this agent"
            case .staleSerial(let serial, let highest) where serial == highest:
                "serial \(serial) was seen already with other content (every change needs a new serial)"
            case .staleSerial(let serial, let highest):
                "serial \(serial) is below \(highest), the highest seen for this document (a replay of an older version?)"
            case .expired(let notAfter):
                "the signature expired at \(ConfigEnvelope.rfc3339(notAfter))"
            }
        }
    }

    /// The keys signatures are checked against, by id.
    public let trustedKeys: [String: SigningKeyFile.TrustedKey]

    /// Keys with the same id: the last one wins (`remote_config.trusted_keys` refuses such a list).
    public init(trustedKeys: [SigningKeyFile.TrustedKey]) {
        var byID: [String: SigningKeyFile.TrustedKey] = [:]
        for key in trustedKeys { byID[key.id] = key }
        self.trustedKeys = byID
    }

    /// The envelope names this document: its digest, size and name (no key, no signature). What is checked of an
    /// envelope where signatures are not required.
    public static func verifyContent(
        of envelope: ConfigEnvelope, document: [UInt8], named name: String
    ) -> Result<Void, Refusal> {
        verifyContent(of: envelope, document: ConfigManifest.Blob(of: document), named: name)
    }

    /// `verifyContent(of:document:named:)` for a document known by its digest and size (a manifest's entry, before
    /// the document is downloaded).
    public static func verifyContent(
        of envelope: ConfigEnvelope, document: ConfigManifest.Blob, named name: String
    ) -> Result<Void, Refusal> {
        guard document.sha256 == envelope.sha256, document.size == envelope.size else {
            return .failure(.contentMismatch(
                expected: envelope.sha256, actual: document.sha256, expectedSize: envelope.size, actualSize: document.size))
        }
        guard envelope.name == name else { return .failure(.nameMismatch(envelope: envelope.name, document: name)) }
        return .success(())
    }

    /// The document is the signed one and a trusted key signed it (the collector's check when it loads documents).
    public func verifySignature(
        of envelope: ConfigEnvelope, document: [UInt8], named name: String
    ) -> Result<Void, Refusal> {
        verifySignature(of: envelope, document: ConfigManifest.Blob(of: document), named: name)
    }

    /// `verifySignature(of:document:named:)` for a document known by its digest and size.
    public func verifySignature(
        of envelope: ConfigEnvelope, document: ConfigManifest.Blob, named name: String
    ) -> Result<Void, Refusal> {
        if case .failure(let refusal) = Self.verifyContent(of: envelope, document: document, named: name) {
            return .failure(refusal)
        }
        guard let trusted = trustedKeys[envelope.keyID] else { return .failure(.untrustedKey(id: envelope.keyID)) }
        guard trusted.key.isValidSignature(envelope.signature, for: envelope.signedBytes) else {
            return .failure(.badSignature(keyID: envelope.keyID))
        }
        return .success(())
    }

    /// The highest serial an agent has seen for a document name, and the digest of the document it came with
    /// (persisted by the caller).
    public struct SeenSerial: Sendable, Equatable, Codable {
        public var serial: UInt64
        public var sha256: String

        public init(serial: UInt64, sha256: SHA256Digest) {
            self.serial = serial
            self.sha256 = sha256.hex
        }
    }

    /// Everything an agent checks before it applies a document: the signature, then that it is for this agent, that
    /// its serial is above the highest seen for the name (or equal to it, for the very document seen with it) and,
    /// for a new apply, that it has not expired at `now` (seconds since the epoch). A document already running (the
    /// last-known-good, re-checked at start) passes `isNewApply: false`: an expired signature does not stop it.
    public func verify(
        _ envelope: ConfigEnvelope, document: [UInt8], named name: String, agentID: String, labels: [String: String],
        seen: SeenSerial?, now: Int64, isNewApply: Bool
    ) -> Result<Void, Refusal> {
        verify(
            envelope, document: ConfigManifest.Blob(of: document), named: name,
            agentID: agentID, labels: labels, seen: seen, now: now, isNewApply: isNewApply)
    }

    /// `verify(_:document:named:…)` for a document known by its digest and size: what an agent checks of an
    /// envelope before it downloads the document it signs.
    public func verify(
        _ envelope: ConfigEnvelope, document: ConfigManifest.Blob, named name: String, agentID: String,
        labels: [String: String], seen: SeenSerial?, now: Int64, isNewApply: Bool
    ) -> Result<Void, Refusal> {
        if case .failure(let refusal) = verifySignature(of: envelope, document: document, named: name) {
            return .failure(refusal)
        }
        guard envelope.audience.includes(agentID: agentID, labels: labels) else {
            return .failure(.notInAudience(audience: envelope.audience.selector))
        }
        if let seen {
            let fresh = envelope.serial > seen.serial || (envelope.serial == seen.serial && envelope.sha256.hex == seen.sha256)
            guard fresh else { return .failure(.staleSerial(serial: envelope.serial, highestSeen: seen.serial)) }
        }
        if isNewApply, now > envelope.notAfter { return .failure(.expired(notAfter: envelope.notAfter)) }
        return .success(())
    }
}
