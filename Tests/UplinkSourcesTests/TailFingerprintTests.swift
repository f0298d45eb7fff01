import Foundation
import Testing
import UplinkCore
import UplinkFiles
import UplinkTestSupport

@testable import UplinkSources

/// `TailedFile.verifiedFingerprint(scratch:)`, which keeps the bytes it last verified so that the next check compares
/// them instead of hashing: it must answer exactly as `TailFingerprint.verified(descriptor:scratch:)` does, for a real
/// file that grows, is rewritten in place, truncated and written again, while the engine adopts each answer.
@Suite("Tail fingerprint")
struct TailFingerprintTests {
    @Test("the kept bytes give the hash's answer for every change of a file's first bytes")
    func keptBytesAnswerAsTheHashDoes() throws {
        let path = try Fixtures.temporaryDirectory().appendingPathComponent("app.log").path
        let writer = open(path, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0o644)
        try #require(writer >= 0)
        defer { close(writer) }
        let reader = open(path, O_RDONLY | O_CLOEXEC)
        try #require(reader >= 0)
        let scratch = UnsafeMutableRawBufferPointer.allocate(byteCount: TailFingerprint.maximumLength, alignment: 16)
        defer { scratch.deallocate() }
        let file = TailedFile(
            descriptor: reader, inode: FileIdentity(device: 0, inode: 0), path: path,
            fingerprint: TailFingerprint.current(descriptor: reader, scratch: scratch), originID: 1, offset: 0,
            maxLineBytes: 4096, multiline: nil, now: .now)

        /// Checks once with each and compares; adopts the answer as the engine does, or starts over from the
        /// file's current fingerprint as a restart does.
        func check(_ step: String) {
            let hashed = file.fingerprint.verified(descriptor: reader, scratch: scratch)
            let kept = file.verifiedFingerprint(scratch: scratch)
            #expect(kept == hashed, "\(step)")
            file.fingerprint = kept ?? TailFingerprint.current(descriptor: reader, scratch: scratch)
        }
        func write(_ text: String, at offset: off_t) {
            let bytes = Array(text.utf8)
            #expect(pwrite(writer, bytes, bytes.count, offset) == bytes.count)
        }

        check("empty")
        var length: off_t = 0
        // Grows past the fingerprint's 256 bytes, a line at a time: each check extends the fingerprint.
        for line in 0..<12 {
            let text = "line \(line) " + String(repeating: "x", count: 20) + "\n"
            write(text, at: length)
            length += off_t(text.utf8.count)
            check("grown to \(length)")
            check("unchanged at \(length)")
        }
        // Rewritten in place, at its first byte, its last fingerprinted byte and the byte after: only the first two
        // change the answer.
        for (offset, step) in [(0, "first byte"), (255, "last fingerprinted byte"), (256, "the byte after it")] {
            write("#", at: off_t(offset))
            check("\(step) rewritten")
            check("\(step) rewritten, then unchanged")
        }
        // Truncated and written again with other lines: shorter than the fingerprint, then longer again.
        #expect(ftruncate(writer, 0) == 0)
        check("truncated")
        write("another file's first line\n", at: 0)
        check("rewritten short")
        write(String(repeating: "y", count: 300) + "\n", at: 26)
        check("rewritten long")
        check("rewritten long, unchanged")
    }
}
