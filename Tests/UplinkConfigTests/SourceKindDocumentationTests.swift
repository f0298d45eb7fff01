import Foundation
import Testing
import UplinkAgent
import UplinkConfig
import UplinkSources

/// Each source kind's folder holds its keys, decoding, documentation and example (`SourceKindConfig`); these tests
/// keep docs/configuration.md, examples.yaml and the decoders in step with them.
///
/// After changing a kind, `UPLINK_WRITE_GENERATED_DOCS=1 swift test --filter SourceKindDocumentationTests` rewrites
/// the generated parts of both files.
@Suite("source kinds: documentation, examples and decoders agree")
struct SourceKindDocumentationTests {
    static let rewrite = ProcessInfo.processInfo.environment["UPLINK_WRITE_GENERATED_DOCS"] == "1"

    /// Checks (or, with `UPLINK_WRITE_GENERATED_DOCS=1`, rewrites) the generated part of the file at `path`.
    private func checkGeneratedPart(of path: String, markers: (begin: String, end: String), expected: String) {
        let problem = GeneratedDocumentation.checkGeneratedPart(
            ofFileAt: path, markers: markers, expected: expected, rewrite: Self.rewrite,
            command: "UPLINK_WRITE_GENERATED_DOCS=1 swift test --filter SourceKindDocumentationTests")
        if let problem { Issue.record(Comment(rawValue: problem)) }
    }

    @Test("docs/configuration.md holds every kind's section as assembled from the kinds")
    func configurationReference() throws {
        checkGeneratedPart(
            of: repositoryRoot + "/docs/configuration.md", markers: SourceKindDocumentation.markdownMarkers,
            expected: SourceKindDocumentation.markdown())
    }

    @Test("examples.yaml holds every kind's example as assembled from the kinds")
    func examplesFile() throws {
        checkGeneratedPart(
            of: repositoryRoot + "/examples.yaml", markers: SourceKindDocumentation.exampleMarkers,
            expected: SourceKindDocumentation.examples())
    }

    @Test("each kind's example decodes without issues to a source of that kind", arguments: SourceKind.allCases)
    func exampleDecodes(kind: SourceKind) throws {
        let example = kind.configType.example
        let result = decode("uplink: { url: embedded }\nsources:\n" + example)
        #expect(result.issues.map(\.description) == [])
        let sources = try result.get().sources
        #expect(sources.map(\.config.kind) == [kind])
    }

    @Test("each kind's example mentions every key of the kind", arguments: SourceKind.allCases)
    func exampleMentionsEveryKey(kind: SourceKind) {
        let example = kind.configType.example
        for key in kind.configType.keys where !(kind.isSensor && SensorSchedule.keys.contains(key)) {
            let leaf = key.name.split(separator: ".").last.map(String.init) ?? key.name
            #expect(example.contains(leaf + ":"), "the example of \(kind) does not mention \(key.name)")
        }
    }

    @Test("the decoder reads every documented key: a value of the wrong shape is reported at it", arguments: SourceKind.allCases)
    func decoderReadsEveryDocumentedKey(kind: SourceKind) {
        for key in kind.configType.keys {
            // `a.b` becomes `a: { b: … }`; a list of a list of a mapping is the wrong shape for every key.
            let parts = key.name.split(separator: ".").map(String.init)
            var value = "[[{}]]"
            for part in parts.dropFirst().reversed() { value = "{ \(part): \(value) }" }
            let yaml = "uplink: { url: embedded }\nsources:\n  - { name: x, type: \(kind.typeName), \(parts[0]): \(value) }\n"
            let path = "sources[0]." + key.name
            let reported = decode(yaml).issues.contains { issue in
                issue.keyPath == path || issue.keyPath.hasPrefix(path + "[") || issue.keyPath.hasPrefix(path + ".")
            }
            #expect(reported, "decoding \(kind) does not read \(key.name)")
        }
    }

    @Test("the allowed keys are the documented ones, each once, in order")
    func allowedKeys() {
        #expect(CPUConfig.allowedKeys == ["interval", "jitter", "tags", "per_core", "proc_root"])
        #expect(TailConfig.allowedKeys.last == "checkpoint_interval")
        #expect(TailConfig.allowedKeys.filter { $0 == "multiline" }.count == 1)
        for kind in SourceKind.allCases {
            #expect(Set(kind.configType.keys.map(\.topLevelName)) == Set(kind.configType.allowedKeys))
            #expect(kind.isSensor == kind.configType.keys.starts(with: SensorSchedule.keys), "\(kind)")
        }
    }
}
