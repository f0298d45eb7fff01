import NIOCore
import UplinkWire

extension FuzzTarget {
    /// Starting inputs: valid and nearly valid examples of what the target reads.
    public var seeds: [[UInt8]] {
        switch self {
        case .wireLine:
            return Self.wireLines.map { Array($0.utf8) }
        case .lineSplitter:
            return [
                [8, 1] + Array("a\nbb\r\nccc\n\n\r\nlonger than eight\npartial".utf8),
                [0, 7] + Array("\n\n\r\r\n".utf8), [63, 200] + Array(repeating: UInt8(ascii: "x"), count: 70) + [10],
            ]
        case .streamProcessor:
            let body = Self.wireLines.joined(separator: "\n") + "\n" + Self.hostileLines.joined(separator: "\n")
            return [[3, 0] + Array(body.utf8), [9, 4] + Array((body + "\n").utf8), [1, 5] + Array(Self.hostileLines.joined(separator: "\r\n").utf8)]
        case .ackLine:
            return [
                #"{"resume":0}"#, #"{"ack":41}"#, #" { "ack" : 97 } "#, #"{"ack":9223372036854775807}"#,
                #"{"heartbeat":1700000000000000000}"#, #"{"resume":18446744073709551615}"#, #"{"ack":007}"#,
            ].map { Array($0.utf8) }
        case .streamHeaders:
            return [
                "edge-1\n42\n1\nBearer secret\nsecret", "a.b_c:d-e\n9223372036854775807\n 1\t\nBearer \n",
                "x\n9223372036854775808\n2\nbearer t\nt", "\n0\n\n\n", "é\n-1\n01\nBearer  x\n x",
            ].map { Array($0.utf8) }
        case .config:
            return Self.configs.map { Array($0.utf8) }
        case .remoteDocument:
            return [
                "sources:\n  - { name: app-cpu, type: cpu, interval: 5s }\n  - { name: log, type: tail, paths: [\"/var/log/app/*.log\"] }\n",
                "sources:\n  - name: probe\n    type: exec\n    command: [/usr/local/lib/uplink/probes/read, \"7\"]\n    interval: 30s\n",
                "sources:\n  - { name: j, type: journald, units: [app-web] }\n  - { name: s, type: sysfs, path: /sys/bus/iio/devices/x/in_temp_input }\n",
                "sources:\n  - &a { name: x, type: cpu, tags: { t: \"${HOME}\" } }\n  - *a\nuplink: { token: t }\n",
            ].map { Array($0.utf8) }
        case .configLine:
            let revision = "sha256:" + String(repeating: "0123456789abcdef", count: 4)
            return [
                #"{"config":{"rev":"\#(revision)","generation":17}}"#, #" { "config" : { "generation" : 0 , "rev" : "\#(revision)" } } "#,
                "rev=\(revision), generation=9223372036854775807", #"{"config":{"rev":"sha256:00","generation":1}}"#,
                #"{"config_status":{"desired":"\#(revision)","effective":null,"lkg":"\#(revision)","state":"rolled_back","error":"tail \u00e9: denied","generation":3}}"#,
                #"{"config_status":{"state":"applied"}}"#, #"{"config_status":{"state":"applied","state":"failed"}}"#,
            ].map { Array($0.utf8) }
        case .signedConfig:
            let digest = String(repeating: "ab", count: 32)
            return [
                #"{"alg":"ed25519","audience":{"agent":"edge-*","labels":{"site":"berlin-*"}},"key_id":"ops-2026","name":"modbus","#
                    + #""not_after":"2027-05-27T00:00:00Z","serial":42,"sha256":"\#(digest)","sig":""#
                    + String(repeating: "A", count: 86) + #"==","size":2311}"#,
                #"{"documents":[{"name":"base","sha256":"\#(digest)","sig_sha256":"\#(digest)","sig_size":300,"size":1}],"#
                    + #""generation":17,"rev":"sha256:00","version":1}"#,
                // A document served unsigned (no sig_ keys), beside a signed one.
                #"{"documents":[{"name":"base","sha256":"\#(digest)","sig_sha256":"\#(digest)","sig_size":300,"size":1},"#
                    + #"{"name":"lab","sha256":"\#(digest)","size":2}],"generation":3,"rev":"sha256:00","version":1}"#,
                #"{"documents":[],"generation":0,"rev":"sha256:e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855","version":1}"#,
            ].map { Array($0.utf8) }
        case .decompress:
            // Valid bodies of each encoding (a flush after each line), and the lines themselves as plain text.
            let text = Self.wireLines.joined(separator: "\n") + "\n"
            var seeds: [[UInt8]] = [[0] + Array(text.utf8), [1] + Array(text.utf8)]
            for (selector, encoding) in [(UInt8(2), WireCompression.zstd), (3, .gzip)] {
                guard let compressor = try? StreamCompressor(encoding) else { continue }
                var body = ByteBuffer()
                for line in Self.wireLines { try? compressor.compress(ByteBuffer(string: line + "\n"), flush: true, into: &body) }
                seeds.append([selector] + Array(body.readableBytesView))
            }
            return seeds
        }
    }

    /// Pieces of the target's syntax that mutations insert.
    public var tokens: [[UInt8]] {
        let strings: [String]
        switch self {
        case .wireLine, .streamProcessor, .lineSplitter:
            strings = [
                #""seq":"#, #""ts":"#, #""src":"#, #""metric":"#, #""value":"#, #""unit":"#, #""tags":"#, #""log":"#,
                #""fields":"#, #""origin":"#, #""offset":"#, #""heartbeat":"#, #""config_status":"#, #""state":"applied""#,
                "9223372036854775807", "9223372036854775808",
                "18446744073709551615", "18446744073709551616", "-1", "-0", "1e3", "0.5", "null", "true", "\\u0000",
                "\\ud800", "\\\"", "{", "}", "[", "]", ",", ":", "\n", "\r\n", "\u{FFFD}", "\u{1F600}",
            ]
        case .configLine:
            strings = [
                #""config""#, #""rev""#, #""generation""#, #""config_status""#, #""desired""#, #""effective""#, #""lkg""#,
                #""state""#, #""error""#, #""applied""#, #""rolled_back""#, "sha256:", "rev=", "generation=", ", ", "null",
                "9223372036854775807", "9223372036854775808", "{", "}", ":", ",", " ", "\\u0000",
            ]
        case .signedConfig:
            strings = [
                #""alg""#, #""ed25519""#, #""key_id""#, #""name""#, #""sha256""#, #""size""#, #""serial""#, #""audience""#,
                #""agent""#, #""labels""#, #""not_after""#, #""sig""#, #""documents""#, #""sig_sha256""#, #""sig_size""#,
                #""generation""#, #""rev""#, #""version""#, "sha256:", "2027-02-30T00:00:00Z", "9999-12-31T23:59:59Z",
                "18446744073709551615", "18446744073709551616", "-1", "==", "{", "}", "[", "]", ":", ",", "\\u0000",
            ]
        case .ackLine:
            strings = [#""ack""#, #""resume""#, #""heartbeat""#, ":", "{", "}", " ", "\t", "9223372036854775807", "0", "-"]
        case .streamHeaders:
            strings = ["Bearer ", "\n", "9223372036854775807", "9223372036854775808", "0", "1", " ", "\t", "-", ".", "_", ":"]
        case .decompress:
            // zstd's frame magic, gzip's header, a zstd frame header asking for a 2^31 window, runs of zeros.
            return [[0x28, 0xB5, 0x2F, 0xFD], [0x1F, 0x8B, 0x08, 0x00], [0x28, 0xB5, 0x2F, 0xFD, 0x00, 0xF8], [0, 0, 0, 0, 0, 0, 0, 0]]
        case .remoteDocument:
            strings = [
                "sources:", "uplink:", "remote_config:", "- name: ", "type: ", "tail", "exec", "journald", "sysfs", "generator",
                "paths: ", "units: ", "command: ", "interval: ", "poll_interval: ", "100ms", "${HOME}", "$${", "&a ", "*a", "<<: ",
                "token: ", "/var/log/app/", "/var/log/app/../../etc/shadow", "/etc/shadow", "**", "*", "app-", "sshd",
                "/usr/local/lib/uplink/probes/read", "sh", "-c", "{ ", " }", "[", "]", "\n  ", "\n", "# ", "\"", "'",
            ]
        case .config:
            strings = [
                "agent:", "buffer:", "uplink:", "sources:", "collector:", "max_bytes: ", "overflow: ", "url: ", "- name: ",
                "type: ", "interval: ", "1TiB", "16EiB", "99999999999999999999", "-1", "0s", "720h", "721h", "${UPLINK_FUZZ}",
                "\"\\n\\e\\a\\0\"", "\u{1B}[31m", "\u{07}", "\u{00}", "\u{85}", "\u{2028}", "&a", "*a", "<<: ", "!!str ",
                "{ ", " }", "[", "]", "\n  ", "\n", "# ", "'", "\"", "|\n", "count: ", "rate: ", "tail", "exec", "cpu",
            ]
        }
        return strings.map { Array($0.utf8) }
    }

    static let wireLines = [
        #"{"seq":1,"ts":1700000000000000000,"src":"cpu","metric":"cpu.user","value":12.5,"unit":"%","tags":{"core":"0"}}"#,
        #"{"seq":2,"ts":1,"src":"app","log":"hello \u00e9\n","fields":{"path":"/var/log/app.log"},"origin":3,"offset":99}"#,
        #"{"heartbeat":1700000000000000000}"#,
        #"{"config_status":{"desired":null,"effective":null,"lkg":null,"state":"applied","error":null,"generation":1}}"#,
        #"{"seq":9223372036854775807,"ts":-5,"src":"s","metric":"m","value":null}"#,
        #"{ "src" : "s" , "ts" : 0 , "seq" : 3 , "log" : "" , "x" : [ { "y" : [ 1 , 2e-3 , true ] } ] }"#,
    ]

    /// Lines from the hostile-input tests: out-of-range numbers, bad UTF-8, bad JSON.
    static let hostileLines = [
        #"{"seq":18446744073709551615,"ts":1,"src":"s","metric":"m","value":1}"#,
        #"{"seq":9223372036854775808,"ts":1,"src":"s","metric":"m","value":1}"#,
        #"{"seq":0,"ts":1,"src":"s","metric":"m","value":1}"#, #"{"seq":-1,"ts":1,"src":"s","metric":"m","value":1}"#,
        #"{"seq":1e3,"ts":1,"src":"s","metric":"m","value":1}"#, #"{"seq":007,"ts":1,"src":"s","metric":"m","value":1}"#,
        #"{"seq":4,"ts":1,"src":"s","log":"x","origin":9223372036854775808,"offset":0}"#,
        "{\"seq\":\"\u{FF}\"}", "garbage", "",
    ]

    static let configs = [
        """
        agent: { id: edge-1 }
        buffer: { max_bytes: 64MiB, overflow: drop_oldest }
        uplink:
          url: http://127.0.0.1:4318
          heartbeat: 5s
          backoff: { initial: 100ms, max: 30s }
        sources:
          - { name: cpu, type: cpu, interval: 10s }
          - name: gen
            type: generator
            rate: 100
            count: 5
        """,
        "buffer: { max_bytes: 1TiB }\nuplink: { url: embedded }\nsources: [{ name: c, type: cpu }]\n",
        "collector: { listen: 127.0.0.1:4318, max_line_bytes: 1MiB }\n",
        "uplink: { url: \"http://h\\n\\e[31m\" }\nsources: [{ name: \"a\\u0007\\u0000\", type: cpu, interval: \"1\\ns\" }]\n",
        "a: &x [*x]\n", "sources:\n  - name: t\n    type: tail\n    paths: [/nonexistent/*.log]\n    max_line_bytes: 99TiB\n",
    ]
}
