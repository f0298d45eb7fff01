import Foundation
import Logging
import Testing
import UplinkConfig
import UplinkCore
import UplinkTestSupport

@testable import UplinkSources

/// A journald source running in a task of its own.
struct RunningJournald {
    let task: Task<Void, any Error>
    /// What the source reports: healthy once the journal is open, watched and positioned.
    let health = SourceHealth()

    init(
        _ config: JournaldConfig, sink: some RecordSink, stateDirectory: String? = nil, name: String = "journal-test",
        clock: any TickClock = SystemTickClock()
    ) {
        let source = JournaldSource(name: name, config: config, clock: clock)
        let context = SourceContext(
            sink: sink, logger: Logger(label: "journald-test"), stateDirectory: stateDirectory, health: health)
        task = Task { try await source.run(context: context) }
    }

    /// Whether the source was reading in time: from then on every entry appended is read (with `since: now` too).
    func following() async -> Bool {
        await eventually { health.snapshot.state == .healthy }
    }

    /// Cancels the source and waits until it returned.
    func stop() async throws {
        task.cancel()
        try await task.value
    }
}

/// A configuration for tests: the journal files of `directory`, from the beginning, short checkpoint interval.
func journaldTestConfig(_ directory: String) -> JournaldConfig {
    var config = JournaldConfig()
    config.directory = directory
    config.since = .beginning
    config.checkpointInterval = .milliseconds(50)
    return config
}

/// The numbers of `n=<number>` messages, in order.
func journalNumbers(_ records: [Record]) -> [Int] {
    messages(records).compactMap { $0.hasPrefix("n=") ? Int($0.dropFirst(2)) : nil }
}

@Suite("journald source", .serialized, .timeLimit(.minutes(3)))
struct JournaldTests {
    static func cursor(_ stateDirectory: String, name: String = "journal-test") -> String? {
        let path = JournaldCheckpointFile.path(stateDirectory: stateDirectory, sourceName: name)
        guard let data = FileManager.default.contents(atPath: path) else { return nil }
        return try? JournaldCheckpointFile.decode(Array(data)).get()
    }

    @Test("entries arrive with the message, the selected fields, the journal's timestamp and an origin")
    func recordShape() async throws {
        guard TestJournal.isAvailable else { print(TestJournal.skipMessage); return }
        let directory = try TailTemporaryDirectory()
        defer { directory.remove() }
        try await TestJournal.append(TestJournal.numbered(0..<10), to: directory.file("a.journal"))
        let sink = RecordingSink()
        let source = RunningJournald(journaldTestConfig(directory.path), sink: sink)
        #expect(await eventually { sink.records.count >= 10 })
        try await source.stop()
        let records = sink.records
        #expect(journalNumbers(records) == Array(0..<10))
        let third = try #require(records.dropFirst(3).first)
        #expect(third.source == "journal-test")
        #expect(third.timestamp == 1_700_000_000_003_000_000)
        guard case .log(let line) = third.payload else { Issue.record("not a log record"); return }
        #expect(line.fields == [
            Tag("unit", "odd.service"), Tag("priority", "3"), Tag("pid", "1003"), Tag("hostname", "box"),
            Tag("syslog_identifier", "app"),
        ])
        // The origin: one per journal sequence, offsets the growing sequence numbers.
        let origins = records.compactMap { $0.logLine?.origin }
        #expect(origins.count == 10)
        #expect(Set(origins.map(\.id)).count == 1)
        #expect(origins.map(\.offset) == (1...10).map(UInt64.init))
    }

    @Test("units, matches and priority select entries as journalctl does")
    func filters() async throws {
        guard TestJournal.isAvailable else { print(TestJournal.skipMessage); return }
        let directory = try TailTemporaryDirectory()
        defer { directory.remove() }
        try await TestJournal.append(TestJournal.numbered(0..<40), to: directory.file("a.journal"))
        func read(_ change: (inout JournaldConfig) -> Void, expected: Int) async throws -> [Int] {
            var config = journaldTestConfig(directory.path)
            change(&config)
            let sink = RecordingSink()
            let clock = ManualTickClock()
            let source = RunningJournald(config, sink: sink, clock: clock)
            #expect(await eventually { sink.records.count >= expected })
            // Time for an entry too many to show: the source sleeps on one timer when idle.
            #expect(await clock.pass(10, of: .milliseconds(50), sleepers: 1))
            try await source.stop()
            return journalNumbers(sink.records)
        }
        #expect(try await read({ $0.units = ["even"] }, expected: 20) == Array(stride(from: 0, to: 40, by: 2)))
        #expect(try await read({ $0.priority = .err }, expected: 20) == (0..<40).filter { $0 % 8 <= 3 })
        #expect(
            try await read({ $0.matches = [JournaldMatch(field: "_PID", value: "1000"), JournaldMatch(field: "_PID", value: "1001")] }, expected: 12)
                == (0..<40).filter { $0 % 7 <= 1 })
        #expect(
            try await read({ $0.units = ["odd.service"]; $0.priority = .warning }, expected: 10)
                == (0..<40).filter { $0 % 2 == 1 && $0 % 8 <= 4 })
        #expect(try await read({ $0.since = .time(microseconds: 1_700_000_000_030_000) }, expected: 10) == Array(30..<40))
    }

    @Test("a writer appends while the source follows; since: now reads only what comes after the start")
    func follows() async throws {
        guard TestJournal.isAvailable else { print(TestJournal.skipMessage); return }
        let directory = try TailTemporaryDirectory()
        defer { directory.remove() }
        let file = directory.file("a.journal")
        try await TestJournal.append(TestJournal.numbered(0..<5), to: file)
        var config = journaldTestConfig(directory.path)
        config.since = .now
        let sink = RecordingSink()
        let source = RunningJournald(config, sink: sink)
        #expect(await source.following())
        for round in 0..<10 {
            try await TestJournal.append(TestJournal.numbered((5 + round * 10)..<(15 + round * 10)), to: file)
            #expect(await eventually { journalNumbers(sink.records).count >= (round + 1) * 10 }, "round \(round)")
        }
        // A new file in the directory is followed too.
        try await TestJournal.append(TestJournal.numbered(105..<110), to: directory.file("b.journal"))
        #expect(await eventually { journalNumbers(sink.records).count >= 105 })
        try await source.stop()
        #expect(journalNumbers(sink.records) == Array(5..<110))
    }

    @Test("since: now on an empty journal directory: the first file's entries arrive, and a restart keeps them once")
    func emptyJournalSinceNow() async throws {
        guard TestJournal.isAvailable else { print(TestJournal.skipMessage); return }
        let directory = try TailTemporaryDirectory()
        defer { directory.remove() }
        let state = directory.file("state")
        let journal = directory.file("journal")
        try FileManager.default.createDirectory(atPath: journal, withIntermediateDirectories: true)
        var config = journaldTestConfig(journal)
        config.since = .now
        let sink = RecordingSink()
        var source = RunningJournald(config, sink: sink, stateDirectory: state)
        #expect(await source.following())
        try await TestJournal.append(TestJournal.numbered(0..<20), to: journal + "/system.journal")
        #expect(await eventually { sink.records.count >= 20 })
        try await source.stop()
        #expect(journalNumbers(sink.records) == Array(0..<20))
        // Added while stopped: sent after the restart, although since is now (the checkpoint wins).
        try await TestJournal.append(TestJournal.numbered(20..<30), to: journal + "/system.journal")
        let second = RecordingSink()
        let clock = ManualTickClock()
        source = RunningJournald(config, sink: second, stateDirectory: state, clock: clock)
        #expect(await eventually { second.records.count >= 10 })
        #expect(await clock.pass(10, of: .milliseconds(50), sleepers: 1))  // time for an entry too many to show
        try await source.stop()
        #expect(journalNumbers(second.records) == Array(20..<30))
    }

    @Test("the cursor checkpoint advances only on acknowledgement; a restart resumes after it, nothing repeated or skipped")
    func checkpointAndRestart() async throws {
        guard TestJournal.isAvailable else { print(TestJournal.skipMessage); return }
        let directory = try TailTemporaryDirectory()
        defer { directory.remove() }
        let state = directory.file("state")
        let file = directory.file("a.journal")
        try await TestJournal.append(TestJournal.numbered(0..<1000), to: file)

        let sink = RecordingSink(acknowledgesOnEmit: false)
        // Time is the test's: the checkpoint interval (50 ms) passes only when the clock is moved on.
        let clock = ManualTickClock()
        var source = RunningJournald(journaldTestConfig(directory.path), sink: sink, stateDirectory: state, clock: clock)
        #expect(await eventually { sink.count >= 1000 })
        #expect(await clock.pass(10, of: .milliseconds(50), sleepers: 1))  // ten checkpoint intervals
        #expect(Self.cursor(state) == nil, "a checkpoint before any acknowledgement")
        // Batches of 512: acknowledging the first batch moves the checkpoint to its last entry (an acknowledgement
        // wakes the source). Less than a megabyte moved: the write waits 30 intervals from the start, not one.
        sink.acknowledge(through: 600)
        #expect(await clock.pass(10, of: .milliseconds(50), sleepers: 1))
        #expect(Self.cursor(state) == nil, "a trickle written after one interval")
        #expect(await clock.pass(10, of: .milliseconds(50), sleepers: 1))
        #expect(await eventually { Self.cursor(state) != nil })
        try await source.stop()  // waits up to 5 s for the rest: not acknowledged, so not checkpointed
        let records = sink.records
        #expect(journalNumbers(records) == Array(0..<1000))

        // The restart resumes after the last acknowledged batch (entry 511): 512... again, then new ones.
        try await TestJournal.append(TestJournal.numbered(1000..<1100), to: file)
        let second = RecordingSink(acknowledgesOnEmit: false)
        source = RunningJournald(journaldTestConfig(directory.path), sink: second, stateDirectory: state)
        #expect(await eventually { second.count >= 588 })
        second.acknowledge(through: UInt64(second.count))
        try await source.stop()
        #expect(journalNumbers(second.records) == Array(512..<1100))

        // Everything acknowledged: a restart sends nothing again, and then only new entries.
        let third = RecordingSink(acknowledgesOnEmit: false)
        let thirdClock = ManualTickClock()
        source = RunningJournald(journaldTestConfig(directory.path), sink: third, stateDirectory: state, clock: thirdClock)
        #expect(await source.following())
        #expect(await thirdClock.pass(10, of: .milliseconds(50), sleepers: 1))
        #expect(third.count == 0)
        try await TestJournal.append(TestJournal.numbered(1100..<1110), to: file)
        #expect(await eventually { third.count >= 10 })
        third.acknowledge(through: 10)
        try await source.stop()
        #expect(journalNumbers(third.records) == Array(1100..<1110))
    }

    @Test("long messages are cut to max_line_bytes and marked; binary and ill-formed UTF-8 messages are sent, replaced")
    func longAndBinaryMessages() async throws {
        guard TestJournal.isAvailable else { print(TestJournal.skipMessage); return }
        let directory = try TailTemporaryDirectory()
        defer { directory.remove() }
        let long = String(repeating: "x", count: 100_000)
        let entries = [
            TestJournal.Entry(message: long, realtime: 1_700_000_000_000_000),
            TestJournal.Entry(message: [0x61, 0x00, 0x62, 0xff, 0xfe, 0x0a, 0x63], realtime: 1_700_000_000_001_000),
            TestJournal.Entry(message: "short", realtime: 1_700_000_000_002_000),
        ]
        try await TestJournal.append(entries, to: directory.file("a.journal"))
        var config = journaldTestConfig(directory.path)
        config.maxLineBytes = 1000
        let sink = RecordingSink()
        let source = RunningJournald(config, sink: sink)
        #expect(await eventually { sink.records.count >= 3 })
        try await source.stop()
        let records = sink.records
        #expect(records[0].tailMessage == String(repeating: "x", count: 1000))
        #expect(records[0].tailField("truncated") == "100000")
        #expect(records[1].tailMessage == "a\u{0}b\u{FFFD}\u{FFFD}\nc")
        #expect(records[1].tailField("truncated") == nil)
        #expect(records[2].tailMessage == "short")
    }

    @Test("rotation and vacuum: files added and removed while following and across a restart; nothing repeated or skipped")
    func rotationAndVacuum() async throws {
        guard TestJournal.isAvailable else { print(TestJournal.skipMessage); return }
        let directory = try TailTemporaryDirectory()
        defer { directory.remove() }
        let state = directory.file("state")
        let journalDirectory = directory.file("journal")
        try FileManager.default.createDirectory(atPath: journalDirectory, withIntermediateDirectories: true)
        func file(_ index: Int) -> String { journalDirectory + "/part-\(index).journal" }
        let sink = RecordingSink(acknowledgesOnEmit: false)
        var source = RunningJournald(journaldTestConfig(journalDirectory), sink: sink, stateDirectory: state)
        var next = 0
        // Each "rotation" starts a new file; the oldest but one is vacuumed once read.
        for part in 0..<6 {
            try await TestJournal.append(TestJournal.numbered(next..<(next + 50)), to: file(part))
            next += 50
            try await TestJournal.append(TestJournal.numbered(next..<(next + 50)), to: file(part))
            next += 50
            #expect(await eventually { sink.count >= next }, "part \(part)")
            sink.acknowledge(through: UInt64(sink.count))
            if part >= 1 { try FileManager.default.removeItem(atPath: file(part - 1)) }
        }
        #expect(await eventually { Self.cursor(state)?.isEmpty == false })
        try await source.stop()
        #expect(journalNumbers(sink.records) == Array(0..<next))

        // The checkpoint's file is vacuumed while the agent is stopped: it resumes with the next file's entries.
        try await TestJournal.append(TestJournal.numbered(next..<(next + 30)), to: file(6))
        let total = next + 30
        try FileManager.default.removeItem(atPath: file(5))
        let second = RecordingSink(acknowledgesOnEmit: false)
        let clock = ManualTickClock()
        source = RunningJournald(journaldTestConfig(journalDirectory), sink: second, stateDirectory: state, clock: clock)
        #expect(await eventually { second.count >= 30 })
        #expect(await clock.pass(10, of: .milliseconds(50), sleepers: 1))  // time for an entry too many to show
        second.acknowledge(through: UInt64(second.count))
        try await source.stop()
        #expect(journalNumbers(second.records) == Array(next..<total))
    }

    @Test("corrupt journal files (garbage, cut, damaged in the middle) do not crash or stall the source")
    func corruptFiles() async throws {
        guard TestJournal.isAvailable else { print(TestJournal.skipMessage); return }
        let directory = try TailTemporaryDirectory()
        defer { directory.remove() }
        try await TestJournal.append(TestJournal.numbered(0..<200), to: directory.file("good.journal"))
        try await TestJournal.append(TestJournal.numbered(0..<200, prefix: "bad="), to: directory.file("damaged.journal"))
        try await TestJournal.append(TestJournal.numbered(0..<200, prefix: "cut="), to: directory.file("cut.journal"))
        // Garbage with a journal's name, a file cut after its header, one with random bytes over its middle.
        var generator = SystemRandomNumberGenerator()
        try Data((0..<100_000).map { _ in UInt8.random(in: 0...255, using: &generator) }).write(to: URL(fileURLWithPath: directory.file("garbage.journal")))
        let cut = try Data(contentsOf: URL(fileURLWithPath: directory.file("cut.journal")))
        try cut.prefix(300).write(to: URL(fileURLWithPath: directory.file("cut.journal")))
        var damaged = try Data(contentsOf: URL(fileURLWithPath: directory.file("damaged.journal")))
        for index in stride(from: 4096, to: min(damaged.count, 200_000), by: 1) { damaged[index] = UInt8.random(in: 0...255, using: &generator) }
        try damaged.write(to: URL(fileURLWithPath: directory.file("damaged.journal")))

        let sink = RecordingSink()
        let source = RunningJournald(journaldTestConfig(directory.path), sink: sink)
        #expect(await eventually { journalNumbers(sink.records).count >= 200 })
        // Still following: a new good file arrives.
        try await TestJournal.append(TestJournal.numbered(200..<210), to: directory.file("more.journal"))
        #expect(await eventually { journalNumbers(sink.records).count >= 210 })
        let clock = ContinuousClock()
        let started = clock.now
        try await source.stop()
        #expect(clock.now - started < .seconds(3))
        #expect(journalNumbers(sink.records) == Array(0..<210))
    }

    @Test("a directory that does not exist stops the source with a clear error")
    func missingDirectory() async throws {
        var config = JournaldConfig()
        config.directory = "/nonexistent/journal-\(UInt64.random(in: 0...UInt64.max))"
        let source = JournaldSource(name: "j", config: config)
        await #expect(throws: SourceError.self) {
            try await source.run(context: SourceContext(sink: RecordingSink(), logger: Logger(label: "t")))
        }
    }

    @Test("the checkpoint file format round-trips, and damage is detected")
    func checkpointFormat() throws {
        let cursor = "s=0d8752bf32d84f4fa493271f5a3c3927;i=2;b=0123456789abcdef0123456789abcdef;m=2;t=60a24181e4001;x=f3b03a019cffca71"
        let encoded = JournaldCheckpointFile.encode(cursor: cursor)
        #expect(try JournaldCheckpointFile.decode(encoded).get() == cursor)
        for length in 0..<(encoded.count - 1) {
            if case .success = JournaldCheckpointFile.decode(Array(encoded[0..<length])) {
                Issue.record("accepted a checkpoint file cut at \(length) bytes")
            }
        }
        #expect(throws: (any Error).self) { try JournaldCheckpointFile.decode(Array("uplink-journald-cursor 1\na b\nend\n".utf8)).get() }
        #expect(throws: (any Error).self) { try JournaldCheckpointFile.decode([0xff, 0xfe]).get() }
        #expect(JournaldCheckpointFile.path(stateDirectory: "/state", sourceName: "sys log") == "/state/journald/sys_log.cursor")
        let origin = Array(cursor.utf8).withUnsafeBytes { JournaldEngine.origin(ofCursor: $0) }
        #expect(origin?.offset == 2)
        #expect((origin?.id ?? 0) >= 1)
        #expect(Array("b=1;m=2".utf8).withUnsafeBytes { JournaldEngine.origin(ofCursor: $0) } == nil)
    }

    @Test("since, priorities and matches parse as documented")
    func valueParsing() throws {
        #expect(JournaldSince.rfc3339Microseconds("1970-01-01T00:00:00Z") == 0)
        #expect(JournaldSince.rfc3339Microseconds("2023-11-14T22:13:20Z") == 1_700_000_000_000_000)
        #expect(JournaldSince.rfc3339Microseconds("2023-11-14T23:13:20.5+01:00") == 1_700_000_000_500_000)
        #expect(JournaldSince.rfc3339Microseconds("2024-02-29 00:00:00.123456789Z") == 1_709_164_800_123_456)
        for bad in ["2023-02-29T00:00:00Z", "2023-11-14T22:13:20", "2023-11-14", "yesterday", "2023-11-14T22:13:20.Z", "1969-12-31T23:59:59Z"] {
            #expect(JournaldSince.rfc3339Microseconds(bad) == nil, "\(bad)")
        }
        let duration: (String) -> Duration? = { try? ConfigValueParsing.duration($0) }
        #expect(JournaldSince(parsing: "beginning", duration: duration) == .beginning)
        #expect(JournaldSince(parsing: "now", duration: duration) == .now)
        #expect(JournaldSince(parsing: "1h", duration: duration) == .ago(.seconds(3600)))
        #expect(JournaldSince(parsing: "soon", duration: duration) == nil)
        #expect(JournaldPriority(parsing: "warning") == .warning)
        #expect(JournaldPriority(parsing: "ERR") == .err)
        #expect(JournaldPriority(parsing: "3") == .err)
        #expect(JournaldPriority(parsing: "8") == nil)
        #expect(JournaldPriority(parsing: "loud") == nil)
        #expect(try JournaldMatch.parse("_TRANSPORT=kernel").get() == JournaldMatch(field: "_TRANSPORT", value: "kernel"))
        #expect(try JournaldMatch.parse("MESSAGE=a=b").get() == JournaldMatch(field: "MESSAGE", value: "a=b"))
        for bad in ["novalue", "=x", "lower=x", "1ABC=x", "A B=x"] {
            #expect(throws: SourceError.self, "\(bad)") { try JournaldMatch.parse(bad).get() }
        }
        #expect(JournaldConfig.unitName("ssh") == "ssh.service")
        #expect(JournaldConfig.unitName("cron.timer") == "cron.timer")
    }
}
