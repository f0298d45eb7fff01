import Foundation
import Testing
import UplinkTestSupport

@testable import UplinkObservability

/// Prometheus conventions of the agent's and the collector's `/metrics`: every series has a `# HELP` line, written once
/// in `SeriesCatalog` and said the same way in docs/metrics.md, and `promtool check metrics` finds nothing to lint
/// in what a real agent and collector serve.
@Suite("/metrics follows Prometheus' conventions", .timeLimit(.minutes(3)))
struct MetricsConventionsTests {
    /// A row of docs/metrics.md's series tables.
    struct DocumentedSeries: Equatable, CustomStringConvertible {
        let name: String
        let type: String
        let labels: [String]
        /// The "meaning" cell without the backticks of its code spans: what `# HELP` says.
        let help: String

        var description: String { "\(name) (\(type)): \(help)" }
    }

    /// The rows of the table under `## <section>` in docs/metrics.md.
    static func documentedSeries(section: String) throws -> [DocumentedSeries] {
        let text = try String(contentsOfFile: ObservabilityTests.repository + "/docs/metrics.md", encoding: .utf8)
        let lines = text.split(separator: "\n", omittingEmptySubsequences: false)
        guard let heading = lines.firstIndex(of: "## \(section)"[...]) else { return [] }
        var rows: [DocumentedSeries] = []
        for line in lines[(heading + 1)...] {
            if line.hasPrefix("## ") { break }
            guard line.hasPrefix("| `uplink_") else { continue }
            let cells = line.dropFirst().dropLast().split(separator: "|", omittingEmptySubsequences: false)
                .map { $0.trimmingCharacters(in: .whitespaces) }
            guard cells.count == 4 else {
                Issue.record("docs/metrics.md: a row of \(section) has \(cells.count) cells, not 4: \(line)")
                continue
            }
            let unquoted = cells.map { $0.replacingOccurrences(of: "`", with: "") }
            let labels = unquoted[2].split(separator: ",").map { $0.trimmingCharacters(in: .whitespaces) }
            rows.append(DocumentedSeries(name: unquoted[0], type: unquoted[1], labels: labels, help: unquoted[3]))
        }
        return rows
    }

    @Test("docs/metrics.md's tables list SeriesCatalog's series, in its order, with its types and help texts")
    func documentationAgreesWithTheCatalog() throws {
        for (section, catalog) in [("Agent", SeriesCatalog.agent), ("Collector", SeriesCatalog.collector)] {
            let documented = try Self.documentedSeries(section: section)
            #expect(documented.map(\.name) == catalog.map(\.name), "docs/metrics.md, \(section): names or order differ")
            for series in catalog {
                guard let row = documented.first(where: { $0.name == series.name }) else { continue }
                #expect(row.type == series.kind.rawValue, "\(series.name): docs say \(row.type)")
                #expect(
                    row.help == series.help,
                    "\(series.name): docs/metrics.md says '\(row.help)', SeriesCatalog says '\(series.help)'")
            }
        }
        #expect(Set(SeriesCatalog.all.map(\.name)).count == SeriesCatalog.all.count, "a name is in SeriesCatalog twice")
    }

    @Test("every series of the catalog, made as the agent and collector make it, passes promtool's lint")
    func catalogPassesPromtool() async throws {
        guard TestPromtool.isAvailable else {
            print(TestPromtool.missingMessage)
            return
        }
        // Not the process's exposition (swift-metrics' backend stays unset in tests): the factory is called directly.
        let exposition = MetricsExposition()
        let factory = HelpTextMetricsFactory(registry: exposition.registry)
        for series in SeriesCatalog.all {
            switch series.kind {
            case .counter: _ = factory.makeCounter(label: series.name, dimensions: [])
            case .gauge: _ = factory.makeRecorder(label: series.name, dimensions: [], aggregate: false)
            }
        }
        let text = String(decoding: exposition.render(), as: UTF8.self)
        let result = try await TestPromtool.checkMetrics(text, directory: try Harness.temporaryDirectory("promtool-catalog"))
        #expect(result.status == 0, "promtool exited \(result.status): \(result.output)")
        #expect(result.output.isEmpty, "promtool: \(result.output)")
        #expect(Self.problems(in: text).isEmpty, "\(Self.problems(in: text))")
    }

    @Test("promtool check metrics passes on the /metrics of a collector and of agents that stream, spill and drop")
    func realEndpointsPassPromtool() async throws {
        guard TestPromtool.isAvailable else {
            print(TestPromtool.missingMessage)
            return
        }
        let fleet = try await ObservabilityTests.Fleet(
            "metrics-conventions", streamingBuffer: "{ max_bytes: 1MiB, persist: { max_bytes: 4MiB } }")
        defer { fleet.stop() }

        // Records flowed and were dropped, so the labelled counters exist and have moved.
        let flowed = await eventually(timeout: .seconds(30)) {
            let collector = await Self.scrape(fleet.collectorPort)
            let streaming = await Self.scrape(fleet.streamingPort)
            let cutOff = await Self.scrape(fleet.cutOffPort)
            return Self.value("uplink_collector_records_stored_total", in: collector) > 0
                && Self.value(#"uplink_records_sent_total"#, in: streaming) > 0
                && Self.value(#"uplink_records_dropped_total{source="gen",reason="buffer_full_drop_oldest"}"#, in: cutOff) > 0
                && cutOff.contains(#"uplink_stream_failures_total{reason="transport"}"#)
        }
        #expect(flowed, "collector log: \(fleet.log("collector").suffix(1000))")

        for (name, port) in [
            ("collector", fleet.collectorPort), ("streaming agent", fleet.streamingPort), ("cut-off agent", fleet.cutOffPort),
        ] {
            let text = await Self.scrape(port)
            #expect(text.contains("# TYPE "), "\(name): \(text.prefix(300))")
            let result = try await TestPromtool.checkMetrics(text, directory: fleet.directory)
            #expect(result.status == 0, "\(name): promtool exited \(result.status): \(result.output)")
            #expect(result.output.isEmpty, "\(name): promtool: \(result.output)")
            #expect(Self.problems(in: text).isEmpty, "\(name): \(Self.problems(in: text))")
        }
        // The persistent buffer's series and both kinds of drop labels are among what was checked.
        let streaming = await Self.scrape(fleet.streamingPort)
        #expect(streaming.contains("# TYPE uplink_buffer_disk_written_bytes_total counter"))
        #expect(streaming.contains(#"uplink_records_dropped_total{reason="disk_budget_drop_oldest"}"#))
        #expect(streaming.contains(#"uplink_records_dropped_total{source="gen",reason="buffer_full_drop_oldest"}"#))
    }

    /// What an exposition says that SeriesCatalog and docs/metrics.md do not: a family missing from the catalog, of
    /// another type, without `# HELP` or with another text, or with a label the docs do not name.
    static func problems(in exposition: String) -> [String] {
        var help: [String: String] = [:]
        var type: [String: String] = [:]
        var labels: [String: Set<String>] = [:]
        for line in exposition.split(separator: "\n") {
            if line.hasPrefix("# HELP ") {
                let parts = line.dropFirst(7).split(separator: " ", maxSplits: 1)
                help[String(parts[0])] = parts.count > 1 ? String(parts[1]) : ""
            } else if line.hasPrefix("# TYPE ") {
                let parts = line.dropFirst(7).split(separator: " ")
                type[String(parts[0])] = parts.count > 1 ? String(parts[1]) : ""
            } else if !line.hasPrefix("#"), let brace = line.firstIndex(of: "{") {
                // `name{a="x",b="y"} value`: label values here (sources, reasons, agent ids) hold no `="`.
                let names = line[brace...].split(separator: "=\"").dropLast().map { $0.split(separator: ",").last ?? $0 }
                labels[String(line[..<brace]), default: []].formUnion(names.map { String($0.drop { $0 == "{" }) })
            }
        }
        let documented = ((try? documentedSeries(section: "Agent")) ?? []) + ((try? documentedSeries(section: "Collector")) ?? [])
        var problems: [String] = []
        for (name, kind) in type.sorted(by: { $0.key < $1.key }) {
            guard let series = SeriesCatalog.definition(name) else {
                problems.append("\(name) is not in SeriesCatalog")
                continue
            }
            if kind != series.kind.rawValue { problems.append("\(name) is a \(kind), SeriesCatalog says \(series.kind)") }
            if help[name] != series.help { problems.append("\(name) has HELP '\(help[name] ?? "(none)")'") }
            let allowed = Set(documented.first { $0.name == name }?.labels ?? [])
            let undocumented = (labels[name] ?? []).subtracting(allowed)
            if !undocumented.isEmpty { problems.append("\(name) has labels docs/metrics.md does not name: \(undocumented)") }
        }
        return problems
    }

    /// `/metrics` of the endpoint on `port`; empty when it does not answer.
    static func scrape(_ port: Int) async -> String {
        await DedicatedThreads.blocking.run { ObservabilityTests.get(port, "/metrics")?.text ?? "" }
    }

    /// The value of the sample `series` (a name, with its labels as rendered) in `exposition`; 0 when absent.
    static func value(_ series: String, in exposition: String) -> Double {
        for line in exposition.split(separator: "\n") where line.hasPrefix(series + " ") {
            return Double(line.dropFirst(series.count + 1)) ?? 0
        }
        return 0
    }
}
