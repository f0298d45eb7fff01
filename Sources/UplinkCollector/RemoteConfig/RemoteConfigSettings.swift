import UplinkRemoteConfig

/// `collector.remote_config`: the directory of signed source documents the collector serves to agents, and how it
/// decides which agent gets which (docs/remote-config.md, docs/configuration.md).
public struct RemoteConfigSettings: Sendable, Equatable {
    /// Where the labels that assignment rules match come from.
    public enum LabelSource: String, Sendable, Equatable, CaseIterable {
        /// Subject alternative names `URI:uplink:label:NAME=VALUE` of the agent's client certificate.
        case certificate
        /// `<dir>/inventory.yaml`: agent id → labels.
        case inventory
        /// The agent's own `Uplink-Labels` request header (`name=value,name=value`): anyone who can reach the
        /// collector with the token can claim any label, so it counts only when listed.
        case agent
    }

    /// Absolute path of the directory: `documents/<name>.yaml` with `documents/<name>.yaml.sig`, `assignments.yaml`
    /// and, optionally, `inventory.yaml`. Read at start and on every SIGHUP. Required.
    public var directory: String
    /// Whether every document needs an envelope signed by one of `trustedKeys` (checked at every load). Default
    /// `true`. Without it a document may have no envelope (it is served unsigned: its manifest entry lists none, and
    /// only agents with `require_signature: false` apply it); an envelope it has must still name the document and
    /// its digest, but its key and signature are not checked here (agents check them).
    public var requireSignature: Bool
    /// Paths of public key files (`uplink config keygen`); the keys envelopes may be signed with. Required (at least
    /// one) with `requireSignature`.
    public var trustedKeys: [String]
    /// Where labels come from; when one source names a label another also names, the first of certificate,
    /// inventory, agent wins. Default `[certificate, inventory]`.
    public var labelsFrom: Set<LabelSource>

    public init(
        directory: String, requireSignature: Bool = true, trustedKeys: [String] = [],
        labelsFrom: Set<LabelSource> = [.certificate, .inventory]
    ) {
        self.directory = directory
        self.requireSignature = requireSignature
        self.trustedKeys = trustedKeys
        self.labelsFrom = labelsFrom
    }

    /// The keys of `collector.remote_config`.
    public static let keys = ["dir", "require_signature", "trusted_keys", "labels_from"]
}

/// The agent's validator for a remote document, injected by the executable (the collector module cannot import
/// the agent): the document's name, bytes and digest in, the problems found out (empty: valid). The collector
/// refuses to serve a document with problems.
public typealias RemoteDocumentValidator = @Sendable (_ name: String, _ bytes: [UInt8], _ sha256: SHA256Digest) -> [String]
