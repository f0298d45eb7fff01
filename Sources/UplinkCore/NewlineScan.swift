#if canImport(Glibc)
import Glibc
#elseif canImport(Musl)
import Musl
#elseif canImport(Darwin)
import Darwin
#endif

/// Finding the `\n` that ends each line in raw bytes: the one newline scan under every line splitter (the tail's
/// reader, the collector's request bodies, its log and sinks, `/proc` files). A line's text excludes its `\n` and one
/// `\r` right before it. Length caps stay with the splitters, which differ in what they do with a long line (the
/// tail cuts it, the collector rejects it).
///
/// The forward search is `memchr` over raw bytes, so it costs the same in every build and on every caller's
/// buffer type.
public enum NewlineScan {
    /// The offset of the first `\n` in `bytes` at or after `start`; nil when there is none.
    @inlinable
    public static func first(in bytes: UnsafeRawBufferPointer, from start: Int = 0) -> Int? {
        guard let base = bytes.baseAddress, start >= 0, start < bytes.count,
            let found = memchr(base + start, Int32(UInt8(ascii: "\n")), bytes.count - start)
        else { return nil }
        return base.distance(to: UnsafeRawPointer(found))
    }

    /// The offset of the last `\n` in `bytes` before `end` (the whole buffer when nil); nil when there is none.
    /// (Not `memrchr`, which Glibc's Swift module does not export.) Eight bytes at a time: the collector looks back
    /// over the last line of every chunk it stores, once per line for an agent sending a few lines a second.
    public static func last(in bytes: UnsafeRawBufferPointer, before end: Int? = nil) -> Int? {
        var index = max(0, min(end ?? bytes.count, bytes.count))
        guard let base = bytes.baseAddress else { return nil }
        while index >= 8 {
            let word = UInt64(littleEndian: base.loadUnaligned(fromByteOffset: index - 8, as: UInt64.self))
            let newlines = ByteWord.matches(UInt8(ascii: "\n"), in: word)
            if newlines != 0 { return index - 8 + (63 - newlines.leadingZeroBitCount) / 8 }
            index -= 8
        }
        while index > 0 {
            index -= 1
            if base.load(fromByteOffset: index, as: UInt8.self) == UInt8(ascii: "\n") { return index }
        }
        return nil
    }

    /// Where the text of the line from `start` to its `\n` at `newline` ends: at `newline`, or one byte earlier
    /// when a `\r` stands before it.
    @inlinable
    public static func textEnd(in bytes: UnsafeRawBufferPointer, start: Int, newline: Int) -> Int {
        newline > start && bytes[newline - 1] == UInt8(ascii: "\r") ? newline - 1 : newline
    }

    /// Calls `body` with every `\n`-terminated line of `bytes` from `start` on: the range of its text and the offset
    /// just past its `\n`. Returns the offset past the last `\n` (`start` when there is none): what follows is an
    /// unfinished line.
    @inlinable
    @discardableResult
    public static func forEachLine(
        in bytes: UnsafeRawBufferPointer, from start: Int = 0,
        _ body: (_ text: Range<Int>, _ next: Int) throws -> Void
    ) rethrows -> Int {
        var position = start
        while let newline = first(in: bytes, from: position) {
            try body(position..<textEnd(in: bytes, start: position, newline: newline), newline + 1)
            position = newline + 1
        }
        return position
    }
}
