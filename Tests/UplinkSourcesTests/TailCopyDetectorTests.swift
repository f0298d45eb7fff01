import Foundation
import Logging
import Testing
import UplinkCore
import UplinkFiles
import UplinkTestSupport

@testable import UplinkSources

/// `TailCopyDetector` on its own: real files in a temporary directory, followed as the engine follows them (an open
/// descriptor, the fingerprint of the first bytes), time on a `ManualTickClock`.
@Suite("Tail copy detector")
struct TailCopyDetectorTests {
    /// Lines of text numbered from `first`, `count` of them (`0000 the quick brown fox jumps over it`: 39 bytes each).
    static func content(_ first: Int, _ count: Int, tag: String = "the quick brown fox") -> String {
        (first..<first + count).map { number in
            let digits = String(number)
            return String(repeating: "0", count: max(0, 4 - digits.count)) + digits + " \(tag) jumps over it\n"
        }.joined()
    }

    /// The file at `path` followed from offset 0 (as a new file is), in `copyState`.
    /// A file set following `files`.
    static func following(_ files: TailedFile...) -> TailFileSet {
        var set = TailFileSet()
        for file in files { set.add(file) }
        return set
    }

    static func follow(_ path: String, _ copyState: TailCopyState = .none, now: ContinuousClock.Instant) throws -> TailedFile {
        let descriptor = open(path, O_RDONLY | O_CLOEXEC)
        try #require(descriptor >= 0, "cannot open \(path)")
        let status = try #require(FileStatus(descriptor: descriptor))
        let scratch = UnsafeMutableRawBufferPointer.allocate(byteCount: TailFingerprint.maximumLength, alignment: 16)
        defer { scratch.deallocate() }
        let file = TailedFile(
            descriptor: descriptor, inode: status.identity, path: path,
            fingerprint: TailFingerprint.current(descriptor: descriptor, scratch: scratch), originID: newTailOriginID(),
            offset: 0, maxLineBytes: 4096, multiline: nil, now: now)
        file.copyState = copyState
        return file
    }

    /// `file` read to `offset`, every line sent and acknowledged.
    static func read(_ file: TailedFile, to offset: UInt64) {
        file.readOffset = offset
        file.emittedOffset = offset
        file.acknowledgedOffset = offset
    }

    static func detector(_ clock: ManualTickClock) -> TailCopyDetector {
        TailCopyDetector(clock: clock, opener: TailOpener(), logger: Logger(label: "test"), emptyFileWait: TailEngine.parkAfter)
    }

    static func undecidedSince(_ file: TailedFile) -> ContinuousClock.Instant?? {
        guard case .undecided(let since) = file.copyState else { return nil }
        return .some(since)
    }

    static func isOrdinary(_ file: TailedFile) -> Bool {
        if case .none = file.copyState { return true }
        return false
    }

    @Test("a new file whose first 256 bytes are a followed file's is its copy: it waits while that incarnation is followed")
    func fullFingerprintIsACopy() throws {
        let directory = try TailTemporaryDirectory()
        defer { directory.remove() }
        let clock = ManualTickClock()
        let copies = Self.detector(clock)
        let text = Self.content(0, 20)
        writeFile(directory.file("app.log"), text)
        writeFile(directory.file("app.log.1"), String(text.prefix(500)))  // copied before the last lines were written
        writeFile(directory.file("other.log"), Self.content(0, 20, tag: "a different animal"))
        let source = try Self.follow(directory.file("app.log"), now: clock.now)
        Self.read(source, to: UInt64(text.utf8.count))
        let copy = try Self.follow(directory.file("app.log.1"), .undecided(since: nil), now: clock.now)
        let other = try Self.follow(directory.file("other.log"), .undecided(since: nil), now: clock.now)
        defer { for file in [source, copy, other] { file.close() } }
        let files = [source, copy, other]

        #expect(copies.mayRead(copy, among: files) == .wait)
        guard case .copy(let of, let origin) = copy.copyState else {
            Issue.record("not taken for a copy: \(copy.copyState)")
            return
        }
        #expect(of === source && origin == source.originID)
        #expect(copy.atEnd)
        // Its own first bytes match nothing followed: a file of its own, read at once.
        #expect(copies.mayRead(other, among: files) == .read(checkpointMoved: false))
        #expect(Self.isOrdinary(other))
        // Already a file of its own: read, however it begins.
        #expect(copies.mayRead(source, among: files) == .read(checkpointMoved: false))

        // While the source's incarnation is followed, the copy waits, however often it is asked.
        #expect(copies.mayRead(copy, among: files) == .wait)
        #expect(copies.decisionDeadline(of: copy) == nil)

        // The incarnation ends without a truncation (rotated away and closed): what the copy holds was sent from the
        // source, and the copy goes on as that incarnation from its end.
        source.close()
        #expect(copies.mayRead(copy, among: files) == .read(checkpointMoved: true))
        #expect(Self.isOrdinary(copy))
        #expect(copy.originID == source.originID && copy.fingerprint == source.fingerprint)
        #expect(copy.readOffset == 500 && copy.emittedOffset == 500 && copy.acknowledgedOffset == 500)
    }

    @Test("a short new file that begins like a followed file waits at most the decision limit, then is read as a file of its own")
    func shortFileWaitsAtMostTheLimit() throws {
        let directory = try TailTemporaryDirectory()
        defer { directory.remove() }
        let clock = ManualTickClock()
        let copies = Self.detector(clock)
        let text = Self.content(0, 20)
        writeFile(directory.file("app.log"), text)
        writeFile(directory.file("app.log.1"), String(text.prefix(100)))
        writeFile(directory.file("app.log.2"), String(text.prefix(100)))
        writeFile(directory.file("short.log"), "0000 something else\n")
        try FileManager.default.createDirectory(atPath: directory.file("elsewhere"), withIntermediateDirectories: true)
        writeFile(directory.file("elsewhere/app.log.1"), String(text.prefix(100)))
        let source = try Self.follow(directory.file("app.log"), now: clock.now)
        let short = try Self.follow(directory.file("app.log.1"), .undecided(since: nil), now: clock.now)
        let growing = try Self.follow(directory.file("app.log.2"), .undecided(since: nil), now: clock.now)
        let unlike = try Self.follow(directory.file("short.log"), .undecided(since: nil), now: clock.now)
        let elsewhere = try Self.follow(directory.file("elsewhere/app.log.1"), .undecided(since: nil), now: clock.now)
        defer { for file in [source, short, growing, unlike, elsewhere] { file.close() } }
        let files = [source, short, growing, unlike, elsewhere]

        let start = clock.now
        #expect(copies.mayRead(short, among: files) == .wait)
        #expect(Self.undecidedSince(short) == .some(start))
        #expect(copies.decisionDeadline(of: short) == start.advanced(by: TailCopyDetector.decisionLimit))
        #expect(copies.mayRead(growing, among: files) == .wait)
        // A short file that begins otherwise, or lies in another directory, is read at once.
        #expect(copies.mayRead(unlike, among: files) == .read(checkpointMoved: false))
        #expect(copies.mayRead(elsewhere, among: files) == .read(checkpointMoved: false))

        // One that gets its first 256 bytes within the limit shows it is a copy.
        clock.advance(by: .milliseconds(500))
        let writer = TailTestWriter(directory.file("app.log.2"))
        writer.write(String(text.dropFirst(100)))
        writer.close()
        #expect(copies.mayRead(growing, among: files) == .wait)
        guard case .copy(let of, _) = growing.copyState, of === source else {
            Issue.record("the completed copy was not taken for one: \(growing.copyState)")
            return
        }

        // One that stays short waits until the limit, not a moment longer, and is then a file of its own.
        clock.advance(by: TailCopyDetector.decisionLimit - .milliseconds(501))
        #expect(copies.mayRead(short, among: files) == .wait)
        #expect(Self.undecidedSince(short) == .some(start))
        clock.advance(by: .milliseconds(1))
        #expect(copies.mayRead(short, among: files) == .read(checkpointMoved: false))
        #expect(Self.isOrdinary(short))
        #expect(copies.decisionDeadline(of: short) == nil)
        #expect(short.readOffset == 0)  // read from its start, as any new file
    }

    @Test("an empty new file is not a copy: it waits while empty, and once quiet as long as a file is before parking it is an ordinary file")
    func emptyFileIsNotACopy() throws {
        let directory = try TailTemporaryDirectory()
        defer { directory.remove() }
        let clock = ManualTickClock()
        let copies = Self.detector(clock)
        writeFile(directory.file("app.log"), Self.content(0, 20))
        writeFile(directory.file("app.log.1"), "")
        let source = try Self.follow(directory.file("app.log"), now: clock.now)
        let empty = try Self.follow(directory.file("app.log.1"), .undecided(since: nil), now: clock.now)
        defer { for file in [source, empty] { file.close() } }
        let files = [source, empty]

        #expect(copies.mayRead(empty, among: files) == .wait)
        #expect(empty.atEnd)
        #expect(Self.undecidedSince(empty) == .some(nil))
        // No bytes, nothing to decide on: no deadline to wake up for (it is looked at with every turn and event).
        #expect(copies.decisionDeadline(of: empty) == nil)
        clock.advance(by: TailEngine.parkAfter - .milliseconds(1))
        #expect(copies.mayRead(empty, among: files) == .wait)
        #expect(Self.undecidedSince(empty) == .some(nil))
        clock.advance(by: .milliseconds(1))
        #expect(copies.mayRead(empty, among: files) == .wait)  // nothing to read yet
        #expect(Self.isOrdinary(empty))
        #expect(copies.mayRead(empty, among: files) == .read(checkpointMoved: false))

        // Written to later with a followed file's first bytes, it is still a file of its own.
        writeFile(directory.file("app.log.1"), Self.content(0, 20))
        #expect(copies.mayRead(empty, among: files) == .read(checkpointMoved: false))
    }

    @Test("the newest file beside a truncated file that holds its incarnation's first bytes is found as its copy")
    func newestMatchingFileIsTheCopy() throws {
        let directory = try TailTemporaryDirectory()
        defer { directory.remove() }
        let clock = ManualTickClock()
        let copies = Self.detector(clock)
        let text = Self.content(0, 20)
        let bytes = Array(text.utf8)
        writeFile(directory.file("app.log"), text)
        writeFile(directory.file("app.log.1"), text)  // an older copy of the same incarnation
        writeFile(directory.file("app.log.2"), text + Self.content(20, 3))  // the newest copy
        writeFile(directory.file("app.log.3"), Self.content(0, 20, tag: "a different animal"))  // newest, another file
        try FileManager.default.createDirectory(atPath: directory.file("app.log.d"), withIntermediateDirectories: true)
        try FileManager.default.createSymbolicLink(atPath: directory.file("latest"), withDestinationPath: "app.log.1")
        for (name, seconds) in [("app.log.1", 1_000), ("app.log.2", 2_000), ("app.log.3", 3_000)] {
            try FileManager.default.setAttributes(
                [.modificationDate: Date(timeIntervalSince1970: TimeInterval(seconds))], ofItemAtPath: directory.file(name))
        }
        let source = try Self.follow(directory.file("app.log"), now: clock.now)
        defer { source.close() }
        Self.read(source, to: 400)  // behind when the copy was made
        #expect(truncate(directory.file("app.log"), 0) == 0)

        let found = try #require(copies.copy(of: source, in: Self.following(source)))
        #expect(found.path == directory.file("app.log.2") && found.followed == nil)
        // Opened for the caller, who reads the incarnation's end from it and closes it.
        var rest = [UInt8](repeating: 0, count: 1024)
        let count = rest.withUnsafeMutableBytes { SourceFiles.readCount(found.descriptor, into: $0, at: 400) }
        #expect(Array(rest.prefix(count)) == Array(bytes[400...]) + Array(Self.content(20, 3).utf8))
        SourceFiles.closeDescriptor(found.descriptor)

        // The newest copy is followed and still undecided: it is the one, with its own descriptor.
        let followed = try Self.follow(directory.file("app.log.2"), .undecided(since: nil), now: clock.now)
        defer { followed.close() }
        var result = try #require(
            copies.copy(of: source, in: Self.following(source, followed)))
        #expect(result.followed === followed && result.descriptor == followed.descriptor)
        // Known as this incarnation's copy: found without a search.
        followed.copyState = .copy(of: source, origin: source.originID)
        result = try #require(copies.copy(of: source, in: Self.following(source, followed)))
        #expect(result.followed === followed && result.path == followed.path)
        // Read as a file of its own already: its lines were sent, reading them again would repeat them.
        followed.copyState = .none
        #expect(copies.copy(of: source, in: Self.following(source, followed)) == nil)

        // An incarnation shorter than 256 bytes has no copy: a short header line could begin any file.
        writeFile(directory.file("tiny.log"), "0000 the quick brown fox jumps over it\n")
        writeFile(directory.file("tiny.log.1"), "0000 the quick brown fox jumps over it\n")
        let tiny = try Self.follow(directory.file("tiny.log"), now: clock.now)
        defer { tiny.close() }
        #expect(copies.copy(of: tiny, in: Self.following(tiny)) == nil)
    }

    @Test("an incarnation goes on in its copy: origin, offsets and the lines awaiting acknowledgement move with it")
    func continueIncarnation() throws {
        let directory = try TailTemporaryDirectory()
        defer { directory.remove() }
        let clock = ManualTickClock()
        let copies = Self.detector(clock)
        let text = Self.content(0, 20)  // 780 bytes
        writeFile(directory.file("app.log"), text)
        writeFile(directory.file("long.1"), text)
        writeFile(directory.file("short.1"), String(text.prefix(500)))
        let source = try Self.follow(directory.file("app.log"), now: clock.now)
        let long = try Self.follow(directory.file("long.1"), .undecided(since: nil), now: clock.now)
        let short = try Self.follow(directory.file("short.1"), .undecided(since: nil), now: clock.now)
        defer { for file in [source, long, short] { file.close() } }

        // Read to 600, acknowledged to 300: the copy holds every line sent, and takes them over.
        Self.read(source, to: 300)
        source.readOffset = 600
        source.enqueue(sequence: 7, offset: 410)
        source.enqueue(sequence: 8, offset: 600)
        copies.continueIncarnation(of: source, in: long)
        #expect(long.originID == source.originID && long.fingerprint == source.fingerprint && Self.isOrdinary(long))
        #expect(long.readOffset == 600 && long.emittedOffset == 600 && long.acknowledgedOffset == 300)
        #expect(long.hasUnacknowledged && !source.hasUnacknowledged)
        #expect(long.acknowledge(through: 8) && long.acknowledgedOffset == 600)

        // The copy ends before lines that were sent from the source: those stay the source's to acknowledge.
        source.enqueue(sequence: 9, offset: 700)
        source.readOffset = 700
        copies.continueIncarnation(of: source, in: short)
        #expect(short.readOffset == 500 && short.emittedOffset == 500 && short.acknowledgedOffset == 500)
        #expect(!short.hasUnacknowledged && source.hasUnacknowledged)
    }
}
