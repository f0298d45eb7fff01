import CZlib
import CZstd
import NIOCore

/// One stream's decompression context on the collector: input chunks go in as they arrive (split anywhere), output
/// comes out in pieces of at most `pieceBytes`, so memory per stream stays bounded whatever the input says.
///
/// Limits (docs/protocol.md, "Compression"):
/// - one input chunk may decode to at most `outputLimit(inputBytes:)` bytes (4 MiB, or 1024 times the chunk when
///   that is more); beyond it `next()` throws `.bomb`.
/// - a zstd frame may not ask for a window above `maximumWindowBytes` (8 MiB, `ZSTD_d_windowLogMax` 23): `.windowTooLarge`.
/// - input that is not valid for the encoding: `.corrupt`.
///
/// After an error the context is unusable; the stream is ended. Owned by one task at a time; not `Sendable`.
///
/// ```swift
/// decompressor.feed(chunk)
/// while let piece = try decompressor.next() { process(piece) }
/// ```
public final class StreamDecompressor {
    /// Largest piece of output `next()` returns: 256 KiB.
    public static let pieceBytes = 256 << 10
    /// Largest zstd window accepted: 2^23 bytes = 8 MiB.
    public static let maximumWindowLog: Int32 = 23
    public static var maximumWindowBytes: Int { 1 << Int(maximumWindowLog) }
    /// Output allowed from one input chunk whatever its size: 4 MiB.
    public static let minimumOutputLimit = 4 << 20
    /// Output allowed per input byte: 1024 (a realistic record stream compresses 5 to 30 times).
    public static let maximumRatio = 1024

    /// The most output one input chunk of `inputBytes` may decode to.
    public static func outputLimit(inputBytes: Int) -> Int {
        max(minimumOutputLimit, inputBytes.multipliedReportingOverflow(by: maximumRatio).partialValue)
    }

    public let encoding: WireCompression
    private let backend: Backend
    private var input = ByteBuffer()
    /// Output produced from the current input chunk, against `limit`.
    private var produced = 0
    private var limit = StreamDecompressor.minimumOutputLimit
    /// The last call filled its output space: more output may be waiting even without input.
    private var mayHaveMore = false
    private var failure: WireCompressionError?

    private enum Backend {
        case zstd(OpaquePointer)
        case gzip(UnsafeMutablePointer<z_stream>)
    }

    /// A fresh context for `encoding`, which must not be `.none`.
    public init(_ encoding: WireCompression) throws(WireCompressionError) {
        self.encoding = encoding
        switch encoding {
        case .zstd:
            guard let context = ZSTD_createDCtx() else {
                throw WireCompressionError(.unavailable, "zstd: cannot create a decompression context")
            }
            guard ZSTD_isError(ZSTD_DCtx_setParameter(context, ZSTD_d_windowLogMax, Self.maximumWindowLog)) == 0 else {
                ZSTD_freeDCtx(context)
                throw WireCompressionError(.unavailable, "zstd: the window limit was refused")
            }
            backend = .zstd(context)
        case .gzip:
            // windowBits 15 + 16: gzip only (a zlib or raw deflate body is not what the header promised).
            backend = .gzip(try ZlibStream.start { inflateInit2_($0, 15 + 16, zlibVersion(), ZlibStream.size) })
        case .none:
            preconditionFailure("StreamDecompressor(.none): an uncompressed stream has no decompressor")
        }
    }

    deinit {
        switch backend {
        case .zstd(let context):
            ZSTD_freeDCtx(context)
        case .gzip(let stream):
            ZlibStream.end(stream, with: inflateEnd)
        }
    }

    /// Hands the next input chunk over. Call it once `next()` returned nil for the previous one.
    public func feed(_ chunk: ByteBuffer) {
        precondition(input.readableBytes == 0, "StreamDecompressor.feed: the previous chunk is not used up")
        input = chunk
        produced = 0
        limit = Self.outputLimit(inputBytes: chunk.readableBytes)
    }

    /// The next piece of output (1 to `pieceBytes` bytes), or nil when the chunk fed last is used up and has given
    /// all the output it can.
    public func next() throws(WireCompressionError) -> ByteBuffer? {
        if let failure { throw failure }
        // Each round consumes input or produces output; a round that does neither ends the chunk (the decoder needs
        // more input), so this loop is bounded by the chunk's size.
        while input.readableBytes > 0 || mayHaveMore {
            var piece = ByteBufferAllocator().buffer(capacity: Self.pieceBytes)
            let before = input.readableBytes
            let result: Result<Step, WireCompressionError> = input.withUnsafeReadableBytes { source in
                piece.withUnsafeMutableWritableBytes { target in
                    step(source, target)
                }
            }
            let (consumed, written): (Int, Int)
            switch result {
            case .success(let step):
                (consumed, written) = (step.consumed, step.written)
            case .failure(let error):
                failure = error
                throw error
            }
            input.moveReaderIndex(forwardBy: consumed)
            piece.moveWriterIndex(forwardBy: written)
            mayHaveMore = written == Self.pieceBytes
            if written > 0 {
                produced += written
                if produced > limit {
                    let error = WireCompressionError(
                        .bomb,
                        "\(before) compressed bytes decoded to more than \(limit) bytes (the limit is "
                            + "\(Self.maximumRatio) times the chunk, at least \(Self.minimumOutputLimit))")
                    failure = error
                    throw error
                }
                return piece
            }
            if consumed == 0 {
                guard input.readableBytes == 0 else {
                    let error = WireCompressionError(.corrupt, "\(encoding): the decoder stopped making progress")
                    failure = error
                    throw error
                }
                break
            }
        }
        input = ByteBuffer()
        return nil
    }

    private struct Step {
        var consumed: Int
        var written: Int
    }

    /// One call into the library.
    private func step(_ source: UnsafeRawBufferPointer, _ target: UnsafeMutableRawBufferPointer) -> Result<Step, WireCompressionError> {
        let room = min(target.count, Self.pieceBytes)
        switch backend {
        case .zstd(let context):
            var inBuffer = ZSTD_inBuffer(src: source.baseAddress, size: source.count, pos: 0)
            var outBuffer = ZSTD_outBuffer(dst: target.baseAddress, size: room, pos: 0)
            let status = ZSTD_decompressStream(context, &outBuffer, &inBuffer)
            if ZSTD_isError(status) != 0 {
                let name = String(cString: ZSTD_getErrorName(status))
                if ZSTD_getErrorCode(status) == ZSTD_error_frameParameter_windowTooLarge {
                    return .failure(WireCompressionError(
                        .windowTooLarge, "zstd: a frame asks for a window above \(Self.maximumWindowBytes) bytes (\(name))"))
                }
                return .failure(WireCompressionError(.corrupt, "zstd: \(name)"))
            }
            return .success(Step(consumed: inBuffer.pos, written: outBuffer.pos))
        case .gzip(let stream):
            stream.pointee.next_in = UnsafeMutablePointer(mutating: source.baseAddress?.assumingMemoryBound(to: Bytef.self))
            stream.pointee.avail_in = uInt(min(source.count, Int(UInt32.max)))
            stream.pointee.next_out = target.baseAddress?.assumingMemoryBound(to: Bytef.self)
            stream.pointee.avail_out = uInt(room)
            let offered = Int(stream.pointee.avail_in)
            let status = inflate(stream, Z_NO_FLUSH)
            let consumed = offered - Int(stream.pointee.avail_in)
            let written = room - Int(stream.pointee.avail_out)
            stream.pointee.next_in = nil
            stream.pointee.next_out = nil
            switch status {
            case Z_OK, Z_BUF_ERROR:
                return .success(Step(consumed: consumed, written: written))
            case Z_STREAM_END:
                // A gzip member ended; another may follow (concatenated members are one gzip stream).
                guard inflateReset(stream) == Z_OK else {
                    return .failure(WireCompressionError(.corrupt, "gzip: zlib could not start the next member"))
                }
                return .success(Step(consumed: consumed, written: written))
            default:
                let text = stream.pointee.msg.map { String(cString: $0) } ?? "error \(status)"
                return .failure(WireCompressionError(.corrupt, "gzip: \(text)"))
            }
        }
    }
}

@available(*, unavailable)
extension StreamDecompressor: Sendable {}
