import UplinkConfig
import UplinkCore

extension UplinkFile {
    /// Decodes the `collector` section for the module that owns it (UplinkCollector, which this module does not
    /// import), reporting its problems to the same decoder, so that one load reports every issue of the file in
    /// document order. `uplink` passes `CollectorConfiguration.decode`; it is called at most once, only when the file
    /// has a `collector` mapping (`collector:` alone is an empty one).
    public typealias CollectorSectionDecoder = (ConfigMapping) -> Void

    /// Reads, parses, decodes and validates the configuration file at `path`.
    ///
    /// Every problem is reported at once, in document order, each with `file:line:column`, the key path and, where
    /// useful, a hint (see `ConfigIssue` for the format). `value` is present exactly when there is no issue.
    /// Files named by the configuration (`token_file`) are read now, so their problems are reported too.
    /// - Parameters:
    ///   - path: The configuration file.
    ///   - environment: Where `${VAR}` references get their values; the process environment by default.
    ///   - collectorSection: Decodes the `collector` section (see `CollectorSectionDecoder`).
    public static func load(
        path: String, environment: ConfigEnvironment = .process, collectorSection: CollectorSectionDecoder
    ) -> ConfigResult<UplinkFile> {
        decode(ConfigDocument.load(path: path, environment: environment), collectorSection: collectorSection)
    }

    /// Parses, decodes and validates configuration text; `file` names it in issues (and relative `token_file`
    /// paths are resolved against its directory).
    public static func decode(
        _ text: String, file: String, environment: ConfigEnvironment = .process, collectorSection: CollectorSectionDecoder
    ) -> ConfigResult<UplinkFile> {
        decode(ConfigDocument.parse(text, file: file, environment: environment), collectorSection: collectorSection)
    }

    /// Decodes and validates a parsed document, adding to its issues.
    public static func decode(_ document: ConfigDocument, collectorSection: CollectorSectionDecoder) -> ConfigResult<UplinkFile> {
        let decoder = ConfigDecoder(document: document)
        guard let root = decoder.rootMapping(allowedKeys: keys) else {
            return ConfigResult(value: nil, issues: decoder.issues)
        }
        if root.entries.isEmpty {
            decoder.report(
                .missingKey, at: root.node.mark, path: .root, "the configuration is empty",
                hint: "an agent needs 'uplink' and 'sources', a collector 'collector'; see examples.yaml")
            return ConfigResult(value: nil, issues: decoder.issues)
        }

        var file = UplinkFile(path: document.file)
        file.configuresAgent = root.contains("uplink") || root.contains("sources")
        let collectorOnly = root.contains("collector") && !file.configuresAgent

        if let section = root.mapping("agent", allowedKeys: AgentSection.keys) {
            file.agent = AgentSection.decode(section)
        }
        if let section = root.mapping("buffer", allowedKeys: BufferSection.keys) {
            file.buffer = BufferSection.decode(section)
        }
        if let section = root.mapping("uplink", allowedKeys: UplinkSection.keys) {
            file.uplink = UplinkSection.decode(section)
        } else if !collectorOnly && !root.contains("uplink") {
            decoder.report(
                .missingKey, at: root.node.mark, path: root.path("uplink"), "missing required key 'uplink'",
                hint: "add 'uplink: { url: embedded }' for an in-process collector, or give the collector's URL")
        }
        if root.contains("sources") {
            file.sources = SourceDecoding.decodeSources(root)
        } else if !collectorOnly {
            decoder.report(
                .missingKey, at: root.node.mark, path: root.path("sources"), "missing required key 'sources'",
                hint: "add at least one source, e.g. 'sources: [{ name: cpu, type: cpu }]'")
        }
        if let section = root.mapping("remote_config", allowedKeys: RemoteConfigSection.keys) {
            file.remoteConfig = RemoteConfigSection.decode(section)
        }
        // The section's own keys are checked by its decoder.
        if let section = root.mapping("collector", allowedKeys: nil) {
            file.collector = section.node
            collectorSection(section)
        }
        return ConfigResult(value: file, issues: decoder.issues)
    }
}
