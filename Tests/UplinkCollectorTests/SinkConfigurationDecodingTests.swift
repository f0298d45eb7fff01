import Foundation
import Testing
import UplinkCollector
import UplinkConfig
import UplinkCore
import UplinkTestSupport

/// Decodes the `collector` section of `yaml` (the file `test.yaml`, or `file`) as UplinkCollector does; the issues
/// rendered as `uplink validate` prints them.
func decodeCollectorSection(_ yaml: String, file: String = "test.yaml") -> (collector: CollectorConfiguration?, issues: [String]) {
    let decoder = ConfigDecoder(document: ConfigDocument.parse(yaml, file: file, environment: [:]))
    let collector = decoder.rootMapping(allowedKeys: ["collector"])?.mapping("collector", allowedKeys: nil)
        .map(CollectorConfiguration.decode)
    return (collector, decoder.issues.map(\.description))
}

@Suite("collector.sinks, retention and log")
struct SinkConfigurationDecodingTests {
    @Test func sinksOfEveryTypeDecode() throws {
        let directory = try TestDirectories.make("sinks")
        defer { try? FileManager.default.removeItem(atPath: directory) }
        try "s3cret\n".write(toFile: directory + "/ch-password", atomically: true, encoding: .utf8)
        let (collector, issues) = decodeCollectorSection("""
            collector:
              sinks:
                - { name: vm, type: victoriametrics, url: "http://127.0.0.1:8428", batch_max_bytes: 64KiB, batch_linger: 200ms,
                    backoff: { initial: 1s, max: 10s }, timeout: 5s, headers: { X-Scope: fleet } }
                - { name: ch, type: clickhouse, url: "http://127.0.0.1:8123", database: logs_db, table: lines,
                    metrics_table: samples, user: uplink, password_file: ch-password, create_table: false, compression: gzip }
                - { name: file, type: jsonl, path: out/records.jsonl }
                - { name: print, type: stdout }
                - { name: hook, type: http, url: "https://ingest.example/v1" }
                - { name: vm2, type: victoriametrics, url: "http://127.0.0.1:8428", compression: none }
              retention: { max_bytes: 2GiB, max_age: 48h }
              log: { segment_bytes: 8MiB, segment_age: 10m }
            """, file: directory + "/c.yaml")
        #expect(issues == [])
        let configuration = try #require(collector)
        let sinks = try #require(configuration.sinks)
        #expect(sinks.map(\.name) == ["vm", "ch", "file", "print", "hook", "vm2"])
        #expect(sinks.map(\.typeName) == ["victoriametrics", "clickhouse", "jsonl", "stdout", "http", "victoriametrics"])
        let vm = sinks[0]
        #expect(vm.batchMaxBytes == 64 << 10 && vm.batchLinger == .milliseconds(200) && vm.timeout == .seconds(5))
        #expect(vm.backoff.initial == .seconds(1) && vm.backoff.maximum == .seconds(10))
        // Unset: the kind's default; set: as given.
        #expect(
            vm.kind.isEqual(to: VictoriaMetricsSinkConfig(
                url: "http://127.0.0.1:8428", headers: [SinkHeader(name: "X-Scope", value: "fleet")], compression: .gzip)))
        #expect(sinks[5].kind.isEqual(to: VictoriaMetricsSinkConfig(url: "http://127.0.0.1:8428", compression: .none)))
        #expect(sinks[1].kind.isEqual(to: ClickHouseSinkConfig(
            url: "http://127.0.0.1:8123", compression: .gzip, database: "logs_db", table: "lines", metricsTable: "samples",
            user: "uplink", password: "s3cret", createTable: false)))
        #expect(sinks[2].kind.isEqual(to: JSONLSinkConfig(path: directory + "/out/records.jsonl")))
        #expect(sinks[3].kind.isEqual(to: StdoutSinkConfig()))
        #expect(sinks[4].kind.isEqual(to: HTTPSinkConfig(url: "https://ingest.example/v1", compression: .none)))
        #expect(configuration.log == CollectorLogSettings(
            segmentBytes: 8 << 20, segmentAge: .seconds(600), retentionBytes: 2 << 30, retentionAge: .seconds(2 * 86400)))
    }

    @Test func withoutSinksTheCollectorIsUnchanged() throws {
        let (collector, issues) = decodeCollectorSection("collector:\n  stdout: false\n")
        #expect(issues == [])
        #expect(collector?.sinks == nil)
        #expect(collector?.stdoutSink == false)
    }

    @Test func problemsNameTheKey() {
        #expect(decodeCollectorSection("""
            collector:
              stdout: false
              sinks:
                - { name: vm, type: victoriametrics }
                - { name: vm, type: stdout }
                - { name: "a b", type: jsonl }
                - { name: x, type: kafka }
                - { name: ch, type: clickhouse, url: "http://h:8123", table: "drop table", path: /x }
                - { name: y, type: http, url: "ftp://h/" }
                - { name: z, type: victoriametrics, url: "http://h:8428", compression: brotli }
                - { name: f, type: jsonl, compression: gzip }
            """).issues == [
            "test.yaml:2:11: collector.stdout: 'stdout' is not used when 'sinks' is set (hint: add a sink with 'type: stdout' instead)",
            "test.yaml:4:7: collector.sinks[0].url: missing required key 'url' (hint: the store's URL, e.g. 'http://127.0.0.1:8428')",
            "test.yaml:5:15: collector.sinks[1].name: duplicate sink name 'vm' (first used by collector.sinks[0] at line 4) (hint: sink names must be unique)",
            "test.yaml:6:15: collector.sinks[2].name: invalid sink name 'a b' (hint: 1-64 characters of A-Z a-z 0-9 . _ -)",
            "test.yaml:7:24: collector.sinks[3].type: invalid value 'kafka' (hint: allowed values: jsonl, stdout, victoriametrics, clickhouse, http)",
            "test.yaml:8:66: collector.sinks[4].table: 'drop table' is not a plain identifier (hint: letters, digits and '_', not starting with a digit)",
            "test.yaml:8:80: collector.sinks[4].path: unknown key 'path' (hint: allowed keys: name, type, batch_max_bytes, batch_linger, backoff, timeout, url, headers, compression, database, table, metrics_table, user, password, password_file, create_table)",
            "test.yaml:9:35: collector.sinks[5].url: invalid URL 'ftp://h/': the scheme must be http or https, not 'ftp' (hint: e.g. 'http://collector.example:4318')",
            "test.yaml:10:76: collector.sinks[6].compression: invalid value 'brotli' (hint: allowed values: gzip, none)",
            "test.yaml:11:31: collector.sinks[7].compression: unknown key 'compression' (hint: allowed keys: name, type, batch_max_bytes, batch_linger, backoff, timeout, path)",
        ])
        #expect(decodeCollectorSection("collector:\n  retention: { max_bytes: 10GiB }\n").issues == [
            "test.yaml:2:14: collector.retention: 'retention' applies to the write-ahead log, which exists only with 'sinks' (hint: add 'sinks', or remove 'retention')"
        ])
    }
}
