import Logging
import NIOCore
import NIOPosix
import Testing
import UplinkCore
import UplinkTestSupport

@testable import UplinkSources

/// Reading in the inotify handler (`TailEngine.readInPlace`): a tail source whose task runs on the event loop its
/// inotify channels live on, as the agent runs it (`SourceService` on the send path's loop). The common case (a
/// write of whole lines to the one followed file, room in the buffer) is read there without waking the task; every
/// other case goes to the task, and in both every line arrives once, in order.
@Suite("Tail reads in place", .timeLimit(.minutes(2)))
struct TailInPlaceTests {
    /// A tail source (inotify, linger 0) following an empty `app.log` in a temporary directory for `sink`, its task
    /// preferring its own loop, which is also its context's loop; `writer` appends to the file.
    struct Running {
        let directory: TailTemporaryDirectory
        let path: String
        let writer: TailTestWriter
        let group = MultiThreadedEventLoopGroup(numberOfThreads: 1)
        let task: Task<Void, any Error>
        let health = SourceHealth()

        /// `alsoFollowed`: more files, created empty beside `app.log` and followed too.
        init(sink: RecordingSink, alsoFollowed: [String] = []) throws {
            directory = try TailTemporaryDirectory()
            path = directory.file("app.log")
            for file in [path] + alsoFollowed.map(directory.file) { writeFile(file, "") }
            writer = TailTestWriter(path)
            let loop = group.next()
            var config = tailTestConfig([directory.file("*.log")], watch: .auto, startAt: .beginning)
            // Only the handler's reads and the writes' own turns: no look of the safety net's on the way.
            config.discoveryInterval = .seconds(60)
            config.pollInterval = .seconds(60)
            config.partialLineTimeout = .seconds(60)
            let source = TailSource(name: "in-place", config: config, clock: SystemTickClock())
            let context = SourceContext(
                sink: sink, logger: Logger(label: "in-place"), health: health, eventLoop: loop)
            task = Task {
                try await withTaskExecutorPreference(EventLoopTaskExecutor(loop: loop)) {
                    try await source.run(context: context)
                }
            }
        }

        /// Whether the source opened the file in time.
        func opened() async -> Bool {
            await eventually { health.snapshot.state == .healthy }
        }

        func stop() async throws {
            task.cancel()
            try await task.value
            try await group.shutdownGracefully()
            writer.close()
            directory.remove()
        }
    }

    @Test("whole lines written one write at a time are read in the handler, each once, in order")
    func wholeLinesAreReadInPlace() async throws {
        let sink = RecordingSink()
        let tail = try Running(sink: sink)
        #expect(await tail.opened())
        let writer = tail.writer
        for index in 0..<40 {
            writer.write("line \(index)\n")
            // One write at a time: each is its own report, read before the next is written.
            #expect(await eventually { sink.count == index + 1 }, "line \(index)")
        }
        #expect(messages(sink.records) == (0..<40).map { "line \($0)" })
        // Most writes find the task idle; a write that lands while it runs a turn (a checkpoint write) is its own.
        #expect(sink.ifRoomStored > 0, "some lines were read in the handler")
        try await tail.stop()
    }

    @Test("two files written in turn are each read in the handler, each line once, in its file's order")
    func twoFilesAreReadInPlace() async throws {
        let sink = RecordingSink()
        let tail = try Running(sink: sink, alsoFollowed: ["other.log"])
        #expect(await tail.opened())
        let other = TailTestWriter(tail.directory.file("other.log"))
        defer { other.close() }
        for index in 0..<20 {
            tail.writer.write("app \(index)\n")
            other.write("other \(index)\n")
            #expect(await eventually { sink.count == 2 * (index + 1) }, "round \(index)")
        }
        let byPath = Dictionary(grouping: sink.records) { $0.tailField("path") ?? "" }
        #expect(messages(byPath[tail.path] ?? []) == (0..<20).map { "app \($0)" })
        #expect(messages(byPath[tail.directory.file("other.log")] ?? []) == (0..<20).map { "other \($0)" })
        #expect(sink.ifRoomStored > 0, "some lines were read in the handler")
        try await tail.stop()
    }

    @Test("a partial line, a truncation and a full buffer are the task's: nothing is lost or read twice")
    func otherCasesGoToTheTask() async throws {
        let sink = RecordingSink(permits: 1)
        let tail = try Running(sink: sink)
        #expect(await tail.opened())
        let (writer, path) = (tail.writer, tail.path)

        // Room for one record: the first line goes in place, the second finds no room and waits in the task.
        writer.write("first\n")
        #expect(await eventually { sink.count == 1 })
        writer.write("second\n")
        #expect(await eventually { sink.waiting == 1 })
        #expect(sink.count == 1)
        sink.grant(1000)
        #expect(await eventually { sink.count == 2 })

        // A write without its newline: the handler declines and the task keeps it as a partial line (its timeout is
        // a minute here); the rest of the line completes it, whichever of the two reads it.
        writer.write("par")
        writer.write("tial\n")
        #expect(await eventually { sink.count == 3 })

        // Truncated and rewritten shorter: a read at the old offset finds nothing, so the task looks and restarts
        // the file from its start.
        writeFile(path, "new\n")
        #expect(await eventually { sink.count == 4 })
        // Truncated and rewritten longer than was read: the handler's read at the old offset finds data, but the
        // file's first bytes are no longer the ones read; it declines, and the task reads the new content whole.
        writeFile(path, "renewed, and longer than what was read\n")
        #expect(await eventually { sink.count == 5 })
        #expect(messages(sink.records) == ["first", "second", "partial", "new", "renewed, and longer than what was read"])
        try await tail.stop()
    }
}
