import Foundation
import Testing
import UplinkTestSupport

@testable import UplinkProcess

#if os(Linux)
@Suite("Start-up code pages given back")
struct StartupCodePagesTests {
    @Test("smaps parsing: only private, read-only, file-backed mappings without private copies are released")
    func parsing() throws {
        let text = """
            55d4c0000000-55d4c0a00000 r-xp 00200000 fd:01 1234 /usr/bin/uplink
            Size:              10240 kB
            Rss:                8000 kB
            Anonymous:             0 kB
            VmFlags: rd ex mr mw me sd
            55d4c0a00000-55d4c0b00000 r--p 00c00000 fd:01 1234 /usr/bin/uplink
            Rss:                 400 kB
            Anonymous:           400 kB
            55d4c0b00000-55d4c0c00000 rw-p 00d00000 fd:01 1234 /usr/bin/uplink
            Rss:                 300 kB
            Anonymous:           120 kB
            7f0000000000-7f0004000000 rw-p 00000000 00:00 0
            Rss:               65536 kB
            Anonymous:         65536 kB
            7f1000000000-7f1000100000 r--s 00000000 fd:01 99 /var/log/journal/x.journal
            Rss:                1024 kB
            Anonymous:             0 kB
            7f2000000000-7f2000010000 r--p 00000000 fd:01 77 /usr/lib/libold.so (deleted)
            Rss:                  64 kB
            Anonymous:             0 kB
            7f3000000000-7f3000010000 r-xp 00000000 fd:01 78 /usr/lib/libcold.so
            Rss:                   0 kB
            Anonymous:             0 kB
            7ffd00000000-7ffd00002000 r-xp 00000000 00:00 0                          [vdso]
            Rss:                   8 kB
            Anonymous:             0 kB
            not a mapping line at all
            """
        let mappings = SmapsMapping.parse(text)
        #expect(mappings.count == 8)
        let first = try #require(mappings.first)
        #expect(first.start == 0x55d4_c000_0000 && first.end == 0x55d4_c0a0_0000)
        #expect(first.residentKiB == 8000 && first.anonymousKiB == 0 && first.path == "/usr/bin/uplink")
        #expect(first.vmFlags == ["rd", "ex", "mr", "mw", "me", "sd"] && mappings[1].vmFlags.isEmpty)
        #expect(mappings[5].path == "/usr/lib/libold.so (deleted)")
        #expect(mappings[7].path == "[vdso]")
        #expect(mappings.map(\.isReleasable) == [true, false, false, false, false, true, false, false])
    }

    @Test("A touched read-only file mapping leaves the resident set and still reads the same; private copies stay", .computeBound)
    func releasesOnlyCleanPages() throws {
        let directory = URL(fileURLWithPath: try TestDirectories.make("code-pages"), isDirectory: true)
        defer { try? FileManager.default.removeItem(at: directory) }
        let size = 2 << 20
        let path = directory.appendingPathComponent("pages.bin").path
        try Data((0..<size).map { UInt8(truncatingIfNeeded: $0 &* 31) }).write(to: URL(fileURLWithPath: path))

        let descriptor = open(path, O_RDONLY)
        try #require(descriptor >= 0)
        defer { close(descriptor) }
        // `clean`: read-only, only read. `patched`: made writable, one byte changed, read-only again, as a relocated
        // or debugger-patched page is: it holds a private copy that the file does not have.
        let clean = try #require(mmap(nil, size, PROT_READ, MAP_PRIVATE, descriptor, 0))
        let patched = try #require(mmap(nil, size, PROT_READ, MAP_PRIVATE, descriptor, 0))
        try #require(clean != MAP_FAILED && patched != MAP_FAILED, "mmap: errno \(errno)")
        defer {
            munmap(clean, size)
            munmap(patched, size)
        }
        var sum = 0
        for offset in stride(from: 0, to: size, by: 4096) {
            sum &+= Int(clean.load(fromByteOffset: offset, as: UInt8.self))
            sum &+= Int(patched.load(fromByteOffset: offset, as: UInt8.self))
        }
        #expect(mprotect(patched, size, PROT_READ | PROT_WRITE) == 0)
        patched.storeBytes(of: 0xEE, toByteOffset: 4096, as: UInt8.self)
        #expect(mprotect(patched, size, PROT_READ) == 0)

        let before = [try mapping(at: clean), try mapping(at: patched)]
        #expect(before[0].residentKiB == size / 1024)
        let released = StartupCodePages.release(before)
        #expect(released == .init(mappings: 1, bytes: size, failure: nil), "only the clean mapping is released")

        #expect(try mapping(at: clean).residentKiB == 0, "the clean mapping's pages left the resident set")
        let patchedAfter = try mapping(at: patched)
        #expect(patchedAfter.anonymousKiB > 0 && patchedAfter.residentKiB > 0, "the patched mapping was left alone")
        #expect(patched.load(fromByteOffset: 4096, as: UInt8.self) == 0xEE, "its private copy is intact")
        let expected = Array((0..<size).map { UInt8(truncatingIfNeeded: $0 &* 31) })
        #expect(Array(UnsafeRawBufferPointer(start: clean, count: size)) == expected, "the clean mapping reads the file")
        _ = sum
    }

    /// The `smaps` entry of the mapping that starts at `address`.
    private func mapping(at address: UnsafeMutableRawPointer) throws -> SmapsMapping {
        let start = UInt(bitPattern: address)
        return try #require(StartupCodePages.currentMappings().get().first { $0.start == start })
    }
}
#endif
