import Foundation
import Testing
import UplinkCollector
import UplinkConfig

/// Each sink kind's folder holds its keys, decoding, documentation and example (`SinkKindConfig`); these tests keep
/// docs/configuration.md, examples.yaml and the decoders in step with them, as `SourceKindDocumentationTests` does
/// for the source kinds.
///
/// After changing a kind, `UPLINK_WRITE_GENERATED_DOCS=1 swift test --filter SinkDocumentationTests` rewrites the
/// generated parts of both files.
@Suite("sink kinds: documentation, examples and decoders agree")
struct SinkDocumentationTests {
    static let rewrite = ProcessInfo.processInfo.environment["UPLINK_WRITE_GENERATED_DOCS"] == "1"
    static let repositoryRoot = URL(fileURLWithPath: #filePath).deletingLastPathComponent().deletingLastPathComponent()
        .deletingLastPathComponent().path
    static let kindNames = SinkRegistry.kinds.map { $0.typeName }

    /// Checks (or, with `UPLINK_WRITE_GENERATED_DOCS=1`, rewrites) the generated part of the file at `path`.
    private func checkGeneratedPart(of path: String, markers: (begin: String, end: String), expected: String) {
        let problem = GeneratedDocumentation.checkGeneratedPart(
            ofFileAt: path, markers: markers, expected: expected, rewrite: Self.rewrite,
            command: "UPLINK_WRITE_GENERATED_DOCS=1 swift test --filter SinkDocumentationTests")
        if let problem { Issue.record(Comment(rawValue: problem)) }
    }

    private static func kind(_ name: String) throws -> any SinkKindConfig.Type {
        try #require(SinkRegistry.kind(named: name))
    }

    @Test("docs/configuration.md holds every sink kind's section as assembled from the kinds")
    func configurationReference() throws {
        checkGeneratedPart(
            of: Self.repositoryRoot + "/docs/configuration.md", markers: SinkDocumentation.markdownMarkers,
            expected: SinkDocumentation.markdown())
    }

    @Test("examples.yaml holds every sink kind's example as assembled from the kinds")
    func examplesFile() throws {
        checkGeneratedPart(
            of: Self.repositoryRoot + "/examples.yaml", markers: SinkDocumentation.exampleMarkers,
            expected: SinkDocumentation.examples())
    }

    @Test("the examples, uncommented, decode without issues to one sink of each kind")
    func examplesDecode() throws {
        let (collector, issues) = decodeCollectorSection(SinkDocumentation.exampleSection())
        #expect(issues == [])
        #expect(collector?.sinks?.map(\.typeName) == Self.kindNames)
    }

    @Test("each kind's example mentions every key of the kind", arguments: kindNames)
    func exampleMentionsEveryKey(name: String) throws {
        let kind = try Self.kind(name)
        for key in kind.keys {
            #expect(kind.example.contains(key.name + ":"), "the example of \(name) does not mention \(key.name)")
        }
    }

    @Test("the decoder reads every documented key: a value of the wrong shape is reported at it", arguments: kindNames)
    func decoderReadsEveryDocumentedKey(name: String) throws {
        let kind = try Self.kind(name)
        for key in SinkConfiguration.commonKeys.map(\.name).filter({ $0 != "name" && $0 != "type" }) + kind.keys.map(\.name) {
            let url = key == "url" || !kind.keys.contains { $0.name == "url" } ? "" : "url: \"http://h:1\", "
            let yaml = "collector:\n  sinks:\n    - { name: x, type: \(name), \(url)\(key): [[{}]] }\n"
            let path = "collector.sinks[0].\(key)"
            let issues = decodeCollectorSection(yaml).issues
            #expect(issues.contains { $0.contains(" \(path): ") || $0.contains(" \(path)[") }, "decoding \(name) does not read \(key): \(issues)")
        }
    }

    @Test("a key of another kind is refused, naming the allowed ones", arguments: kindNames)
    func otherKindsKeysAreRefused(name: String) throws {
        let kind = try Self.kind(name)
        let foreign = SinkRegistry.kinds.flatMap { $0.keys }.map(\.name).first { key in !kind.keys.contains { $0.name == key } }
        guard let foreign else { return }
        let url = kind.keys.contains { $0.name == "url" } ? "url: \"http://h:1\", " : ""
        let yaml = "collector:\n  sinks:\n    - { name: x, type: \(name), \(url)\(foreign): y }\n"
        #expect(decodeCollectorSection(yaml).issues.contains { $0.contains("unknown key '\(foreign)'") })
    }

    @Test("a sink built in code is checked as the decoder checks a file")
    func codeBuiltSinksAreChecked() {
        let problems = [
            ClickHouseSinkConfig(url: "http://h:8123", table: "drop table").problem(),
            HTTPSinkConfig(url: "ftp://h/").problem(),
            VictoriaMetricsSinkConfig(url: "http://h:8428").problem(),
        ]
        #expect(problems[0]?.contains("'drop table' is not a plain identifier") == true)
        #expect(problems[1]?.contains("http:// or https://") == true)
        #expect(problems[2] == nil)
    }
}
