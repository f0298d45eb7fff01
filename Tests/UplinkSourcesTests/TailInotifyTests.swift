import Glibc
import Synchronization
import Testing
import UplinkTestSupport

@testable import UplinkSources

/// `TailInotify` driven directly, with real files and real inotify instances read as channels on a NIO event loop.
/// The wakeup runs on a clock nobody advances, so a wait ends only when inotify's handler signals it; every wait is
/// bounded by `eventually` (a missed wake-up fails the test instead of hanging it).
@Suite("Tail inotify", .timeLimit(.minutes(2)))
struct TailInotifyTests {
    /// How the written file is watched: through its open descriptor, or by name in its watched directory while it is
    /// parked (closed).
    enum Watched: String, CaseIterable, CustomTestStringConvertible {
        case openFile, parkedByName
        var testDescription: String { rawValue }
    }

    /// A file in a temporary directory, watched by a fresh `TailInotify` the way `watched` says, with a wakeup on a
    /// clock nobody advances.
    struct Watching {
        let directory: TailTemporaryDirectory
        let path: String
        let writer: TailTestWriter
        let clock = ManualTickClock()
        let wakeup: SourceWakeup
        let inotify: TailInotify
        let reading: Int32

        init(_ watched: Watched) throws {
            directory = try TailTemporaryDirectory()
            path = directory.file("app.log")
            writer = TailTestWriter(path)
            wakeup = SourceWakeup(clock: clock)
            inotify = try TailInotify.make(opener: TailOpener(), wakeup: wakeup, eventLoop: nil).get()
            reading = try SourceFiles.openForReading(path).get()
            switch watched {
            case .openFile:
                _ = try inotify.watchModifications(of: reading).get()
            case .parkedByName:
                #expect(inotify.watch(directories: [directory.path]) == nil)
                #expect(inotify.setParked(path, true) == nil)
            }
        }

        /// The wakeup's next wake-up (`TailInotifyTests.nextWakeup`).
        func nextWakeup() async -> Bool {
            await TailInotifyTests.nextWakeup(wakeup, clock: clock)
        }

        func close() {
            SourceFiles.closeDescriptor(reading)
            directory.remove()
        }
    }

    /// The next wake-up of `wakeup`, awaited in a task of its own; whether it came (within `eventually`'s bound).
    static func nextWakeup(_ wakeup: SourceWakeup, clock: ManualTickClock) async -> Bool {
        let woken = Flag()
        let waiting = Task {
            await wakeup.wait(until: clock.now.advanced(by: .seconds(3600)))
            woken.set()
        }
        let came = await eventually { woken.isSet }
        waiting.cancel()
        return came
    }

    @Test(
        "a write after the reader took the events and before it armed again is reported once it arms",
        arguments: Watched.allCases)
    func writeBetweenReportAndArm(watched: Watched) async throws {
        let watching = try Watching(watched)
        defer { watching.close() }
        let inotify = watching.inotify

        // Every write lands in the window: the channel starts disarmed (as after a report), and after each report
        // the handler has read the write's event, woken the reader and left the channel without a pending read;
        // only then the next write comes, before `arm()`.
        for line in 0..<100 {
            #expect(!inotify.isArmed, "line \(line): the channel is disarmed before the write")
            watching.writer.write("line \(line)\n")
            inotify.arm()
            let woken = await watching.nextWakeup()
            #expect(woken, "the write before line \(line)'s arm was reported")
            guard woken else { break }
            if watched == .parkedByName {
                let modified = inotify.takeModifiedParked()
                #expect(modified.paths == [watching.path] && !modified.lost, "line \(line): \(modified)")
            }
        }
        await inotify.stop()
    }

    @Test(
        "while the reader waits idle, each report leaves the channel armed and every write is reported without arming",
        arguments: Watched.allCases)
    func idleReaderKeepsTheChannelArmed(watched: Watched) async throws {
        let watching = try Watching(watched)
        defer { watching.close() }
        let inotify = watching.inotify

        inotify.arm()
        inotify.setReaderWaitingIdle(true)
        for line in 0..<100 {
            watching.writer.write("line \(line)\n")
            let woken = await watching.nextWakeup()
            #expect(woken, "line \(line)'s write was reported")
            guard woken else { break }
            #expect(inotify.isArmed, "line \(line): the channel stays armed for the idle reader")
            if watched == .parkedByName {
                let modified = inotify.takeModifiedParked()
                #expect(modified.paths == [watching.path] && !modified.lost, "line \(line): \(modified)")
            }
        }
        // A reader that is busy (or lingers) is not woken for every write: the next report disarms the channel.
        inotify.setReaderWaitingIdle(false)
        watching.writer.write("busy\n")
        #expect(await watching.nextWakeup())
        #expect(await eventually { !inotify.isArmed })
        await inotify.stop()
    }

    @Test("stop closes the channels, never the instances' own descriptors: nothing is closed twice")
    func stopClosesOnlyTheChannels() async throws {
        let directory = try TailTemporaryDirectory()
        defer { directory.remove() }
        let path = directory.file("app.log")
        let writer = TailTestWriter(path)
        let clock = ManualTickClock()
        // Made and stopped again and again: a descriptor closed twice would, sooner or later, be one that another
        // instance (or the process's timers) holds by then.
        for _ in 0..<50 {
            let inotify = try TailInotify.make(opener: TailOpener(), wakeup: SourceWakeup(clock: clock), eventLoop: nil).get()
            #expect(inotify.watch(directories: [directory.path]) == nil)
            inotify.arm()
            await inotify.stop()
            // Held by the object until it goes: still the inotify instances, however the channels were closed.
            for descriptor in [inotify.descriptors.directories, inotify.descriptors.modifications] {
                #expect(Self.target(of: descriptor) == "anon_inode:inotify")
            }
        }
        // A fresh instance still works, and so do the waits that follow it.
        let wakeup = SourceWakeup(clock: clock)
        let inotify = try TailInotify.make(opener: TailOpener(), wakeup: wakeup, eventLoop: nil).get()
        let reading = try SourceFiles.openForReading(path).get()
        defer { SourceFiles.closeDescriptor(reading) }
        _ = try inotify.watchModifications(of: reading).get()
        inotify.arm()
        writer.write("after the churn\n")
        #expect(await Self.nextWakeup(wakeup, clock: clock))
        await inotify.stop()
    }

    @Test("a directory is watched for modifications only while it holds a parked path: a neighbour's writes queue nothing")
    func neighbourWritesQueueNothing() async throws {
        let watching = try Watching(.openFile)
        defer { watching.close() }
        let inotify = watching.inotify
        let events = inotify.descriptors.modifications
        #expect(inotify.watch(directories: [watching.directory.path]) == nil)
        #expect(inotify.modificationWatchedDirectories.isEmpty)
        // The open file's write is reported, and the report leaves the channel without a pending read: from here on
        // only this test reads the instance.
        inotify.arm()
        watching.writer.write("one\n")
        #expect(await watching.nextWakeup())
        #expect(!inotify.isArmed)
        Self.drain(events)

        let neighbour = TailTestWriter(watching.directory.file("syslog"))
        neighbour.write("noise\n")
        #expect(!Self.hasEvents(events), "nothing watches the neighbour while no file of the directory is parked")

        // Parked paths bring the directory's watch; the last one unparked takes it away.
        let parked = [watching.directory.file("a.log"), watching.directory.file("b.log")]
        for path in parked { #expect(inotify.setParked(path, true) == nil) }
        #expect(inotify.modificationWatchedDirectories == [watching.directory.path])
        neighbour.write("noise\n")
        #expect(Self.hasEvents(events), "the directory's watch reports every file in it")
        #expect(inotify.setParked(parked[0], false) == nil)
        #expect(inotify.modificationWatchedDirectories == [watching.directory.path])
        #expect(inotify.setParked(parked[1], false) == nil)
        #expect(inotify.modificationWatchedDirectories.isEmpty)
        Self.drain(events)
        neighbour.write("noise\n")
        #expect(!Self.hasEvents(events), "the watch went with the last parked path")
        await inotify.stop()
    }

    @Test("a path's directory is the one the glob expansion joins it with")
    func directoryOfPath() {
        for (path, directory) in [("/var/log/app.log", "/var/log"), ("/app.log", "/"), ("app.log", "."), ("logs/app.log", "logs")] {
            #expect(TailInotify.directory(of: path) == directory)
            #expect(TailGlob.path(of: "app.log", in: directory) == path)
        }
    }

    /// Whether an inotify instance has events queued.
    static func hasEvents(_ descriptor: Int32) -> Bool {
        var entry = pollfd(fd: descriptor, events: Int16(POLLIN), revents: 0)
        return poll(&entry, 1, 0) == 1 && entry.revents & Int16(POLLIN) != 0
    }

    /// Reads and drops every event queued on a non-blocking inotify instance.
    static func drain(_ descriptor: Int32) {
        var buffer = [UInt8](repeating: 0, count: TailInotify.receiveBytes)
        while read(descriptor, &buffer, buffer.count) > 0 {}
    }

    /// What `/proc/self/fd/<descriptor>` points to.
    static func target(of descriptor: Int32) -> String? {
        var buffer = [CChar](repeating: 0, count: 256)
        let count = readlink("/proc/self/fd/\(descriptor)", &buffer, buffer.count - 1)
        guard count >= 0 else { return nil }
        return String(decoding: buffer[..<count].map { UInt8(bitPattern: $0) }, as: UTF8.self)
    }
}
