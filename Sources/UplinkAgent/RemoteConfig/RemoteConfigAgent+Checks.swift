import Logging
import Metrics
import ServiceLifecycle
import Synchronization
import UplinkCore
import UplinkFiles
import UplinkRemoteConfig
import UplinkTransport
import UplinkWire

// What a set must pass to run on this box: envelopes against trusted keys and seen serials, documents against
// the local file's rules and `allow`. Pure: the same checks at a look, at the start and after a reload.

extension RemoteConfigAgent {
    /// Why a set may not run on this box (the first failed check, as one line for the status).
    struct Refusal: Error {
        let reason: String
        /// Whether the same set would be refused again as long as the local file is the same (a bad signature, a
        /// path outside `allow`, …): then it is not looked at again. An expired envelope is not: the box's clock may
        /// have been wrong.
        var isLasting = true
    }

    /// Why the document `name` (its digest and size) may not run on this box, from its envelope alone, or nil: with
    /// `require_signature` the signature by a trusted key, the audience, the serial against `seen` and, for a new
    /// apply, the expiry (no envelope: refused); without, only that an envelope it comes with names it. Checked on
    /// the manifest's entry before the document is downloaded, and on the document's bytes before it is applied.
    static func envelopeRefusal(
        _ envelope: ConfigEnvelope?, document: ConfigManifest.Blob, named name: String, local: UplinkFile,
        seen: RemoteConfigStore.Seen?, now: Int64, isNewApply: Bool
    ) -> Refusal? {
        let settings = local.remoteConfig
        guard let envelope else {
            // Served unsigned (a collector with `require_signature: false`): the manifest's digest and size,
            // checked when it was downloaded, are all that vouches for it.
            guard settings.requireSignature else { return nil }
            return Refusal(
                reason: "document '\(name)': the collector serves it without an envelope (unsigned), and "
                    + "remote_config.require_signature is true: sign it with `uplink config sign` on the "
                    + "collector, or set remote_config.require_signature: false on this box to accept unsigned documents")
        }
        let verdict =
            settings.requireSignature
            ? EnvelopeVerifier(trustedKeys: settings.signingKeys).verify(
                envelope, document: document, named: name, agentID: local.agent.id, labels: settings.labels,
                seen: seen?.serials[name], now: now, isNewApply: isNewApply)
            // Signatures off: an envelope that comes with the document must still be this document's.
            : EnvelopeVerifier.verifyContent(of: envelope, document: document, named: name)
        guard case .failure(let problem) = verdict else { return nil }
        var refusal = Refusal(reason: "document '\(name)': \(problem)")
        if case .expired = problem { refusal.isLasting = false }
        return refusal
    }

    /// The remote sources `set` adds to `local`, or why it may not run on this box: each envelope (signature,
    /// audience, serial against `seen`, expiry for a new apply; without `require_signature` only that it names its
    /// document; a document without one only without `require_signature`), then the document rules and the local
    /// `allow` (`RemoteConfiguration.merge`).
    static func sources(
        of set: RemoteConfigStore.DocumentSet, local: UplinkFile, seen: RemoteConfigStore.Seen?, isNewApply: Bool
    ) -> Result<[AgentConfiguration.NamedSource], Refusal> {
        func refused(_ reason: String) -> Result<[AgentConfiguration.NamedSource], Refusal> { .failure(Refusal(reason: reason)) }
        let settings = local.remoteConfig
        guard settings.enabled else { return refused("remote_config is not enabled in the local file") }
        let now = WallClock.nowNanoseconds() / 1_000_000_000
        for document in set.documents {
            let blob = ConfigManifest.Blob(of: document.content)
            if let refusal = envelopeRefusal(
                document.envelope, document: blob, named: document.name, local: local, seen: seen, now: now,
                isNewApply: isNewApply)
            {
                return .failure(refusal)
            }
        }
        let merged = RemoteConfiguration.merge(
            local: local,
            documents: zip(set.manifest.documents, set.documents).map { ($1.name, $1.content, $0.sha256.hex) })
        guard merged.issues.isEmpty, let file = merged.value else {
            let shown = merged.issues.prefix(3).map(\.description).joined(separator: "; ")
            return refused(merged.issues.count > 3 ? "\(shown) (and \(merged.issues.count - 3) more)" : shown)
        }
        return .success(Array(file.sources.dropFirst(local.sources.count)))
    }
}
