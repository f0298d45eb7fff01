import Foundation
import Testing
import UplinkAgent
import UplinkConfig
import UplinkCore

@Suite("collector.sinks, retention and log")
struct CollectorSinksConfigTests {
    @Test func sinksOfEveryTypeDecode() throws {
        let directory = FileManager.default.temporaryDirectory.appendingPathComponent("sinks-\(UUID().uuidString)").path
        try FileManager.default.createDirectory(atPath: directory, withIntermediateDirectories: true)
        defer { try? FileManager.default.removeItem(atPath: directory) }
        try "s3cret\n".write(toFile: directory + "/ch-password", atomically: true, encoding: .utf8)
        let result = decode("""
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
        #expect(result.issues.map(\.description) == [])
        let forwarding = try #require(try result.get().collector?.forwarding)
        #expect(forwarding.sinks.map(\.name) == ["vm", "ch", "file", "print", "hook", "vm2"])
        #expect(forwarding.sinks.map(\.kind) == [.victoriametrics, .clickhouse, .jsonl, .stdout, .http, .victoriametrics])
        // Unset: the kind's default (applied by the collector); set: as given.
        #expect(forwarding.sinks.map(\.compression) == [nil, .gzip, nil, nil, nil, UplinkFile.CollectorSection.SinkSection.Compression.none])
        let vm = forwarding.sinks[0]
        #expect(vm.batchMaxBytes == 64 << 10 && vm.batchLinger == .milliseconds(200) && vm.timeout == .seconds(5))
        #expect(vm.backoff.initial == .seconds(1) && vm.backoff.maximum == .seconds(10))
        #expect(vm.headers.map(\.name) == ["X-Scope"] && vm.headers.map(\.value) == ["fleet"])
        let ch = forwarding.sinks[1]
        #expect(ch.database == "logs_db" && ch.table == "lines" && ch.metricsTable == "samples")
        #expect(ch.user == "uplink" && ch.password == "s3cret" && !ch.createTable)
        #expect(forwarding.sinks[2].path == directory + "/out/records.jsonl")
        #expect(forwarding.retentionBytes == 2 << 30 && forwarding.retentionAge == .seconds(2 * 86400))
        #expect(forwarding.segmentBytes == 8 << 20 && forwarding.segmentAge == .seconds(600))
    }

    @Test func withoutSinksTheCollectorIsUnchanged() throws {
        let file = try decode("collector:\n  stdout: false\n").get()
        #expect(file.collector?.forwarding == nil)
    }

    @Test func problemsNameTheKey() {
        #expect(issues("""
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
            """) == [
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
        #expect(issues("collector:\n  retention: { max_bytes: 10GiB }\n") == [
            "test.yaml:2:14: collector.retention: 'retention' applies to the write-ahead log, which exists only with 'sinks' (hint: add 'sinks', or remove 'retention')"
        ])
    }
}
