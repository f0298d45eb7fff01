import Foundation
import Logging
import Testing
import UplinkCore
import UplinkTestSupport

@testable import UplinkSources

@Suite("Tail source")
struct TailTests {
    // MARK: Discovery and start position

    @Test("a file created after the start is found and read from its beginning", arguments: [TailWatchMethod.poll, .auto])
    func discoveryOfNewFile(watch: TailWatchMethod) async throws {
        let directory = try TailTemporaryDirectory()
        defer { directory.remove() }
        var config = tailTestConfig([directory.path + "/*.log"], watch: watch, startAt: .end)
        // With inotify the directory event must find it, long before this safety net.
        if watch == .auto { config.discoveryInterval = .seconds(3600) }
        let sink = RecordingSink()
        let logs = LogCapture()
        let tail = RunningTail(config, sink: sink, logger: logs.logger)
        // The tailer looked and found nothing: the file is new to it.
        #expect(await eventually { logs.warnings.contains { $0.message.contains("no file matches") } })
        writeFile(directory.file("new.log"), "first\nsecond\n")
        #expect(await eventually { sink.count >= 2 })
        try await tail.stop()
        #expect(messages(sink.records) == ["first", "second"])
        #expect(sink.records.allSatisfy { $0.tailField("path") == directory.file("new.log") })
        #expect(logs.warnings.contains { $0.message.contains("no file matches") })
    }

    @Test("start_at: end skips what an existing file holds, beginning reads it")
    func startPosition() async throws {
        let directory = try TailTemporaryDirectory()
        defer { directory.remove() }
        let path = directory.file("app.log")
        writeFile(path, "old 1\nold 2\n")

        let endSink = RecordingSink()
        let endTail = RunningTail(tailTestConfig([path], startAt: .end), sink: endSink)
        #expect(await endTail.opened())
        let writer = TailTestWriter(path)
        writer.write("new 1\n")
        #expect(await eventually { endSink.count >= 1 })
        try await endTail.stop()
        #expect(messages(endSink.records) == ["new 1"])

        let beginningSink = RecordingSink()
        let beginningTail = RunningTail(tailTestConfig([path], startAt: .beginning), sink: beginningSink)
        #expect(await eventually { beginningSink.count >= 3 })
        try await beginningTail.stop()
        #expect(messages(beginningSink.records) == ["old 1", "old 2", "new 1"])
    }

    // MARK: Lines

    @Test("\\r\\n endings, empty lines, and origins with the offset past each line")
    func lineEndings() async throws {
        let directory = try TailTemporaryDirectory()
        defer { directory.remove() }
        let path = directory.file("crlf.log")
        writeFile(path, "one\r\n\r\ntwo\n\nthree\r\r\n")
        let sink = RecordingSink()
        let tail = RunningTail(tailTestConfig([path]), sink: sink)
        #expect(await eventually { sink.count >= 5 })
        try await tail.stop()
        #expect(messages(sink.records) == ["one", "", "two", "", "three\r"])
        let origins = sink.records.compactMap { $0.logLine?.origin }
        #expect(origins.map(\.offset) == [5, 7, 11, 12, 20])
        #expect(Set(origins.map(\.id)).count == 1)
        #expect(origins[0].id >= 1 && origins[0].id <= UInt64(Int64.max))
    }

    @Test("a 10 MiB line is cut to max_line_bytes and marked; the next line is fine")
    func hugeLine() async throws {
        let directory = try TailTemporaryDirectory()
        defer { directory.remove() }
        let path = directory.file("huge.log")
        let writer = TailTestWriter(path)
        writer.write("before\n")
        writer.write([UInt8](repeating: UInt8(ascii: "x"), count: 10 * 1024 * 1024))
        writer.write("\nafter\n")
        var config = tailTestConfig([path])
        config.maxLineBytes = 1000
        let sink = RecordingSink()
        let tail = RunningTail(config, sink: sink)
        #expect(await eventually { sink.count >= 3 })
        try await tail.stop()
        let records = sink.records
        try #require(records.count == 3)
        #expect(records[0].tailMessage == "before")
        #expect(records[1].tailMessage == String(repeating: "x", count: 1000))
        #expect(records[1].tailField("truncated") == String(10 * 1024 * 1024))
        #expect(records[2].tailMessage == "after")
        #expect(records[2].tailField("truncated") == nil)
        let expectedEnd: UInt64 = 7 + 10 * 1024 * 1024 + 1 + 6
        #expect(records[2].logLine?.origin?.offset == expectedEnd)
    }

    @Test("binary garbage produces records and no crash")
    func binaryGarbage() async throws {
        let directory = try TailTemporaryDirectory()
        defer { directory.remove() }
        let path = directory.file("garbage.log")
        var generator = SystemRandomNumberGenerator()
        var bytes = (0..<300_000).map { _ in UInt8.random(in: 0...255, using: &generator) }
        bytes.append(UInt8(ascii: "\n"))
        let lineCount = bytes.filter { $0 == UInt8(ascii: "\n") }.count
        let writer = TailTestWriter(path)
        writer.write(bytes)
        writer.write("end\n")
        let sink = RecordingSink()
        let tail = RunningTail(tailTestConfig([path]), sink: sink)
        #expect(await eventually { sink.count >= lineCount + 1 })
        try await tail.stop()
        #expect(sink.count == lineCount + 1)
        #expect(sink.records.last?.tailMessage == "end")
    }

    @Test("a last line without \\n is sent after partial_line_timeout; its continuation is a new record")
    func partialLine() async throws {
        let directory = try TailTemporaryDirectory()
        defer { directory.remove() }
        let path = directory.file("partial.log")
        let writer = TailTestWriter(path)
        writer.write("complete\nhalf")
        let sink = RecordingSink()
        let tail = RunningTail(tailTestConfig([path]), sink: sink)
        #expect(await eventually { sink.count >= 2 })
        #expect(messages(sink.records) == ["complete", "half"])
        writer.write(" more\nnext\n")
        #expect(await eventually { sink.count >= 4 })
        try await tail.stop()
        #expect(messages(sink.records) == ["complete", "half", " more", "next"])
        #expect(sink.records.compactMap { $0.logLine?.origin?.offset } == [9, 13, 19, 24])
    }

    @Test("multi-line records: continuation lines joined, the last record sent after the timeout")
    func multiline() async throws {
        let directory = try TailTemporaryDirectory()
        defer { directory.remove() }
        let path = directory.file("multi.log")
        writeFile(
            path,
            "2024-01-01 start one\n  at frame 1\n  at frame 2\n2024-01-01 start two\n2024-01-01 start three\ncontinued\n")
        var config = tailTestConfig([path])
        config.multilineStartPattern = "^[0-9]{4}-"
        let sink = RecordingSink()
        let tail = RunningTail(config, sink: sink)
        #expect(await eventually { sink.count >= 3 })
        try await tail.stop()
        #expect(
            messages(sink.records) == [
                "2024-01-01 start one\n  at frame 1\n  at frame 2", "2024-01-01 start two",
                "2024-01-01 start three\ncontinued",
            ])
        #expect(sink.records.last?.logLine?.origin?.offset == 101)
        #expect(TailConfig.validateRegex("^[0-9]{4}-") == nil)
        #expect(TailConfig.validateRegex("([a-") != nil)
    }

    // MARK: Rotation

    @Test(
        "rename rotation with a busy writer: every line once, in order", arguments: [TailWatchMethod.poll, .auto])
    func renameRotation(watch: TailWatchMethod) async throws {
        let directory = try TailTemporaryDirectory()
        defer { directory.remove() }
        let path = directory.file("app.log")
        var writer = TailTestWriter(path)
        let sink = RecordingSink()
        let logs = LogCapture()
        // Time is the test's: polls, lingering rotated files and timeouts move only with the clock.
        let clock = ManualTickClock()
        let tail = RunningTail(tailTestConfig([path], watch: watch), sink: sink, logger: logs.logger, clock: clock)
        let rotations = 50
        let linesPerFile = 400
        // The tailer has the file before its first rotation (a file renamed away unseen is out of `paths`' reach).
        #expect(await eventually { isOpenForReadingInThisProcess(path) })
        var counter = 0
        for rotation in 0..<rotations {
            for _ in 0..<(linesPerFile / 20) {
                var chunk = ""
                for _ in 0..<20 {
                    chunk += "line \(counter) " + String(repeating: "p", count: 100) + "\n"
                    counter += 1
                }
                writer.write(chunk)
            }
            rename(path, directory.file("app.log.\(rotation)"))
            writer.close()
            writer = TailTestWriter(path)
            // A file created and rotated away again before the tailer ever saw it cannot be followed (its new name
            // does not match): the first line of each file is awaited, the rest is written in a burst while the
            // tailer is still reading the previous files.
            writer.write("line \(counter) " + String(repeating: "p", count: 100) + "\n")
            counter += 1
            let seen = counter
            #expect(await clock.advance(by: .milliseconds(20), until: { sink.count >= seen }))
        }
        writer.write("last\n")
        let total = counter + 1
        #expect(await clock.advance(by: .milliseconds(20), until: { sink.count >= total }))
        #expect(await clock.pass(10, of: .milliseconds(50)))  // time for a line read twice to show
        try await tail.stop()
        let got = messages(sink.records)
        let expected = (0..<counter).map { "line \($0) " + String(repeating: "p", count: 100) } + ["last"]
        #expect(got.count == expected.count)
        #expect(got == expected)
        #expect(logs.warnings.isEmpty)
    }

    @Test("a writer that keeps writing to the renamed file a little: every line once")
    func renameWithLateWriter() async throws {
        let directory = try TailTemporaryDirectory()
        defer { directory.remove() }
        let path = directory.file("app.log")
        var writer = TailTestWriter(path)
        let sink = RecordingSink()
        let clock = ManualTickClock()
        let tail = RunningTail(tailTestConfig([path]), sink: sink, clock: clock)
        #expect(await tail.opened())
        var counter = 0
        for rotation in 0..<10 {
            for _ in 0..<50 {
                writer.write("line \(counter)\n")
                counter += 1
            }
            // Rotated like logrotate's `create`: renamed and a new file made at once; the writer reopens later.
            rename(path, directory.file("app.log.\(rotation)"))
            let next = TailTestWriter(path)
            // Two polls: the tailer sees the new file at the path and keeps reading the renamed one.
            #expect(await clock.pass(2, of: .milliseconds(20)))
            for _ in 0..<5 {
                writer.write("line \(counter)\n")
                counter += 1
            }
            writer.close()
            writer = next
            // Make sure the tailer has the new file before it is rotated in its turn.
            writer.write("line \(counter)\n")
            counter += 1
            let seen = counter
            #expect(await clock.advance(by: .milliseconds(20), until: { sink.count >= seen }))
        }
        writer.close()
        let total = counter
        #expect(await clock.advance(by: .milliseconds(20), until: { sink.count >= total }))
        #expect(await clock.pass(10, of: .milliseconds(50)))  // time for a line read twice to show
        try await tail.stop()
        let got = messages(sink.records)
        #expect(got.count == counter)
        #expect(Set(got) == Set((0..<counter).map { "line \($0)" }))
    }

    @Test("rotation in a tight loop to names the glob also matches: every line exactly once")
    func fastRotationToMatchingNames() async throws {
        let directory = try TailTemporaryDirectory()
        defer { directory.remove() }
        let path = directory.file("app.log")
        let sink = RecordingSink()
        let clock = ManualTickClock()
        let tail = RunningTail(tailTestConfig([path + "*"], watch: .auto), sink: sink, clock: clock)
        // Watching already: nothing matches yet.
        #expect(await eventually { tail.health.snapshot.state == .idle })
        var writer = TailTestWriter(path)
        var counter = 0
        for rotation in 0..<200 {
            for _ in 0..<10 {
                var chunk = ""
                for _ in 0..<10 {
                    chunk += "line \(counter)\n"
                    counter += 1
                }
                writer.write(chunk)
            }
            rename(path, directory.file("app.log.\(rotation)"))
            writer.close()
            writer = TailTestWriter(path)
        }
        writer.close()
        let total = counter
        #expect(await clock.advance(by: .milliseconds(20), until: { sink.count >= total }))
        #expect(await clock.pass(10, of: .milliseconds(50)))  // time for a line read twice to show
        try await tail.stop()
        let got = messages(sink.records)
        #expect(got.count == counter)
        #expect(Set(got) == Set((0..<counter).map { "line \($0)" }))
        // In order within each incarnation.
        var lastByOrigin: [UInt64: Int] = [:]
        var ordered = true
        for record in sink.records {
            guard let origin = record.logLine?.origin, let text = record.tailMessage,
                let number = Int(text.dropFirst(5))
            else { continue }
            if let last = lastByOrigin[origin.id], last >= number { ordered = false }
            lastByOrigin[origin.id] = number
        }
        #expect(ordered)
    }

    @Test("copytruncate: no line twice, the new content is a new incarnation")
    func copyTruncate() async throws {
        let directory = try TailTemporaryDirectory()
        defer { directory.remove() }
        let path = directory.file("app.log")
        let writer = TailTestWriter(path)
        let sink = RecordingSink()
        let clock = ManualTickClock()
        let tail = RunningTail(tailTestConfig([path]), sink: sink, clock: clock)
        var counter = 0
        for round in 0..<5 {
            for _ in 0..<100 {
                writer.write("line \(counter)\n")
                counter += 1
            }
            let target = counter
            #expect(await clock.advance(by: .milliseconds(20), until: { sink.count >= target }))
            // copytruncate: copy, then truncate in place; the writer (O_APPEND) goes on at the new end.
            try FileManager.default.copyItem(atPath: path, toPath: directory.file("app.log.\(round)"))
            #expect(truncate(path, 0) == 0)
        }
        for _ in 0..<10 {
            writer.write("line \(counter)\n")
            counter += 1
        }
        let total = counter
        #expect(await clock.advance(by: .milliseconds(20), until: { sink.count >= total }))
        #expect(await clock.pass(10, of: .milliseconds(50)))  // time for a line read twice to show
        try await tail.stop()
        let got = messages(sink.records)
        #expect(got == (0..<counter).map { "line \($0)" })
        let origins = Set(sink.records.compactMap { $0.logLine?.origin?.id })
        #expect(origins.count == 6)
    }

    /// logrotate's `copytruncate` with `paths` matching the copies, while the reader is held up (here: waiting for
    /// buffer space) through a whole rotation. The opener opens the new `app.log.1` the moment it appears, while
    /// logrotate is still copying into it; the reader finishes the incarnation from that copy before it takes the
    /// opener's event, so the copy must continue where the incarnation stands although it was small when opened.
    @Test("copytruncate with paths matching the copy, reader held up during the rotation: no line twice")
    func copyTruncateWhileHeldUp() async throws {
        let directory = try TailTemporaryDirectory()
        defer { directory.remove() }
        let path = directory.file("app.log")
        let copy = directory.file("app.log.1")
        let line = { (number: Int) in "line \(number) of the first incarnation, padded to a realistic length\n" }
        // The previous rotation's copy, followed from the start so that `app.log.1` is a watched path.
        writeFile(copy, (0..<10).map { "old line \($0)\n" }.joined())
        writeFile(path, "")
        let sink = RecordingSink(permits: 10 + 50)
        let clock = ManualTickClock()
        let tail = RunningTail(tailTestConfig([directory.file("app.log*")]), sink: sink, clock: clock)
        #expect(await eventually { sink.count == 10 })
        let incarnation = (0..<300).map(line).joined()
        let writer = TailTestWriter(path)
        writer.write(incarnation)
        // The reader sent 50 lines and waits for room for the rest.
        #expect(await clock.advance(by: .milliseconds(20), until: { sink.count == 60 && sink.waiting == 1 }))

        // The rotation, as logrotate does it: shift the old copy, create the new one and copy into it (seen by
        // the opener while it is still short), truncate.
        #expect(rename(copy, directory.file("app.log.2")) == 0)
        let copyWriter = TailTestWriter(copy, truncate: true)
        let firstPart = (0..<20).map(line).joined()
        copyWriter.write(firstPart)
        // 15 poll intervals, while only the opener sleeps on the clock (the reader waits for room): it has opened it.
        #expect(await clock.pass(15, of: .milliseconds(20), sleepers: 1))
        copyWriter.write(String(incarnation.dropFirst(firstPart.count)))
        copyWriter.close()
        #expect(ftruncate(writer.descriptor, 0) == 0)

        sink.grant(100_000)
        writer.write("line 0 of the second incarnation\n")
        #expect(await clock.advance(by: .milliseconds(20), until: { sink.count >= 10 + 300 + 1 }))
        #expect(await clock.pass(25, of: .milliseconds(20)))  // time for a wrong second read of the copy to show
        try await tail.stop()
        let got = messages(sink.records)
        let expected = (0..<10).map { "old line \($0)" } + (0..<300).map { String(line($0).dropLast()) }
            + ["line 0 of the second incarnation"]
        #expect(got.count == expected.count, "\(got.count - expected.count) lines more than written")
        #expect(Set(got) == Set(expected))
    }

    /// Two `copytruncate` rotations close together, the second while the reader finishes the first incarnation from
    /// its copy: the copy, not followed yet, moves on (`app.log.1` → `app.log.2`) and the next copy takes its path
    /// before the reader follows that path. The incarnation must go on in the copy wherever it is, never in the file
    /// now at its old path (CI saw that file's own lines skipped, then the copy read again from its start).
    @Test("copytruncate: a copy moved on while the reader finishes from it; the next file at its path is read as its own")
    func copyMovedOnWhileFinishingFromIt() async throws {
        let directory = try TailTemporaryDirectory()
        defer { directory.remove() }
        let path = directory.file("app.log")
        let copy = directory.file("app.log.1")
        let line = { (incarnation: String, number: Int) in "line \(number) of the \(incarnation) incarnation, padded out\n" }
        // More than a chunk, so the reader reads a second one in the same turn and meets the truncation there.
        let first = (0..<4_000).map { line("first", $0) }
        let linesInFirstChunk = first.reduce(into: (bytes: 0, lines: 0)) { sum, text in
            if sum.bytes + text.utf8.count <= TailEngine.chunkBytes { sum.bytes += text.utf8.count; sum.lines += 1 }
        }.lines
        #expect(first.joined().utf8.count > TailEngine.chunkBytes)
        writeFile(path, first.joined())
        let sink = RecordingSink(permits: 50)
        let clock = ManualTickClock()
        let tail = RunningTail(tailTestConfig([directory.file("app.log*")]), sink: sink, clock: clock)
        #expect(await eventually { sink.count == 50 && sink.waiting == 1 })

        // Rotation 1: copy, truncate; the writer goes on past the offset read, so the next read sees new first bytes.
        try FileManager.default.copyItem(atPath: path, toPath: copy)
        let writer = TailTestWriter(path)
        #expect(ftruncate(writer.descriptor, 0) == 0)
        let second = (0..<4_000).map { line("second", $0) }
        writer.write(second.joined())
        // The reader sends the rest of its first chunk, finds the truncation, and reads 20 lines from the copy.
        sink.grant(linesInFirstChunk - 50 + 20)
        #expect(await eventually { sink.count == linesInFirstChunk + 20 && sink.waiting == 1 })

        // Rotation 2, meanwhile: the copy moves on and a new file (the next copy) takes its path.
        #expect(rename(copy, directory.file("app.log.2")) == 0)
        let other = (0..<100).map { line("other", $0) }
        writeFile(copy, other.joined())

        sink.grant(100_000)
        let total = first.count + second.count + other.count
        #expect(await clock.advance(by: .milliseconds(20), until: { sink.count >= total }))
        #expect(await clock.pass(25, of: .milliseconds(20)))  // time for a wrong second read of the copy to show
        try await tail.stop()
        writer.close()
        let got = messages(sink.records)
        let expected = (first + second + other).map { String($0.dropLast()) }
        #expect(got.count == expected.count, "\(got.count - expected.count) lines more than written")
        #expect(Set(got) == Set(expected), "missing: \(Set(expected).subtracting(got).count)")
    }

    /// A partial line is sent on its own only when the file is still at its end when its timeout passes. A turn can
    /// outlast the timeout while it reads other files behind a slow collector; the line's end, written meanwhile,
    /// must join it, also when the file was copied and truncated meanwhile (the end is then in the copy). CI saw a
    /// line cut at a page boundary of a write in progress sent as two pieces.
    @Test(
        "a partial line whose rest arrives while the reader is held up on another file is sent whole",
        arguments: [false, true])
    func partialLineFinishedWhileHeldUp(copiedAndTruncated: Bool) async throws {
        let directory = try TailTemporaryDirectory()
        defer { directory.remove() }
        let path = directory.file("a.log")
        let writer = TailTestWriter(path)
        // Longer than a fingerprint, so that a copy of it can be found.
        let whole = (0..<10).map { "a\($0) complete, padded out to a realistic length" }
        writer.write(whole.map { $0 + "\n" }.joined() + "a10 begins")
        writeFile(directory.file("b.log"), (0..<200).map { "b \($0)\n" }.joined())
        let sink = RecordingSink(permits: 10 + 10)
        let clock = ManualTickClock()
        let tail = RunningTail(tailTestConfig([directory.file("*.log")]), sink: sink, clock: clock)
        // a.log read to its end (its partial line kept back), then b.log until the sink has no room.
        #expect(await eventually { sink.count == 20 && sink.waiting == 1 })
        #expect(messages(sink.records).first == whole[0])

        clock.advance(by: .seconds(1))  // longer than the partial-line timeout, within the same turn
        writer.write(" and ends\n")
        if copiedAndTruncated {
            try FileManager.default.copyItem(atPath: path, toPath: directory.file("a.log.1"))
            #expect(ftruncate(writer.descriptor, 0) == 0)
        }
        sink.grant(100_000)
        #expect(await clock.advance(by: .milliseconds(20), until: { sink.count >= 211 }))
        #expect(await clock.pass(25, of: .milliseconds(20)))  // time for a wrongly cut line to show
        try await tail.stop()
        writer.close()
        let got = messages(sink.records)
        #expect(got.count == 211)
        #expect(Set(got) == Set(whole + ["a10 begins and ends"] + (0..<200).map { "b \($0)" }))
    }

    @Test("plain truncation to a shorter content restarts at 0 with a new origin id")
    func plainTruncation() async throws {
        let directory = try TailTemporaryDirectory()
        defer { directory.remove() }
        let path = directory.file("app.log")
        writeFile(path, "a fairly long first line\nanother long line here\n")
        let sink = RecordingSink()
        let clock = ManualTickClock()
        let tail = RunningTail(tailTestConfig([path]), sink: sink, clock: clock)
        #expect(await eventually { sink.count >= 2 })
        // Truncated and rewritten with something shorter than the offset read: the size shows it.
        writeFile(path, "short\n")
        #expect(await clock.advance(by: .milliseconds(20), until: { sink.count >= 3 }))
        // Rewritten with something longer than the offset read: the fingerprint shows it.
        writeFile(path, "XXXXXXXX a different first line, long enough to pass the old offset\nand more\n")
        #expect(await clock.advance(by: .milliseconds(20), until: { sink.count >= 5 }))
        #expect(await clock.pass(10, of: .milliseconds(50)))  // time for a line read twice to show
        try await tail.stop()
        #expect(
            messages(sink.records) == [
                "a fairly long first line", "another long line here", "short",
                "XXXXXXXX a different first line, long enough to pass the old offset", "and more",
            ])
        let origins = sink.records.compactMap { $0.logLine?.origin }
        #expect(origins[2].offset == 6)
        #expect(Set(origins.map(\.id)).count == 3)
    }

    @Test("deletion of a file being read: read to its end, then a new file at the path is read")
    func deletion() async throws {
        let directory = try TailTemporaryDirectory()
        defer { directory.remove() }
        let path = directory.file("app.log")
        let writer = TailTestWriter(path)
        let sink = RecordingSink()
        // inotify wakes the reader; its clock only decides when the deleted file has lingered long enough.
        let clock = ManualTickClock()
        let tail = RunningTail(tailTestConfig([path], watch: .auto), sink: sink, clock: clock)
        for index in 0..<500 { writer.write("line \(index)\n") }
        #expect(await eventually { sink.count >= 500 })
        for index in 500..<1000 { writer.write("line \(index)\n") }
        unlink(path)
        // The writer still holds it and writes some more.
        for index in 1000..<1010 { writer.write("line \(index)\n") }
        writer.close()
        #expect(await eventually { sink.count >= 1010 })
        // Deleted and quiet, the file stays open while the clock stands still (a writer may not have reopened yet)...
        #expect(descriptorsOpen(on: path + " (deleted)").count >= 1)
        // ...and is closed once it has been quiet for the linger (moved on in steps: the reader may not have seen
        // the deletion yet when the clock first moves).
        #expect(
            await eventually {
                if descriptorsOpen(on: path + " (deleted)").isEmpty { return true }
                clock.advance(by: .milliseconds(250))
                return false
            })
        writeFile(path, "reborn\n")
        #expect(await eventually { sink.count >= 1011 })
        try await tail.stop()
        let got = messages(sink.records)
        #expect(got == (0..<1010).map { "line \($0)" } + ["reborn"])
        #expect(sink.records[0].logLine?.origin?.id != sink.records[1010].logLine?.origin?.id)
    }

    // MARK: Back-pressure

    @Test("back-pressure: reading pauses while the sink is full, nothing is dropped, it resumes on grant")
    func backPressure() async throws {
        let directory = try TailTemporaryDirectory()
        defer { directory.remove() }
        let path = directory.file("app.log")
        let total = 5000
        writeFile(path, (0..<total).map { "line \($0)\n" }.joined())
        let sink = RecordingSink(permits: 100)
        let clock = ManualTickClock()
        let tail = RunningTail(tailTestConfig([path]), sink: sink, clock: clock)
        #expect(await eventually { sink.count == 100 && sink.waiting == 1 })
        // Ten poll intervals pass while the reader waits for the sink (only the opener sleeps on the clock then).
        #expect(await clock.pass(10, of: .milliseconds(20), sleepers: 1))
        #expect(sink.count == 100)
        #expect(sink.waiting == 1)
        var granted = 100
        var rounds = 0
        while sink.count < total, rounds < 1000 {
            sink.grant(500)
            granted += 500
            let target = min(granted, total)
            #expect(await eventually { sink.count >= target })
            rounds += 1
        }
        try await tail.stop()
        #expect(messages(sink.records) == (0..<total).map { "line \($0)" })
        #expect(sink.emitCalls == 0)
    }
}
