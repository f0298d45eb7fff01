import Glibc
import Testing
import UplinkTestSupport

@testable import UplinkSources

@Suite("Tail discovery: when to look and what to forget")
struct TailDiscoveryTests {
    private static let origin = ContinuousClock.now

    private func discovery(paths: [String], exclude: [String] = [], interval: Duration = .seconds(10)) -> TailDiscovery {
        var config = TailConfig()
        config.paths = paths
        config.exclude = exclude
        config.discoveryInterval = interval
        return TailDiscovery(config: config, now: Self.origin)
    }

    private func touch(_ path: String) throws {
        let descriptor = open(path, O_WRONLY | O_CREAT | O_CLOEXEC, 0o644)
        try #require(descriptor >= 0, "cannot create \(path)")
        close(descriptor)
    }

    /// Sets the modification time of `path` an hour back, so that a look trusts it (see `directoriesUnchanged`).
    private func age(_ path: String) throws {
        var times = [timespec(tv_sec: time(nil) - 3600, tv_nsec: 0), timespec(tv_sec: time(nil) - 3600, tv_nsec: 0)]
        try #require(utimensat(AT_FDCWD, path, &times, 0) == 0)
    }

    @Test("a look is due at start, then every interval or when asked for; a skipped one waits an interval")
    func dueTimes() throws {
        let directory = try TestDirectories.make("tail-discovery")
        var discovery = discovery(paths: [directory + "/*.log"])
        #expect(discovery.isDue(now: Self.origin))
        _ = discovery.look(now: Self.origin)
        #expect(discovery.count == 0, "counted when finished")
        _ = discovery.finishLook(watched: [], found: [], followed: { _ in false }, now: Self.origin)
        #expect(discovery.count == 1)
        #expect(!discovery.isDue(now: Self.origin.advanced(by: .seconds(9))))
        #expect(discovery.isDue(now: Self.origin.advanced(by: .seconds(10))))
        discovery.request()
        #expect(discovery.isDue(now: Self.origin.advanced(by: .seconds(1))))
        _ = discovery.look(now: Self.origin.advanced(by: .seconds(1)))
        #expect(!discovery.isDue(now: Self.origin.advanced(by: .seconds(2))), "a look answers the request")
        discovery.skip(now: Self.origin.advanced(by: .seconds(11)))
        #expect(!discovery.isDue(now: Self.origin.advanced(by: .seconds(20))))
        #expect(discovery.isDue(now: Self.origin.advanced(by: .seconds(21))))
        #expect(discovery.count == 1, "an unfinished or skipped look is not counted")
    }

    @Test("a look finds the matching files without the excluded ones, and the directories it went through")
    func look() throws {
        let directory = try TestDirectories.make("tail-discovery")
        for name in ["a.log", "b.log", "c.log.gz", "d.txt"] { try touch(directory + "/" + name) }
        var discovery = discovery(paths: [directory + "/*.log*"], exclude: ["*.gz"])
        let expansion = discovery.look(now: Self.origin)
        #expect(expansion.files == [directory + "/a.log", directory + "/b.log"])
        #expect(expansion.directories.contains(directory))
        #expect(discovery.matches(directory + "/new.log"))
        #expect(!discovery.matches(directory + "/old.log.gz"))
        #expect(!discovery.matches(directory + "/d.txt"))
    }

    @Test("a due look may be skipped only while the directories it read are unchanged and their times old enough")
    func unchangedDirectories() throws {
        let directory = try TestDirectories.make("tail-discovery")
        try touch(directory + "/a.log")
        var discovery = discovery(paths: [directory + "/*.log"])
        #expect(!discovery.directoriesUnchanged(), "no look yet")
        // Just written: a change within the same clock tick would not show, so the time is not trusted.
        _ = discovery.look(now: Self.origin)
        #expect(!discovery.directoriesUnchanged())
        try age(directory)
        _ = discovery.look(now: Self.origin)
        #expect(discovery.directoriesUnchanged())
        try touch(directory + "/b.log")
        #expect(!discovery.directoriesUnchanged(), "a new entry changes the directory's time")
    }

    @Test("a watched path with nothing there is given up after the longer of 60 s and two intervals, unless found again")
    func missingPaths() throws {
        var discovery = discovery(paths: ["/nowhere/*.log"], interval: .seconds(40))
        let (gone, back, followed) = ("/nowhere/gone.log", "/nowhere/back.log", "/nowhere/followed.log")
        // What the opener watches: a path given up is no longer watched.
        var watched = [gone, back, followed]
        func forget(found: Set<String> = [], after seconds: Int) -> [String] {
            let forgotten = discovery.finishLook(
                watched: watched, found: found, followed: { $0 == followed },
                now: Self.origin.advanced(by: .seconds(seconds)))
            watched.removeAll { forgotten.contains($0) }
            return forgotten
        }
        #expect(forget(after: 0) == [], "first seen empty: kept")
        #expect(forget(after: 79) == [], "two intervals (80 s) are longer than 60 s")
        #expect(forget(found: [back], after: 79) == [], "found again: its time starts over")
        #expect(forget(after: 80) == [gone])
        #expect(forget(after: 100) == [], "back was seen empty again at 80 only")
        #expect(forget(after: 160) == [back])
        #expect(forget(after: 1000) == [], "a followed path is never given up")
        #expect(watched == [followed])
    }
}
