import UplinkConfig
import UplinkCore
import UplinkFiles
import UplinkRemoteConfig

#if canImport(Glibc)
import Glibc
#elseif canImport(Musl)
import Musl
#endif

/// One document the collector serves: its bytes and its envelope's, both content-addressed.
struct ServedDocument: Sendable {
    let name: String
    let bytes: [UInt8]
    let sha256: SHA256Digest
    /// The envelope's bytes; nil for a document served unsigned (`require_signature: false` and no `.sig`).
    let envelope: [UInt8]?
    let envelopeSHA256: SHA256Digest?
    /// The `name` of each of its sources: two documents an agent gets together must not share one.
    let sourceNames: [String]

    var manifestEntry: ConfigManifest.Document {
        ConfigManifest.Document(
            name: name, sha256: sha256, size: bytes.count,
            envelope: envelope.flatMap { bytes in envelopeSHA256.map { ConfigManifest.Blob(sha256: $0, size: bytes.count) } })
    }
}

/// A stage of a rollout: agents with matching labels, or a stable share of agents.
enum RolloutStage: Sendable, Equatable {
    case labels([String: String])
    /// Hundredths of a percent (0 to 10 000).
    case basisPoints(Int)
}

/// `rollout:` of an assignment rule.
struct Rollout: Sendable, Equatable {
    /// What agents of the rule outside the active stages get (and, once halted, those not yet on the new documents).
    var previous: [String]
    var stages: [RolloutStage]
    /// Stages `0...currentStage` are active (0-based).
    var currentStage: Int
    /// Distinct agents of the active stages reporting `failed` or `rolled_back` that halt the rollout.
    var haltOnFailures: Int
}

/// One rule of `assignments.yaml`.
struct AssignmentRule: Sendable, Equatable {
    var name: String
    /// Globs on the agent id; empty: every agent.
    var agents: [String]
    /// Label name → glob on its value; all must match.
    var labels: [String: String]
    var documents: [String]
    var rollout: Rollout?

    func matches(agent: String, labels agentLabels: [String: String]) -> Bool {
        if !agents.isEmpty, !agents.contains(where: { Audience(agent: $0).includes(agentID: agent, labels: [:]) }) {
            return false
        }
        return Audience(agent: "*", labels: labels).includes(agentID: agent, labels: agentLabels)
    }
}

/// One problem of one file, as a sentence.
struct LoadProblem: Error {
    let text: String
}

extension Result where Failure == LoadProblem {
    static func fail(_ text: String) -> Self { .failure(LoadProblem(text: text)) }
}

/// Why a directory could not be loaded: every problem found, each naming the file (and line and key where there is
/// one) or the document.
public struct RemoteConfigLoadFailure: Error, Sendable, CustomStringConvertible {
    public let problems: [String]
    public var description: String { problems.joined(separator: "; ") }
}

/// A loaded `collector.remote_config.dir`: every document checked (envelope, signature, the agent's validator),
/// the assignment rules, and the inventory. Immutable; a reload builds a new one.
struct RemoteConfigSet: Sendable {
    static let maximumDocumentBytes = 4 << 20
    static let maximumDocuments = 4096
    static let maximumYAMLBytes = 4 << 20

    let generation: UInt64
    let documents: [String: ServedDocument]
    /// Every document and envelope by digest.
    let blobs: [SHA256Digest: [UInt8]]
    let rules: [AssignmentRule]
    /// Agent id → labels (`inventory.yaml`).
    let inventory: [String: [String: String]]

    /// Reads and checks `settings.directory`.
    static func load(
        _ settings: RemoteConfigSettings, validator: RemoteDocumentValidator
    ) -> Result<RemoteConfigSet, RemoteConfigLoadFailure> {
        var problems: [String] = []
        let directory = settings.directory.hasSuffix("/") ? String(settings.directory.dropLast()) : settings.directory
        var keys: [SigningKeyFile.TrustedKey] = []
        for path in settings.trustedKeys {
            switch SigningKeyFile.readPublic(path: path) {
            case .success(let key): keys.append(key)
            case .failure(let failure): problems.append("trusted key \(failure)")
            }
        }
        let verifier = EnvelopeVerifier(trustedKeys: keys)
        let documentsDirectory = directory + "/documents"
        var documents: [String: ServedDocument] = [:]
        var blobs: [SHA256Digest: [UInt8]] = [:]
        let names: [String]
        do {
            // Files starting with a dot are not the operator's documents (an editor's lock or swap file, `.#a.yaml`).
            names = try FileIO.listDirectory(documentsDirectory).filter { !$0.hasPrefix(".") }.sorted()
        } catch {
            return .failure(RemoteConfigLoadFailure(problems: problems + ["\(documentsDirectory): \(error.message)"]))
        }
        let yamlNames = names.filter { $0.hasSuffix(".yaml") }
        for file in names where !file.hasSuffix(".yaml") && !file.hasSuffix(".yaml.sig") {
            problems.append("\(documentsDirectory)/\(file): not a document (<name>.yaml) or an envelope (<name>.yaml.sig)")
        }
        for file in names where file.hasSuffix(".yaml.sig") && !names.contains(String(file.dropLast(4))) {
            problems.append("\(documentsDirectory)/\(file): an envelope without its document")
        }
        if yamlNames.count > maximumDocuments {
            problems.append("\(documentsDirectory): \(yamlNames.count) documents, more than \(maximumDocuments)")
        }
        for file in yamlNames.prefix(maximumDocuments) {
            let name = String(file.dropLast(5))
            let path = documentsDirectory + "/" + file
            guard ConfigEnvelope.isValidName(name) else {
                problems.append("\(path): '\(name)' cannot name a document (1 to 128 of A-Z a-z 0-9 . _ -, not starting with '.')")
                continue
            }
            switch loadDocument(name: name, path: path, settings: settings, verifier: verifier, validator: validator) {
            case .failure(let problem):
                problems.append("document '\(name)' (\(path)): \(problem.text)")
            case .success(let document):
                documents[name] = document
                blobs[document.sha256] = document.bytes
                if let envelope = document.envelope, let digest = document.envelopeSHA256 { blobs[digest] = envelope }
            }
        }
        let assignmentsPath = directory + "/assignments.yaml"
        var rules: [AssignmentRule] = []
        var generation: UInt64 = 0
        switch readYAML(assignmentsPath, optional: false) {
        case .failure(let problem):
            problems.append(problem.text)
        case .success(let decoder):
            if let decoder {
                let parsed = decodeAssignments(decoder, documents: documents, refused: Set(yamlNames.map { String($0.dropLast(5)) }))
                problems.append(contentsOf: decoder.issues.map { $0.description })
                generation = parsed.generation
                rules = parsed.rules
            }
        }
        var inventory: [String: [String: String]] = [:]
        switch readYAML(directory + "/inventory.yaml", optional: true) {
        case .failure(let problem):
            problems.append(problem.text)
        case .success(let decoder):
            if let decoder {
                inventory = decodeInventory(decoder)
                problems.append(contentsOf: decoder.issues.map { $0.description })
            }
        }
        guard problems.isEmpty else { return .failure(RemoteConfigLoadFailure(problems: problems)) }
        return .success(
            RemoteConfigSet(generation: generation, documents: documents, blobs: blobs, rules: rules, inventory: inventory))
    }

    /// Reads one document and its envelope and checks them; the reason when refused. Without `require_signature` a
    /// document may have no envelope (it is served unsigned); one it has must still name it.
    private static func loadDocument(
        name: String, path: String, settings: RemoteConfigSettings, verifier: EnvelopeVerifier,
        validator: RemoteDocumentValidator
    ) -> Result<ServedDocument, LoadProblem> {
        let bytes: [UInt8]
        switch WholeFile.read(path: path, limit: maximumDocumentBytes) {
        case .success(let read): bytes = read
        case .failure(let failure): return .fail("cannot read it: \(failure.reasonDescription)")
        }
        let digest = SHA256Digest(of: bytes)
        let envelopeBytes: [UInt8]?
        switch WholeFile.read(path: path + ".sig", limit: ConfigEnvelope.maximumBytes) {
        case .success(let read): envelopeBytes = read
        case .failure(let failure) where failure.isMissing:
            guard !settings.requireSignature else {
                return .fail(
                    "it has no envelope (\(name).yaml.sig): sign it with `uplink config sign`, or set "
                        + "collector.remote_config.require_signature: false to serve it unsigned")
            }
            envelopeBytes = nil
        case .failure(let failure): return .fail("cannot read its envelope: \(failure.reasonDescription)")
        }
        if let envelopeBytes {
            let envelope: ConfigEnvelope
            do {
                envelope = try ConfigEnvelope(json: envelopeBytes)
            } catch {
                return .fail("its envelope is not valid: \(error)")
            }
            // Without `require_signature` the key and signature are the agents' to check; the envelope must at least
            // be this document's (the manifest lists it with the document).
            let verdict =
                settings.requireSignature
                ? verifier.verifySignature(of: envelope, document: bytes, named: name)
                : EnvelopeVerifier.verifyContent(of: envelope, document: bytes, named: name)
            if case .failure(let refusal) = verdict { return .fail(refusal.description) }
        }
        let issues = validator(name, bytes, digest)
        guard issues.isEmpty else { return .fail("the agent's validator refuses it: " + issues.joined(separator: "; ")) }
        return .success(ServedDocument(
            name: name, bytes: bytes, sha256: digest, envelope: envelopeBytes, envelopeSHA256: envelopeBytes.map { SHA256Digest(of: $0) },
            sourceNames: sourceNames(of: bytes, path: path)))
    }

    /// The `name` of each source of a document the validator accepted (`sources: [{name: …}, …]`).
    static func sourceNames(of bytes: [UInt8], path: String) -> [String] {
        let document = ConfigDocument.parse(bytes: bytes, file: path, environment: ConfigEnvironment([:]))
        guard document.issues.isEmpty else { return [] }
        let decoder = ConfigDecoder(document: document)
        guard let root = decoder.rootMapping(allowedKeys: nil) else { return [] }
        return root.list("sources")?.compactMap { element in
            decoder.mapping(element.node, at: element.path, allowedKeys: nil)?.string("name")
        } ?? []
    }

    /// A decoder over the YAML file at `path`; nil for a missing optional file; a problem for an unreadable one.
    private static func readYAML(_ path: String, optional: Bool) -> Result<ConfigDecoder?, LoadProblem> {
        switch WholeFile.read(path: path, limit: maximumYAMLBytes) {
        case .failure(let failure) where failure.isMissing && optional:
            return .success(nil)
        case .failure(let failure):
            return .fail("\(path): cannot read it: \(failure.reasonDescription)")
        case .success(let bytes):
            // No `${…}` expansion: these files are data, the same on every collector.
            let document = ConfigDocument.parse(bytes: bytes, file: path, environment: ConfigEnvironment([:]))
            guard document.issues.isEmpty else {
                return .fail(document.issues.map { $0.description }.joined(separator: "; "))
            }
            return .success(ConfigDecoder(document: document))
        }
    }

    // MARK: - assignments.yaml

    private static func decodeAssignments(
        _ decoder: ConfigDecoder, documents: [String: ServedDocument], refused: Set<String>
    ) -> (generation: UInt64, rules: [AssignmentRule]) {
        guard let root = decoder.rootMapping(allowedKeys: ["generation", "assign"]) else { return (0, []) }
        var generation: UInt64 = 0
        if let node = root.require("generation", hint: "an integer that grows with every change, e.g. 1") {
            if let value = decoder.int(node, at: root.path("generation"), .atLeast(0)) { generation = UInt64(value) }
        }
        var rules: [AssignmentRule] = []
        var ruleNames: [String: Int] = [:]
        // Where each rule is, to name it in a problem found across rules.
        var marks: [(ConfigMark, ConfigPath)] = []
        for element in root.list("assign") ?? [] {
            guard let mapping = decoder.mapping(
                element.node, at: element.path, allowedKeys: ["name", "match", "documents", "rollout"])
            else { continue }
            var rule = AssignmentRule(name: "", agents: [], labels: [:], documents: [], rollout: nil)
            if let name = mapping.requiredString("name", hint: "a unique name; it also names the rule's rollout") {
                if let line = ruleNames[name] {
                    decoder.report(
                        .duplicateName, at: mapping.value("name")!.mark, path: mapping.path("name"),
                        "rule name '\(name)' is used twice (first at line \(line))")
                } else {
                    ruleNames[name] = mapping.value("name")!.mark.line
                }
                rule.name = name
            }
            if let match = mapping.mapping("match", allowedKeys: ["agents", "labels"]) {
                let selector = decodeMatch(match, inStage: false)
                rule.agents = selector.agents
                rule.labels = selector.labels
            }
            rule.documents = documentList(mapping, "documents", documents: documents, refused: refused, required: true)
            if let rollout = mapping.mapping(
                "rollout", allowedKeys: ["previous", "stages", "current_stage", "halt_on_failures"])
            {
                rule.rollout = decodeRollout(rollout, documents: documents, refused: refused)
            }
            rules.append(rule)
            marks.append(((mapping.value("name") ?? element.node).mark, mapping.path("name")))
        }
        for later in rules.indices {
            for earlier in rules.indices where earlier < later {
                guard !areExclusive(rules[earlier], rules[later]),
                    let (first, second, source) = collision(rules[earlier], rules[later], documents: documents)
                else { continue }
                decoder.report(
                    .invalidValue, at: marks[later].0, path: marks[later].1,
                    "rules '\(rules[earlier].name)' and '\(rules[later].name)' can match the same agent, and their documents "
                        + "'\(first)' and '\(second)' both define source '\(source)': an agent given both refuses them",
                    hint: "rename the source, or make the rules exclusive (agent globs, or globs of one label, that cannot "
                        + "match the same text: e.g. site: \"berlin-*\" and site: \"paris-*\")")
            }
        }
        return (generation, rules)
    }

    /// Every document `rule` may assign: its documents, and its rollout's `previous`.
    private static func possibleDocuments(_ rule: AssignmentRule) -> [String] {
        rule.documents + (rule.rollout?.previous ?? []).filter { !rule.documents.contains($0) }
    }

    /// Two different documents, one each of what `a` and `b` may assign, that define the same source; nil if none.
    private static func collision(
        _ a: AssignmentRule, _ b: AssignmentRule, documents: [String: ServedDocument]
    ) -> (String, String, String)? {
        for first in possibleDocuments(a) {
            for second in possibleDocuments(b) where second != first {
                if let source = sharedSource(documents[second], documents[first]) { return (first, second, source) }
            }
        }
        return nil
    }

    /// The first source of `a` that `b` defines too, or nil (also when either is missing).
    private static func sharedSource(_ a: ServedDocument?, _ b: ServedDocument?) -> String? {
        guard let a, let b else { return nil }
        return a.sourceNames.first(where: b.sourceNames.contains)
    }

    /// Whether no agent can match both rules: both list agent globs and no glob of one can match an id that one of
    /// the other matches, or both name a label whose globs cannot match the same value. Conservative: false when it
    /// cannot tell (globs that might overlap are taken to overlap).
    static func areExclusive(_ a: AssignmentRule, _ b: AssignmentRule) -> Bool {
        if !a.agents.isEmpty, !b.agents.isEmpty,
            a.agents.allSatisfy({ first in b.agents.allSatisfy { globsAreExclusive(first, $0) } })
        {
            return true
        }
        return a.labels.contains { name, glob in b.labels[name].map { globsAreExclusive(glob, $0) } ?? false }
    }

    /// Whether no text matches both shell globs: two different texts without wildcards, or literal beginnings (up to
    /// the first `*`, `?`, `[` or `\`) or literal ends (after the last of these and `]`) that differ where they
    /// overlap. Compared as bytes, as `fnmatch` does.
    static func globsAreExclusive(_ a: String, _ b: String) -> Bool {
        let special: Set<UInt8> = [UInt8(ascii: "*"), UInt8(ascii: "?"), UInt8(ascii: "["), UInt8(ascii: "]"), UInt8(ascii: "\\")]
        let (x, y) = (Array(a.utf8), Array(b.utf8))
        let (xLiteral, yLiteral) = (!x.contains(where: special.contains), !y.contains(where: special.contains))
        if xLiteral, yLiteral { return x != y }
        let (xStart, yStart) = (x.prefix { !special.contains($0) }, y.prefix { !special.contains($0) })
        if !xStart.starts(with: yStart), !yStart.starts(with: xStart) { return true }
        let xEnd = Array(x.reversed().prefix { !special.contains($0) })
        let yEnd = Array(y.reversed().prefix { !special.contains($0) })
        return !xEnd.starts(with: yEnd) && !yEnd.starts(with: xEnd)
    }

    /// A rule's `match` (`inStage: false`) or a stage's. An empty selector (`match: {}`, `agents: []`,
    /// `labels: {}`) would select every agent without saying so: it is a problem.
    private static func decodeMatch(_ match: ConfigMapping, inStage: Bool) -> (agents: [String], labels: [String: String]) {
        let decoder = match.decoder
        if match.entries.isEmpty {
            decoder.report(
                .invalidValue, at: match.node.mark, path: match.path,
                inStage
                    ? "an empty match would put every agent in this stage"
                    : "an empty match would select every agent",
                hint: inStage
                    ? "give labels, e.g. {match: {labels: {ring: canary}}}, or use {percent: 100} for every agent"
                    : "give agents or labels, or leave out match to assign the documents to every agent")
        }
        var agents: [String] = []
        if let node = match.value("agents"), let items = decoder.list(node, at: match.path("agents")) {
            if items.isEmpty {
                decoder.report(
                    .invalidValue, at: node.mark, path: match.path("agents"), "an empty agents list would select every agent",
                    hint: "list at least one glob on the agent id, or leave out agents")
            }
            agents = items.compactMap { decoder.string($0.node, at: $0.path) }
        }
        var labels: [String: String] = [:]
        if let mapping = match.mapping("labels", allowedKeys: nil) {
            if mapping.entries.isEmpty {
                decoder.report(
                    .invalidValue, at: mapping.node.mark, path: mapping.path, "an empty labels mapping would select every agent",
                    hint: "give at least one label and its glob, or leave out labels")
            }
            for entry in mapping.entries {
                if let value = decoder.string(entry.value, at: mapping.path(entry.name), allowEmpty: true) {
                    labels[entry.name] = value
                }
            }
        }
        return (agents, labels)
    }

    private static func documentList(
        _ mapping: ConfigMapping, _ key: String, documents: [String: ServedDocument], refused: Set<String>, required: Bool
    ) -> [String] {
        let decoder = mapping.decoder
        guard let items = mapping.list(key) else {
            if required { _ = mapping.require(key, hint: "the names of documents/<name>.yaml to assign") }
            return []
        }
        var names: [String] = []
        for item in items {
            guard let name = decoder.string(item.node, at: item.path) else { continue }
            if documents[name] == nil {
                // A refused document is reported with its reason already; name only the missing ones here.
                if !refused.contains(name) {
                    decoder.report(
                        .invalidValue, at: item.node.mark, path: item.path, "no document '\(name)' (documents/\(name).yaml)")
                }
                continue
            }
            guard !names.contains(name) else { continue }
            // Two documents of one list are given to the same agents together: their sources must not share a name.
            if let (other, source) = names.lazy.compactMap({ other in
                sharedSource(documents[other], documents[name]).map { (other, $0) }
            }).first {
                decoder.report(
                    .invalidValue, at: item.node.mark, path: item.path,
                    "documents '\(other)' and '\(name)' both define source '\(source)': an agent given both refuses them",
                    hint: "rename the source in one of them, or assign them to different agents")
            }
            names.append(name)
        }
        return names
    }

    private static func decodeRollout(
        _ mapping: ConfigMapping, documents: [String: ServedDocument], refused: Set<String>
    ) -> Rollout {
        let decoder = mapping.decoder
        var rollout = Rollout(previous: [], stages: [], currentStage: 0, haltOnFailures: 1)
        rollout.previous = documentList(mapping, "previous", documents: documents, refused: refused, required: false)
        if let items = mapping.list("stages") {
            for item in items {
                guard let stage = decoder.mapping(item.node, at: item.path, allowedKeys: ["match", "percent"]) else { continue }
                if stage.contains("match") == stage.contains("percent") {
                    decoder.report(
                        .invalidValue, at: item.node.mark, path: item.path, "a stage is either {match: {labels: …}} or {percent: N}")
                    continue
                }
                if let match = stage.mapping("match", allowedKeys: ["labels"]) {
                    rollout.stages.append(.labels(decodeMatch(match, inStage: true).labels))
                } else if let percent = stage.double("percent", .between(0, 100)) {
                    rollout.stages.append(.basisPoints(Int((percent * 100).rounded())))
                }
            }
        } else {
            _ = mapping.require("stages", hint: "e.g. [{match: {labels: {ring: canary}}}, {percent: 10}, {percent: 100}]")
        }
        if let node = mapping.value("current_stage"),
            let stage = decoder.int(node, at: mapping.path("current_stage"), .atLeast(0))
        {
            if stage >= max(rollout.stages.count, 1) {
                decoder.report(
                    .outOfRange, at: node.mark, path: mapping.path("current_stage"),
                    "stage \(stage) does not exist (stages are numbered from 0; there are \(rollout.stages.count))")
            } else {
                rollout.currentStage = stage
            }
        }
        if let failures = mapping.int("halt_on_failures", .atLeast(1)) { rollout.haltOnFailures = failures }
        return rollout
    }

    // MARK: - inventory.yaml

    private static func decodeInventory(_ decoder: ConfigDecoder) -> [String: [String: String]] {
        guard let root = decoder.rootMapping(allowedKeys: nil) else { return [:] }
        var inventory: [String: [String: String]] = [:]
        for entry in root.entries {
            guard let labels = decoder.mapping(entry.value, at: root.path(entry.name), allowedKeys: nil) else { continue }
            var values: [String: String] = [:]
            for label in labels.entries {
                if let value = decoder.string(label.value, at: labels.path(label.name), allowEmpty: true) {
                    values[label.name] = value
                }
            }
            inventory[entry.name] = values
        }
        return inventory
    }

    // MARK: - Assignment

    /// The stable bucket of `agent` in rollout `rollout`: the first 8 bytes of sha256(rollout + "\n" + agent),
    /// big-endian, mod 10 000.
    static func bucket(rollout: String, agent: String) -> Int {
        let digest = SHA256Digest(of: Array((rollout + "\n" + agent).utf8))
        var value: UInt64 = 0
        for byte in digest.bytes.prefix(8) { value = value << 8 | UInt64(byte) }
        return Int(value % 10_000)
    }

    /// Whether `agent` is in one of the active stages of `rule`'s rollout.
    static func inActiveStage(_ rule: AssignmentRule, _ rollout: Rollout, agent: String, labels: [String: String]) -> Bool {
        for stage in rollout.stages.prefix(rollout.currentStage + 1) {
            switch stage {
            case .labels(let selector):
                if Audience(agent: "*", labels: selector).includes(agentID: agent, labels: labels) { return true }
            case .basisPoints(let limit):
                if bucket(rollout: rule.name, agent: agent) < limit { return true }
            }
        }
        return false
    }
}
