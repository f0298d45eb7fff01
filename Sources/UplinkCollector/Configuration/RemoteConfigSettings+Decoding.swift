import UplinkConfig
import UplinkRemoteConfig

extension RemoteConfigSettings {
    /// Decodes `collector.remote_config`, reporting each problem at its `file:line:col` and key; nil when `dir` is
    /// missing or a key is unusable. Key files are read now, so `uplink validate` reports a missing or malformed
    /// key; the directory itself is read when the collector starts (a bad one stops the start).
    static func decode(_ mapping: ConfigMapping) -> RemoteConfigSettings? {
        let decoder = mapping.decoder
        var valid = true
        var directory: String?
        if let node = mapping.require("dir", hint: "an absolute path such as /etc/uplink/fleet"),
            let text = decoder.string(node, at: mapping.path("dir"))
        {
            if text.hasPrefix("/") {
                directory = text
            } else {
                decoder.report(
                    .invalidValue, at: node.mark, path: mapping.path("dir"), "'\(text)' is not an absolute path",
                    hint: "e.g. /etc/uplink/fleet")
            }
        }
        let requireSignature = mapping.bool("require_signature") ?? true
        var keys: [String] = []
        var keyIDs: [String: String] = [:]
        if let items = mapping.list("trusted_keys") {
            for item in items {
                guard let text = decoder.string(item.node, at: item.path) else {
                    valid = false
                    continue
                }
                let path = ConfigFiles.resolve(text, relativeTo: decoder.baseDirectory)
                switch SigningKeyFile.readPublic(path: path) {
                case .failure(let failure):
                    decoder.report(.unreadableFile, at: item.node.mark, path: item.path, failure.description)
                    valid = false
                case .success(let key):
                    if let first = keyIDs[key.id] {
                        decoder.report(
                            .duplicateName, at: item.node.mark, path: item.path,
                            "key id '\(key.id)' of \(path) is also the id of \(first)",
                            hint: "every trusted key needs its own id")
                        valid = false
                    } else {
                        keyIDs[key.id] = path
                        keys.append(path)
                    }
                }
            }
        }
        if requireSignature, keys.isEmpty, valid {
            decoder.report(
                .missingKey, at: (mapping.value("trusted_keys") ?? mapping.node).mark, path: mapping.path("trusted_keys"),
                "require_signature is true, and no trusted key is listed",
                hint: "list the public key files of `uplink config keygen`, or set require_signature: false")
            valid = false
        }
        var labelsFrom: Set<LabelSource> = [.certificate, .inventory]
        if let items = mapping.list("labels_from") {
            labelsFrom = []
            for item in items {
                guard let text = decoder.string(item.node, at: item.path) else {
                    valid = false
                    continue
                }
                guard let source = LabelSource(rawValue: text) else {
                    decoder.report(
                        .invalidValue, at: item.node.mark, path: item.path, "'\(text)' is not a label source",
                        hint: "list any of: certificate, inventory, agent")
                    valid = false
                    continue
                }
                guard labelsFrom.insert(source).inserted else {
                    decoder.report(.invalidValue, at: item.node.mark, path: item.path, "'\(text)' is listed twice")
                    valid = false
                    continue
                }
            }
        }
        guard valid, let directory else { return nil }
        return RemoteConfigSettings(
            directory: directory, requireSignature: requireSignature, trustedKeys: keys, labelsFrom: labelsFrom)
    }
}
