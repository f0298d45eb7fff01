import NIOCore
import UplinkCore

/// Splits a byte stream that arrives in chunks cut at arbitrary places into `\n`-terminated lines.
///
/// Memory stays bounded by `maxLineBytes` plus one byte plus one chunk: a line that grows past the limit is
/// discarded as it arrives and reported once, with its full length (without its terminator), when its newline comes.
public struct LineSplitter: Sendable {
    /// One result of `nextLine()`.
    public enum Piece: Equatable, Sendable {
        /// A complete line without its `\n` (and without a `\r` before it).
        case line(ByteBuffer)
        /// A line longer than `maxLineBytes` was skipped; `length` counts its bytes without the terminator.
        case tooLong(length: Int)
    }

    /// Longest line accepted, in bytes, without its terminator.
    public let maxLineBytes: Int
    private var pending: ByteBuffer
    /// Bytes of pending already searched for a newline (so a long partial line is not rescanned per chunk).
    private var scannedBytes = 0
    /// Length so far of a too-long line being discarded, nil when not discarding.
    private var discarding: Int?
    /// Whether the last byte discarded was a `\r`, which is part of the terminator if the `\n` comes next.
    private var discardedCarriageReturn = false

    public init(maxLineBytes: Int = 1 << 20) {
        precondition(maxLineBytes > 0)
        self.maxLineBytes = maxLineBytes
        self.pending = ByteBufferAllocator().buffer(capacity: 0)
    }

    /// Bytes held for a line whose newline has not arrived yet.
    public var bufferedBytes: Int { pending.readableBytes }

    /// Whether a line begun in earlier chunks is waiting for its newline (held, or being discarded as too long).
    public var isMidLine: Bool { pending.readableBytes > 0 || discarding != nil }

    /// Adds the next chunk of the stream.
    public mutating func append(_ chunk: ByteBuffer) {
        var chunk = chunk
        if pending.readableBytes == 0 && discarding == nil {
            pending = chunk  // common case: no copy
            scannedBytes = 0
            return
        }
        if pending.readerIndex > 0 && pending.readerIndex >= pending.readableBytes {
            pending.discardReadBytes()
        }
        pending.writeBuffer(&chunk)
    }

    /// The next complete line or too-long report, or nil when more bytes are needed.
    public mutating func nextLine() -> Piece? {
        let newline = pending.withUnsafeReadableBytes { NewlineScan.first(in: $0, from: scannedBytes) }
        guard let newline else {
            scannedBytes = pending.readableBytes
            // A line of exactly `maxLineBytes` may still be followed by "\r\n": hold one byte more before discarding.
            if discarding != nil || pending.readableBytes - 1 > maxLineBytes {
                if pending.readableBytes > 0 {
                    discardedCarriageReturn =
                        pending.getInteger(at: pending.writerIndex - 1, as: UInt8.self) == UInt8(ascii: "\r")
                }
                discarding = (discarding ?? 0) + pending.readableBytes
                pending.moveReaderIndex(forwardBy: pending.readableBytes)
                scannedBytes = 0
            }
            return nil
        }
        scannedBytes = 0
        var line = pending.readSlice(length: newline)!
        pending.moveReaderIndex(forwardBy: 1)
        if let discarded = discarding {
            discarding = nil
            // The length excludes the terminator, "\r\n" as well as "\n".
            let endsWithCarriageReturn =
                newline > 0
                ? line.getInteger(at: line.writerIndex - 1, as: UInt8.self) == UInt8(ascii: "\r") : discardedCarriageReturn
            return .tooLong(length: discarded + newline - (endsWithCarriageReturn ? 1 : 0))
        }
        if line.readableBytes > 0, line.getInteger(at: line.writerIndex - 1, as: UInt8.self) == UInt8(ascii: "\r") {
            line.moveWriterIndex(to: line.writerIndex - 1)
        }
        if line.readableBytes > maxLineBytes { return .tooLong(length: line.readableBytes) }
        return .line(line)
    }

    /// At the end of the stream: the length of an unterminated last line that was cut off, if any. Such a line
    /// is incomplete and must not be treated as a record.
    public mutating func finish() -> Int? {
        defer {
            pending.clear()
            discarding = nil
            discardedCarriageReturn = false
            scannedBytes = 0
        }
        let leftover = (discarding ?? 0) + pending.readableBytes
        return leftover > 0 ? leftover : nil
    }
}
