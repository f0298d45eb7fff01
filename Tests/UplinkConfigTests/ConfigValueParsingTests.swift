import Testing
import UplinkConfig
import UplinkCore

@Suite("Duration and size parsing")
struct ConfigValueParsingTests {
    @Test(arguments: [
        ("250ms", Duration.milliseconds(250)),
        ("10s", .seconds(10)),
        ("5m", .seconds(300)),
        ("1h", .seconds(3600)),
        ("1.5s", .milliseconds(1500)),
        ("0.25s", .milliseconds(250)),
        ("100us", .microseconds(100)),
        ("100µs", .microseconds(100)),
        ("42ns", .nanoseconds(42)),
        ("1h30m", .seconds(5400)),
        ("1m 30s", .seconds(90)),
        ("10 s", .seconds(10)),
        ("0s", .zero),
        ("1.000000000s", .seconds(1)),
        ("2562047h", .seconds(2_562_047 * 3600)),
    ])
    func validDurations(text: String, expected: Duration) throws {
        #expect(try ConfigValueParsing.duration(text) == expected)
    }

    @Test(arguments: [
        ("10", "invalid duration '10': a unit is required (hint: write '10s' for seconds or '10ms' for milliseconds; units: ns, us, ms, s, m, h)"),
        ("1.5", "invalid duration '1.5': a unit is required (hint: write '1.5s' for seconds or '1.5ms' for milliseconds; units: ns, us, ms, s, m, h)"),
        ("10x", "invalid duration '10x': unknown unit 'x' (hint: units: ns, us, ms, s, m, h)"),
        ("10sec", "invalid duration '10sec': unknown unit 'sec' (hint: did you mean 's'? units: ns, us, ms, s, m, h)"),
        ("2d", "invalid duration '2d': unknown unit 'd' (hint: days are not supported; write '24h')"),
        ("-5s", "invalid duration '-5s': durations cannot be negative"),
        ("", "invalid duration '': it is empty (hint: e.g. '250ms', '10s', '1.5s', '5m' or '1h')"),
        ("fast", "invalid duration 'fast': expected a number followed by a unit (hint: e.g. '250ms', '10s', '1.5s', '5m' or '1h')"),
        ("1.5ns", "invalid duration '1.5ns': it is not a whole number of nanoseconds"),
        ("3000000h", "invalid duration '3000000h': it is too large"),
        ("10s!", "invalid duration '10s!': expected a number followed by a unit (hint: e.g. '250ms', '10s', '1.5s', '5m' or '1h')"),
    ])
    func invalidDurations(text: String, expected: String) {
        #expect(throws: ConfigValueError.self) { try ConfigValueParsing.duration(text) }
        do {
            _ = try ConfigValueParsing.duration(text)
        } catch {
            #expect(error.description == expected)
        }
    }

    @Test(arguments: [
        ("512", 512),
        ("512B", 512),
        ("0", 0),
        ("64KiB", 65_536),
        ("16MB", 16_000_000),
        ("16MiB", 16 << 20),
        ("1GiB", 1 << 30),
        ("1GB", 1_000_000_000),
        ("2TiB", 2 << 40),
        ("1.5KiB", 1536),
        ("64 KiB", 65_536),
        ("1KB", 1000),
    ])
    func validSizes(text: String, expected: Int) throws {
        #expect(try ConfigValueParsing.size(text) == expected)
    }

    @Test(arguments: [
        ("64kb", "invalid size '64kb': unknown unit 'kb' (hint: did you mean 'KiB' (1024-based) or 'KB' (1000-based)? units: B, KB, MB, GB, TB, KiB, MiB, GiB, TiB)"),
        ("16M", "invalid size '16M': unknown unit 'M' (hint: did you mean 'MiB' (1024-based) or 'MB' (1000-based)? units: B, KB, MB, GB, TB, KiB, MiB, GiB, TiB)"),
        ("10 bytes", "invalid size '10 bytes': unknown unit 'bytes' (hint: did you mean 'B'? units: B, KB, MB, GB, TB, KiB, MiB, GiB, TiB)"),
        ("-1", "invalid size '-1': sizes cannot be negative"),
        ("0.5B", "invalid size '0.5B': it is not a whole number of bytes"),
        ("big", "invalid size 'big': expected a number of bytes, optionally followed by a unit (hint: e.g. '512B', '64KiB', '16MiB' or '1GB')"),
        ("99999999TiB", "invalid size '99999999TiB': it is too large"),
        ("1KiB2", "invalid size '1KiB2': unexpected '2' (hint: e.g. '512B', '64KiB', '16MiB' or '1GB')"),
    ])
    func invalidSizes(text: String, expected: String) {
        do {
            let value = try ConfigValueParsing.size(text)
            Issue.record("parsed '\(text)' as \(value)")
        } catch {
            #expect(error.description == expected)
        }
    }

    @Test func formatting() {
        #expect(ConfigValueParsing.format(duration: .milliseconds(250)) == "250ms")
        #expect(ConfigValueParsing.format(duration: .seconds(30)) == "30s")
        #expect(ConfigValueParsing.format(duration: .seconds(300)) == "5m")
        #expect(ConfigValueParsing.format(duration: .seconds(7200)) == "2h")
        #expect(ConfigValueParsing.format(duration: .milliseconds(1500)) == "1500ms")
        #expect(ConfigValueParsing.format(duration: .zero) == "0s")
        #expect(ConfigValueParsing.format(size: 64 << 20) == "64MiB")
        #expect(ConfigValueParsing.format(size: 4096) == "4KiB")
        #expect(ConfigValueParsing.format(size: 1000) == "1KB")
        #expect(ConfigValueParsing.format(size: 1500) == "1500B")
        #expect(ConfigValueParsing.format(size: 0) == "0B")
    }

    @Test func formattedValuesParseBack() throws {
        var generator = SplitMix64(seed: 7)
        for _ in 0..<500 {
            let nanoseconds = Int64.random(in: 0...(Int64(1) << 50), using: &generator)
            let scale: Int64 = [1, 1_000, 1_000_000, 1_000_000_000, 60_000_000_000].randomElement(using: &generator)!
            let duration = Duration.nanoseconds((nanoseconds / scale) * scale)
            #expect(try ConfigValueParsing.duration(ConfigValueParsing.format(duration: duration)) == duration)
            let bytes = Int.random(in: 0...(1 << 45), using: &generator) >> Int.random(in: 0...40, using: &generator)
            #expect(try ConfigValueParsing.size(ConfigValueParsing.format(size: bytes)) == bytes)
        }
    }

    @Test func issueFormat() {
        let issue = ConfigIssue(
            file: "a.yaml", line: 3, column: 7, keyPath: "sources[0].interval", code: .invalidValue,
            message: "invalid duration '10': a unit is required", hint: "write '10s'")
        #expect(issue.description == "a.yaml:3:7: sources[0].interval: invalid duration '10': a unit is required (hint: write '10s')")
        let fileLevel = ConfigIssue(
            file: "a.yaml", line: 0, column: 0, keyPath: "", code: .unreadable, message: "cannot read")
        #expect(fileLevel.description == "a.yaml: cannot read")
        let noKey = ConfigIssue(file: "a.yaml", line: 1, column: 2, keyPath: "", code: .syntax, message: "bad")
        #expect(noKey.description == "a.yaml:1:2: bad")
    }
}
