import Foundation
import Testing
import UplinkTestSupport
import UplinkCore

@testable import UplinkSources

@Suite("exec: parsing")
struct ExecParsingTests {
    private func parse(_ text: String, _ format: ExecConfig.Format) -> ExecSource.ParsedOutput {
        ExecSource.parse(Array(text.utf8), config: ExecConfig(format: format))
    }

    @Test("number")
    func number() {
        #expect(parse(" 21.5\n", .number).metrics == [.init(name: "exec.value", value: 21.5)])
        #expect(parse("-3", .number).metrics == [.init(name: "exec.value", value: -3)])
        #expect(parse("", .number) == .init(metrics: [], malformed: 1))
        #expect(parse("21.5 C", .number) == .init(metrics: [], malformed: 1))
        #expect(ExecSource.parse(Array("7".utf8), config: ExecConfig(format: .number, metric: "queue.depth")).metrics
            == [.init(name: "queue.depth", value: 7)])
    }

    @Test("key=value pairs")
    func keyValue() {
        let parsed = parse("temp=21.5 humidity=40\nfan=1200,bad pair=x =3;ok=1e2\n", .keyvalue)
        #expect(parsed.metrics == [
            .init(name: "exec.temp", value: 21.5), .init(name: "exec.humidity", value: 40),
            .init(name: "exec.fan", value: 1200), .init(name: "exec.ok", value: 100),
        ])
        #expect(parsed.malformed == 3)
        #expect(ExecSource.parse(Array("a=1".utf8), config: ExecConfig(format: .keyvalue, prefix: "")).metrics == [.init(name: "a", value: 1)])
    }

    @Test("Influx line protocol")
    func influx() {
        let text = """
            # a comment
            weather,room=lab,floor=2 temp=21.5,humidity=40i,ok=t,note="hi there" 1700000000000000000
            ups charge=99u,on_battery=false

            bad_line_without_fields
            esc\\ aped,tag\\,x=a\\ b value=1
            cpu,host=a usage=x,idle=90
            """
        let parsed = parse(text, .influx)
        #expect(parsed.metrics == [
            .init(name: "weather.temp", value: 21.5, tags: [Tag("room", "lab"), Tag("floor", "2")]),
            .init(name: "weather.humidity", value: 40, tags: [Tag("room", "lab"), Tag("floor", "2")]),
            .init(name: "weather.ok", value: 1, tags: [Tag("room", "lab"), Tag("floor", "2")]),
            .init(name: "ups.charge", value: 99),
            .init(name: "ups.on_battery", value: 0),
            .init(name: "esc aped.value", value: 1, tags: [Tag("tag,x", "a b")]),
            .init(name: "cpu.idle", value: 90, tags: [Tag("host", "a")]),
        ])
        #expect(parsed.malformed == 2)
    }

    @Test("JSON")
    func json() {
        let parsed = parse(#"{"temp": 21.5, "fan": {"rpm": 1200, "ok": true}, "name": "x", "list": [1, 2], "n": null, "e": -1.5e2}"#, .json)
        #expect(parsed.metrics == [
            .init(name: "exec.temp", value: 21.5), .init(name: "exec.fan.rpm", value: 1200), .init(name: "exec.fan.ok", value: 1),
            .init(name: "exec.e", value: -150),
        ])
        #expect(parsed.malformed == 0)
        #expect(parse("42\n", .json).metrics == [.init(name: "exec.value", value: 42)])
        #expect(parse(#"{"a\"b\u0041": 1}"#, .json).metrics == [.init(name: "exec.a\"bA", value: 1)])
        for bad in ["", "{", #"{"a": }"#, #"{"a": 1,}"#, "[1]", "{} x", #"{"a": 01x}"#, String(repeating: "[", count: 100)] {
            #expect(parse(bad, .json) == .init(metrics: [], malformed: 1), "\(bad)")
        }
    }
}

@Suite("exec: running commands", .serialized, .timeLimit(.minutes(1)))
struct ExecRunTests {
    static let start: Int64 = 1_731_924_123_250_000_000

    @Test("output and exit status of a real command")
    func runs() async {
        #expect(await ExecSource.runCommand(["sh", "-c", "printf 21.5"], timeout: .seconds(10))
            == .exited(status: 0, output: Array("21.5".utf8)))
        #expect(await ExecSource.runCommand(["sh", "-c", "echo x; exit 3"], timeout: .seconds(10))
            == .exited(status: 3, output: Array("x\n".utf8)))
        #expect(await ExecSource.runCommand(["sh", "-c", "kill -9 $$"], timeout: .seconds(10)) == .signaled(signal: 9, output: []))
        #expect(await ExecSource.runCommand(["/nonexistent/uplink-command"], timeout: .seconds(10)) == .spawnFailed(errno: ENOENT))
        #expect(await ExecSource.runCommand([], timeout: .seconds(10)) == .spawnFailed(errno: ENOENT))
        // Standard input is /dev/null: `cat` ends at once.
        #expect(await ExecSource.runCommand(["cat"], timeout: .seconds(10)) == .exited(status: 0, output: []))
        // Large output is read while the command writes it.
        if case .exited(0, let output) = await ExecSource.runCommand(["sh", "-c", "head -c 300000 /dev/zero"], timeout: .seconds(20)) {
            #expect(output.count == 300_000)
        } else {
            Issue.record("head failed")
        }
    }

    @Test("the command inherits no descriptor of the agent but its standard streams")
    func noInheritedDescriptors() async throws {
        // A descriptor without close-on-exec, as a library might leave one, at a number no shell uses.
        let plain = open("/dev/null", O_RDONLY)
        try #require(plain >= 0)
        let high = fcntl(plain, F_DUPFD, 200)
        close(plain)
        try #require(high >= 200)
        defer { close(high) }
        let outcome = await ExecSource.runCommand(
            ["sh", "-c", "if [ -e /proc/$$/fd/\(high) ]; then echo inherited; else echo closed; fi"], timeout: .seconds(10))
        #expect(outcome == .exited(status: 0, output: Array("closed\n".utf8)))
    }

    @Test("a hanging command (sleep 10) is killed with its process group when the timeout passes")
    func timeout() async throws {
        let directory = try Fixtures.temporaryDirectory()
        defer { try? FileManager.default.removeItem(at: directory) }
        let pidFile = directory.appendingPathComponent("pids").path
        let clock = ContinuousClock()
        let started = clock.now
        // The shell starts a background sleep too: the whole group must die.
        let outcome = await ExecSource.runCommand(
            ["sh", "-c", "sleep 10 & echo $! > \(pidFile); echo $$ >> \(pidFile); printf partial; exec sleep 10"], timeout: .milliseconds(300))
        let elapsed = clock.now - started
        #expect(outcome == .timedOut(output: Array("partial".utf8)))
        #expect(elapsed >= .milliseconds(300))
        let pids = try String(contentsOfFile: pidFile, encoding: .utf8).split(separator: "\n").compactMap { Int32($0) }
        #expect(pids.count == 2)
        for pid in pids {
            // Gone (reaped by us, or by init for the background one): allow the kernel a moment for the latter.
            let gone = await eventually {
                var status: Int32 = 0
                _ = waitpid(pid, &status, WNOHANG)
                return kill(pid, 0) != 0 || isZombie(pid)
            }
            #expect(gone, "pid \(pid) still running")
        }
    }

    private func isZombie(_ pid: Int32) -> Bool {
        guard let stat = try? String(contentsOfFile: "/proc/\(pid)/stat", encoding: .utf8),
            let close = stat.lastIndex(of: ")")
        else { return true }
        return stat[stat.index(close, offsetBy: 2)] == "Z"
    }

    @Test("cancelling the source kills the running command")
    func cancellation() async throws {
        let directory = try Fixtures.temporaryDirectory()
        defer { try? FileManager.default.removeItem(at: directory) }
        let pidFile = directory.appendingPathComponent("pid").path
        // A command that writes its pid (whole, by a rename) and then runs until it is killed.
        let command = "echo $$ > \(pidFile).part; mv \(pidFile).part \(pidFile); exec tail -f /dev/null"
        let task = Task { await ExecSource.runCommand(["sh", "-c", command], timeout: .seconds(30)) }
        // Running: it wrote its pid.
        #expect(await eventually { FileManager.default.fileExists(atPath: pidFile) })
        let pid = try #require(Int32(try String(contentsOfFile: pidFile, encoding: .utf8).trimmingCharacters(in: .whitespacesAndNewlines)))
        task.cancel()
        #expect(await task.value == .cancelled)
        // Killed: gone, or at most a zombie not yet reaped; not running.
        #expect(kill(pid, 0) != 0 || isZombie(pid), "pid \(pid) still running")
    }

    @Test("the source emits what the command prints, with the configured tags and unit")
    func source() async throws {
        let sink = RecordingSink()
        let logs = LogCapture()
        let config = ExecConfig(
            tags: [Tag("site", "lab")], command: ["sh", "-c", "echo 'weather,room=a temp=21.5'"], format: .influx, unit: "celsius")
        try await run(ExecSource(name: "x", config: config, clock: FakeTickClock(now: Self.start, maximumSleeps: 2)), sink: sink, logger: logs.logger)
        #expect(sink.records.map(\.metric) == Array(repeating: Metric(
            name: "weather.temp", value: 21.5, unit: "celsius", tags: [Tag("room", "a"), Tag("site", "lab")]), count: 2))
        #expect(logs.warnings.isEmpty)
    }

    @Test("a failing command warns once while it keeps failing, a notice when it works again")
    func failing() async throws {
        let directory = try Fixtures.temporaryDirectory()
        defer { try? FileManager.default.removeItem(at: directory) }
        let flag = directory.appendingPathComponent("ok").path
        let clock = FakeTickClock(now: Self.start, maximumSleeps: 5) { number, _ in
            if number == 4 { _ = FileManager.default.createFile(atPath: flag, contents: Data()) }
        }
        let logs = LogCapture()
        let sink = RecordingSink()
        let config = ExecConfig(command: ["sh", "-c", "test -e \(flag) && echo 1 || exit 2"])
        let health = SourceHealth()
        try await run(ExecSource(name: "x", config: config, clock: clock), sink: sink, logger: logs.logger, health: health)
        #expect(health.snapshot.state == .healthy, "it works again: the last sample emitted")
        #expect(health.snapshot.failures == 3)
        #expect(logs.warnings.count == 1)
        #expect(logs.warnings.first?.message.contains("status 2") == true)
        #expect(logs.all.filter { $0.level == .notice }.count == 1)
        #expect(sink.count == 2)
    }

    @Test("no command, or one that cannot start: a warning, no crash")
    func cannotStart() async throws {
        let logs = LogCapture()
        try await run(ExecSource(name: "x", config: ExecConfig(command: []), clock: FakeTickClock(now: Self.start, maximumSleeps: 3)),
            sink: RecordingSink(), logger: logs.logger)
        #expect(logs.warnings.count == 1)
        let missing = LogCapture()
        let health = SourceHealth()
        try await run(ExecSource(name: "x", config: ExecConfig(command: ["/nonexistent/cmd"]), clock: FakeTickClock(now: Self.start, maximumSleeps: 3)),
            sink: RecordingSink(), logger: missing.logger, health: health)
        #expect(health.snapshot.state == .failing)
        #expect(health.snapshot.reason?.contains("cannot start") == true, "\(health.snapshot)")
        #expect(missing.warnings.count == 1)
        #expect(missing.warnings.first?.message.contains("cannot start") == true)
    }
}
