import Testing
import UplinkAgent
import UplinkConfig
import UplinkCore

/// Each invalid configuration must be reported with the exact file, line, column, key path and message.
@Suite("Invalid configurations")
struct InvalidConfigurationTests {
    // MARK: Syntax

    @Test func unclosedFlowSequence() {
        #expect(issues("""
            uplink:
              url: http://collector.test:4318
            sources: [cpu, memory
            """) == [
                "test.yaml:4:1: invalid YAML: did not find expected ',' or ']' (while parsing a flow sequence at line 3, column 10)"
            ])
    }

    @Test func tabIndentation() {
        #expect(issues("uplink:\n\turl: embedded\nsources: []\n") == [
            "test.yaml:2:1: invalid YAML: found character that cannot start any token (while scanning for the next token at line 2, column 1) (hint: YAML does not allow tabs for indentation; indent with spaces)"
        ])
    }

    @Test func unquotedColonInValue() {
        #expect(issues("""
            uplink:
              url: embedded
              token: abc: def
            """) == [
                "test.yaml:3:13: invalid YAML: mapping values are not allowed in this context (hint: quote values that contain ': ', e.g. \"a: b\")"
            ])
    }

    @Test func emptyDocument() {
        #expect(issues("# nothing here\n") == [
            "test.yaml:1:1: the configuration is empty (hint: an agent needs 'uplink' and 'sources', a collector 'collector'; see examples.yaml)"
        ])
    }

    @Test func rootIsNotAMapping() {
        #expect(issues("- uplink\n- sources\n") == ["test.yaml:1:1: expected a mapping of keys to values, got a list"])
    }

    @Test func duplicateKeys() {
        #expect(issues("""
            uplink:
              url: embedded
              heartbeat: 10s
              heartbeat: 20s
            sources: [{ name: cpu, type: cpu }]
            """) == [
                "test.yaml:4:3: uplink.heartbeat: duplicate key 'heartbeat' (first set at line 3, column 3) (hint: remove one of the two)"
            ])
    }

    // MARK: Types

    @Test func listExpected() {
        #expect(issues("""
            uplink:
              url: embedded
            sources: cpu
            """) == ["test.yaml:3:10: sources: expected a list, got 'cpu'"])
    }

    @Test func mappingExpected() {
        #expect(issues("""
            uplink: [embedded]
            sources:
              - cpu
            """) == [
                "test.yaml:1:9: uplink: expected a mapping of keys to values, got a list",
                "test.yaml:3:5: sources[0]: expected a mapping of keys to values, got 'cpu'",
            ])
    }

    @Test func booleansAreStrict() {
        #expect(issues(minimalAgent + "\n    per_core: maybe\ncollector:\n  stdout: yes\n") == [
            "test.yaml:6:15: sources[0].per_core: expected true or false, got 'maybe'",
            "test.yaml:8:11: collector.stdout: expected true or false, got 'yes' (hint: write true or false; YAML 1.1 spellings such as yes, no, on and off are not accepted)",
        ])
    }

    @Test func numbersAreChecked() {
        #expect(issues("""
            uplink:
              url: embedded
            sources:
              - name: gen
                type: generator
                rate: fast
                count: 1.5
            """) == [
                "test.yaml:6:11: sources[0].rate: expected a number, got 'fast'",
                "test.yaml:7:12: sources[0].count: expected an integer, got '1.5'",
            ])
    }

    // MARK: Missing keys

    @Test func missingURL() {
        #expect(issues("""
            uplink:
              token: abc
            sources:
              - name: cpu
                type: cpu
            """) == [
                "test.yaml:2:3: uplink.url: missing required key 'url' (hint: use 'embedded' for an in-process collector, or the collector's URL such as 'http://host:4318')"
            ])
    }

    @Test func urlWithoutValue() {
        #expect(issues("""
            uplink:
              url:
              heartbeat: 5s
            sources: [{ name: cpu, type: cpu }]
            """) == [
                "test.yaml:2:7: uplink.url: 'url' needs a value (hint: use 'embedded' for an in-process collector, or the collector's URL such as 'http://host:4318')"
            ])
    }

    @Test func missingNameAndType() {
        #expect(issues("""
            uplink:
              url: embedded
            sources:
              - type: cpu
                interval: 5s
              - name: memory
                interval: 5s
            """) == [
                "test.yaml:4:5: sources[0].name: missing required key 'name' (hint: every source needs a unique name, e.g. 'name: cpu')",
                "test.yaml:6:5: sources[1].type: missing required key 'type' (hint: known types: cpu, memory, generator, load, uptime, network, diskio, disk, thermal, hwmon, power, sysfs, exec, tail, journald)",
            ])
    }

    @Test func missingSections() {
        #expect(issues("agent:\n  id: a\n") == [
            "test.yaml:1:1: uplink: missing required key 'uplink' (hint: add 'uplink: { url: embedded }' for an in-process collector, or give the collector's URL)",
            "test.yaml:1:1: sources: missing required key 'sources' (hint: add at least one source, e.g. 'sources: [{ name: cpu, type: cpu }]')",
        ])
    }

    @Test func emptySourceList() {
        #expect(issues("uplink: { url: embedded }\nsources: []\n") == [
            "test.yaml:2:10: sources: at least one source is required (hint: e.g. 'sources: [{ name: cpu, type: cpu }]')"
        ])
    }

    // MARK: Unknown keys and values

    @Test func unknownTopLevelKey() {
        #expect(issues(minimalAgent + "\nbufer:\n  max_bytes: 1MiB\n") == [
            "test.yaml:6:1: bufer: unknown key 'bufer' (hint: did you mean 'buffer'? allowed keys: agent, buffer, uplink, sources, remote_config, collector)"
        ])
    }

    @Test func unknownKeyInSection() {
        #expect(issues("""
            uplink:
              url: embedded
              heartbeet: 10s
            sources: [{ name: cpu, type: cpu }]
            buffer:
              colour: red
            """) == [
                "test.yaml:3:3: uplink.heartbeet: unknown key 'heartbeet' (hint: did you mean 'heartbeat'? allowed keys: url, token, token_file, backoff, heartbeat, stall_timeout, connect_timeout, stream_buffer, linger, drain_timeout, tls, proxy, compression)",
                "test.yaml:6:3: buffer.colour: unknown key 'colour' (hint: allowed keys: max_bytes, overflow, persist)",
            ])
    }

    @Test func unknownKeyInSource() {
        #expect(issues("""
            uplink:
              url: embedded
            sources:
              - name: cpu
                type: cpu
                intervall: 5s
              - name: memory
                type: memory
                per_core: true
            """) == [
                "test.yaml:6:5: sources[0].intervall: unknown key 'intervall' (hint: did you mean 'interval'? allowed keys: name, type, interval, jitter, tags, per_core, proc_root)",
                "test.yaml:9:5: sources[1].per_core: unknown key 'per_core' (hint: allowed keys: name, type, interval, jitter, tags, proc_root)",
            ])
    }

    @Test func unknownSourceType() {
        #expect(issues("""
            uplink:
              url: embedded
            sources:
              - name: cpu
                type: cpus
              - name: smart
                type: smartctl
                path: /
            """) == [
                "test.yaml:5:11: sources[0].type: unknown source type 'cpus' (hint: did you mean 'cpu'? known types: cpu, memory, generator, load, uptime, network, diskio, disk, thermal, hwmon, power, sysfs, exec, tail, journald)",
                "test.yaml:7:11: sources[1].type: unknown source type 'smartctl' (hint: known types: cpu, memory, generator, load, uptime, network, diskio, disk, thermal, hwmon, power, sysfs, exec, tail, journald)",
            ])
    }

    @Test func unknownEnumValue() {
        #expect(issues(minimalAgent + "\nbuffer:\n  overflow: drop_old\n") == [
            "test.yaml:7:13: buffer.overflow: invalid value 'drop_old' (hint: did you mean 'drop_oldest'? allowed values: drop_oldest, drop_newest)"
        ])
    }

    // MARK: Invalid values

    @Test func durationWithoutUnit() {
        #expect(issues(minimalAgent + "\n    interval: 10\n") == [
            "test.yaml:6:15: sources[0].interval: invalid duration '10': a unit is required (hint: write '10s' for seconds or '10ms' for milliseconds; units: ns, us, ms, s, m, h)"
        ])
    }

    @Test func durationWithUnknownUnit() {
        #expect(issues("""
            uplink:
              url: embedded
              drain_timeout: 10sec
            sources: [{ name: cpu, type: cpu }]
            """) == [
                "test.yaml:3:18: uplink.drain_timeout: invalid duration '10sec': unknown unit 'sec' (hint: did you mean 's'? units: ns, us, ms, s, m, h)"
            ])
    }

    @Test func invalidSizes() {
        #expect(issues(minimalAgent + "\nbuffer:\n  max_bytes: 64kb\ncollector:\n  max_line_bytes: lots\n") == [
            "test.yaml:7:14: buffer.max_bytes: invalid size '64kb': unknown unit 'kb' (hint: did you mean 'KiB' (1024-based) or 'KB' (1000-based)? units: B, KB, MB, GB, TB, KiB, MiB, GiB, TiB)",
            "test.yaml:9:19: collector.max_line_bytes: invalid size 'lots': expected a number of bytes, optionally followed by a unit (hint: e.g. '512B', '64KiB', '16MiB' or '1GB')",
        ])
    }

    @Test func invalidURLs() {
        let template = "uplink:\n  url: URL\nsources: [{ name: cpu, type: cpu }]\n"
        let cases = [
            ("ftp://collector.test", "invalid URL 'ftp://collector.test': the scheme must be http or https, not 'ftp' (hint: e.g. 'http://collector.example:4318', or 'embedded')"),
            ("collector.test:4318", "invalid URL 'collector.test:4318': expected http:// or https:// followed by a host (hint: e.g. 'http://collector.example:4318', or 'embedded')"),
            ("http://:4318", "invalid URL 'http://:4318': the host is missing (hint: e.g. 'http://collector.example:4318', or 'embedded')"),
            ("http://collector.test:99999", "invalid URL 'http://collector.test:99999': the port must be a number from 1 to 65535, not '99999'"),
            ("http://user:pw@collector.test", "invalid URL 'http://user:pw@collector.test': credentials in the URL are not supported (hint: use 'token' or 'token_file')"),
            ("http://collector.test/?x=1", "invalid URL 'http://collector.test/?x=1': query strings and fragments are not supported (hint: give the collector's base URL; uplink appends /v1/stream)"),
        ]
        for (url, message) in cases {
            #expect(issues(template.replacing("URL", with: url)) == ["test.yaml:2:8: uplink.url: " + message])
        }
    }

    @Test func invalidListenAddress() {
        #expect(issues("collector:\n  listen: 127.0.0.1:70000\n") == [
            "test.yaml:2:11: collector.listen: invalid address '127.0.0.1:70000': the port must be a number from 0 to 65535, not '70000' (hint: write host:port, e.g. '127.0.0.1:4318', '0.0.0.0:4318' or '[::1]:4318')"
        ])
    }

    @Test func invalidNames() {
        #expect(issues("""
            agent:
              id: edge box
            uplink:
              url: embedded
            sources:
              - name: my cpu
                type: cpu
            """) == [
                "test.yaml:2:7: agent.id: the agent id 'edge box' contains whitespace or control characters",
                "test.yaml:6:11: sources[0].name: invalid source name 'my cpu' (hint: use letters, digits, '.', '_' and '-')",
            ])
    }

    @Test func duplicateSourceNames() {
        #expect(issues("""
            uplink:
              url: embedded
            sources:
              - name: cpu
                type: cpu
              - name: memory
                type: memory
              - name: cpu
                type: memory
            """) == [
                "test.yaml:8:11: sources[2].name: duplicate source name 'cpu' (first used by sources[0] at line 4) (hint: source names must be unique)"
            ])
    }

    // MARK: Ranges

    @Test func outOfRangeValues() {
        #expect(issues("""
            buffer:
              max_bytes: 1KiB
            uplink:
              url: embedded
              stream_buffer: 512
              stall_timeout: 0s
            sources:
              - name: cpu
                type: cpu
                interval: 0ms
              - name: gen
                type: generator
                rate: -1
                record_bytes: 2MiB
                count: -5
            """) == [
                "test.yaml:2:14: buffer.max_bytes: '1KiB' is too small: the minimum is 4KiB",
                "test.yaml:5:18: uplink.stream_buffer: '512' is too small: the minimum is 1KiB",
                "test.yaml:6:18: uplink.stall_timeout: '0s' is too small: it must be greater than 0s",
                "test.yaml:10:15: sources[0].interval: '0ms' is too small: it must be greater than 0s",
                "test.yaml:13:11: sources[1].rate: '-1' is too small: the minimum is 0",
                "test.yaml:14:19: sources[1].record_bytes: '2MiB' is out of range: it must be between 0B and 1MiB",
                "test.yaml:15:12: sources[1].count: '-5' is too small: the minimum is 0",
            ])
    }

    @Test func backoffRanges() {
        #expect(issues("""
            uplink:
              url: embedded
              backoff:
                initial: 5s
                multiplier: 0.5
                max: 1s
            sources: [{ name: cpu, type: cpu }]
            """) == [
                "test.yaml:5:17: uplink.backoff.multiplier: '0.5' is too small: the minimum is 1",
                "test.yaml:6:10: uplink.backoff.max: 'max' (1s) must not be smaller than 'initial' (5s)",
            ])
        #expect(issues("""
            uplink:
              url: embedded
              backoff: { initial: 1m }
            sources: [{ name: cpu, type: cpu }]
            """) == [
                "test.yaml:3:23: uplink.backoff.initial: 'max' (30s, the default) must not be smaller than 'initial' (1m)"
            ])
    }

    // MARK: Secrets and environment

    @Test func unreadableTokenFile() {
        let file = fixture("inline.yaml")
        let yaml = """
            uplink:
              url: embedded
              token_file: missing.token
            sources: [{ name: cpu, type: cpu }]
            collector:
              token_file: .
            """
        #expect(issues(yaml, file: file) == [
            "\(file):3:15: uplink.token_file: cannot read '\(fixturesDirectory)/missing.token': No such file or directory",
            "\(file):6:15: collector.token_file: cannot read '\(fixturesDirectory)/.': Is a directory",
        ])
    }

    @Test func emptyTokenFileAndBothTokenKinds() {
        let file = fixture("inline.yaml")
        let yaml = """
            uplink:
              url: embedded
              token_file: empty.token
            sources: [{ name: cpu, type: cpu }]
            collector:
              token_file: collector.token
              token: inline
            """
        #expect(issues(yaml, file: file) == [
            "\(file):3:15: uplink.token_file: '\(fixturesDirectory)/empty.token' is empty",
            "\(file):7:10: collector.token: 'token' and 'token_file' are both set (hint: keep only one of them)",
        ])
    }

    @Test func unsetEnvironmentVariable() {
        #expect(issues("""
            uplink:
              url: ${COLLECTOR_URL}
              token: ${TOKEN:-}
            sources:
              - name: cpu
                type: cpu
                interval: ${INTERVAL}
            """, environment: ["INTERVAL": "5s"]) == [
                "test.yaml:2:8: uplink.url: environment variable 'COLLECTOR_URL' is not set (hint: set it, or give a default: '${COLLECTOR_URL:-default}')"
            ])
    }

    @Test func substitutedValuesAreValidated() {
        #expect(issues(minimalAgent + "\n    interval: ${INTERVAL:-10}\n", environment: [:]) == [
            "test.yaml:6:15: sources[0].interval: invalid duration '10': a unit is required (hint: write '10s' for seconds or '10ms' for milliseconds; units: ns, us, ms, s, m, h)"
        ])
    }

    // MARK: Many at once

    @Test func everyIssueIsReportedInDocumentOrder() {
        let path = fixture("many-issues.yaml")
        let result = load(path: path, environment: [:])
        #expect(result.value == nil)
        #expect(result.issues.map(\.description) == [
            "\(path):3:7: agent.id: the agent id 'edge 7' contains whitespace or control characters",
            "\(path):4:1: bufer: unknown key 'bufer' (hint: did you mean 'buffer'? allowed keys: agent, buffer, uplink, sources, remote_config, collector)",
            "\(path):7:8: uplink.url: invalid URL 'ftp://collector.test': the scheme must be http or https, not 'ftp' (hint: e.g. 'http://collector.example:4318', or 'embedded')",
            "\(path):8:14: uplink.heartbeat: invalid duration '15': a unit is required (hint: write '15s' for seconds or '15ms' for milliseconds; units: ns, us, ms, s, m, h)",
            "\(path):10:17: uplink.backoff.multiplier: '0.5' is too small: the minimum is 1",
            "\(path):14:5: sources[0].intervall: unknown key 'intervall' (hint: did you mean 'interval'? allowed keys: name, type, interval, jitter, tags, per_core, proc_root)",
            "\(path):15:11: sources[1].name: duplicate source name 'cpu' (first used by sources[0] at line 12) (hint: source names must be unique)",
            "\(path):16:11: sources[1].type: unknown source type 'memroy' (hint: did you mean 'memory'? known types: cpu, memory, generator, load, uptime, network, diskio, disk, thermal, hwmon, power, sysfs, exec, tail, journald)",
            "\(path):17:5: sources[2].name: missing required key 'name' (hint: every source needs a unique name, e.g. 'name: cpu')",
            "\(path):18:11: sources[2].rate: expected a number, got 'fast'",
            "\(path):20:11: collector.listen: invalid address 'localhost': the port is missing (hint: write host:port, e.g. '127.0.0.1:4318', '0.0.0.0:4318' or '[::1]:4318')",
        ])
        #expect(result.issues.map(\.code) == [
            .invalidValue, .unknownKey, .invalidValue, .invalidValue, .outOfRange, .unknownKey, .duplicateName,
            .invalidValue, .missingKey, .wrongType, .invalidValue,
        ])
    }

    @Test func unreadableConfigurationFile() throws {
        let result = load(path: "/nonexistent/uplink.yaml", environment: [:])
        #expect(result.issues.map(\.description) == [
            "/nonexistent/uplink.yaml: cannot read the configuration file: No such file or directory"
        ])
        #expect(throws: ConfigIssues.self) { try result.get() }
    }
}
