import Foundation
import Testing

@testable import UplinkSources

@Suite("Tail globs")
struct TailGlobTests {
    @Test(
        "component and path matching",
        arguments: [
            // pattern, path, matches
            ("/var/log/*.log", "/var/log/app.log", true),
            ("/var/log/*.log", "/var/log/.hidden.log", true),
            ("/var/log/*.log", "/var/log/app.log.1", false),
            ("/var/log/*.log", "/var/log/sub/app.log", false),
            ("/var/log/*", "/var/log/x", true),
            ("/var/log/app?.log", "/var/log/app1.log", true),
            ("/var/log/app?.log", "/var/log/app12.log", false),
            ("/var/log/app?.log", "/var/log/app.log", false),
            ("/var/log/app[a-c].log", "/var/log/appb.log", true),
            ("/var/log/app[a-c].log", "/var/log/appd.log", false),
            ("/var/log/app[abc].log", "/var/log/appc.log", true),
            ("/var/log/app[!x].log", "/var/log/appy.log", true),
            ("/var/log/app[!x].log", "/var/log/appx.log", false),
            ("/var/log/app[^x].log", "/var/log/appx.log", false),
            ("/var/log/app[^0-9].log", "/var/log/app5.log", false),
            ("/var/log/app[]x].log", "/var/log/app].log", true),
            ("/var/log/app[.log", "/var/log/app[.log", true),
            ("/var/log/a\\*b", "/var/log/a*b", true),
            ("/var/log/a\\*b", "/var/log/axb", false),
            ("/var/log/**/*.log", "/var/log/app.log", true),
            ("/var/log/**/*.log", "/var/log/a/b/c/app.log", true),
            ("/var/log/**/*.log", "/var/log/a/b/c/app.txt", false),
            ("/var/**/x/*.log", "/var/x/a.log", true),
            ("/var/**/x/*.log", "/var/1/2/x/a.log", true),
            ("/var/**/x/*.log", "/var/1/2/y/a.log", false),
            ("/var/log/**", "/var/log/a/b.txt", true),
            ("/var/log/*/*.log", "/var/log/a/b.log", true),
            ("/var/log/*/*.log", "/var/log/b.log", false),
            ("logs/*.log", "logs/a.log", true),
            ("logs/*.log", "/logs/a.log", false),
            ("/a/*b*c*", "/a/xxbyyczz", true),
            ("/a/*b*c", "/a/xxbyycz", false),
        ])
    func matching(pattern: String, path: String, matches: Bool) {
        #expect(TailGlob(pattern).matches(path) == matches, "\(pattern) vs \(path)")
    }

    @Test("exclude by name and by path")
    func exclude() {
        let exclude = TailExclude(["*.gz", "/var/log/private/**"])
        #expect(exclude.excludes("/var/log/app.log.1.gz"))
        #expect(exclude.excludes("/var/log/private/a/b.log"))
        #expect(!exclude.excludes("/var/log/app.log"))
        #expect(!exclude.excludes("/var/log/gz/app.log"))
    }

    @Test("expansion walks the tree, follows only regular files, leaves out excluded ones")
    func expansion() throws {
        let directory = try TailTemporaryDirectory()
        defer { directory.remove() }
        let fm = FileManager.default
        for sub in ["a", "a/b", "a/b/c", "d"] {
            try fm.createDirectory(atPath: directory.file(sub), withIntermediateDirectories: true)
        }
        for file in ["x.log", "a/y.log", "a/b/c/z.log", "a/b/c/z.txt", "d/skip.log", "a/old.log.gz"] {
            writeFile(directory.file(file), "line\n")
        }
        try fm.createDirectory(atPath: directory.file("a/dir.log"), withIntermediateDirectories: true)
        mkfifo(directory.file("a/fifo.log"), 0o644)
        let expansion = TailGlob.expand(
            [TailGlob(directory.path + "/**/*.log"), TailGlob(directory.path + "/missing/*.log")],
            exclude: TailExclude(["skip.log"]))
        #expect(
            expansion.files == [
                directory.file("a/b/c/z.log"), directory.file("a/y.log"), directory.file("x.log"),
            ])
        // Watched: every directory below the root (for `**`), and the root for the missing `missing/`.
        #expect(expansion.directories.isSuperset(of: [directory.path, directory.file("a"), directory.file("a/b/c")]))

        let literal = TailGlob.expand([TailGlob(directory.file("a/y.log"))], exclude: TailExclude([]))
        #expect(literal.files == [directory.file("a/y.log")])
        #expect(literal.directories == [directory.file("a")])
    }

    @Test("a missing directory gives no files and watches the deepest existing parent")
    func missingDirectory() throws {
        let directory = try TailTemporaryDirectory()
        defer { directory.remove() }
        let expansion = TailGlob.expand([TailGlob(directory.path + "/not/yet/*.log")], exclude: TailExclude([]))
        #expect(expansion.files.isEmpty)
        #expect(expansion.directories == [directory.path])
    }
}
