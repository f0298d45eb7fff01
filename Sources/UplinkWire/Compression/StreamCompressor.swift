import CZlib
import CZstd
import NIOCore

/// One stream's compression context (docs/protocol.md, "Compression"): created when a stream opens and dropped with
/// it, so a reconnect starts a fresh context that the collector's fresh decoder can follow.
///
/// `compress(_:flush:into:)` with `flush: true` (what the uplink does at the end of every write pass) emits
/// everything given so far, so that the bytes written until then decode completely on their own; the context keeps
/// its history, so later passes still refer back to earlier records.
///
/// - zstd: window 128 KiB (`ZSTD_c_windowLog` 17), so a collector needs little memory per stream; a flush ends the
///   current block (`ZSTD_e_flush`). The level follows the stream's rate (`ZstdLevelPolicy`): 1 while it is busy,
///   12 while it trickles (a box's sensors: a few KiB/s in small passes, where the higher level takes a metric
///   sample from about 10 to under 8 bytes at no measurable CPU; 19 saved 0.7 B more for four times the agent's
///   CPU). A change of level ends the
///   current zstd frame and starts the next with the new level; decoders read consecutive frames as one stream.
/// - gzip: zlib level 6, a gzip header, `Z_SYNC_FLUSH` per flush.
///
/// Owned by one task at a time; not `Sendable`.
public final class StreamCompressor {
    /// zstd's compression level while the stream is busy (see `ZstdLevelPolicy` for the trickle level).
    public static let zstdLevel: Int32 = ZstdLevelPolicy.bulkLevel
    /// zstd's window: 2^17 bytes = 128 KiB.
    public static let zstdWindowLog: Int32 = 17
    /// zstd's hash and chain tables: 2^16 entries each.
    static let zstdTableLog: Int32 = 16
    /// zlib's compression level.
    public static let gzipLevel: Int32 = 6

    public let encoding: WireCompression
    private let backend: Backend
    /// zstd only: the level the stream's rate asks for, and the one the context has.
    private var levelPolicy: ZstdLevelPolicy
    private var appliedLevel: Int32 = ZstdLevelPolicy.bulkLevel
    private let now: () -> ContinuousClock.Instant

    private enum Backend {
        case zstd(OpaquePointer)
        case gzip(UnsafeMutablePointer<z_stream>)
    }

    /// The zstd level the context has now (the trickle or the bulk level).
    var currentLevel: Int32 { appliedLevel }

    /// Bytes the zstd context holds (its tables and buffers); 0 for gzip.
    var contextBytes: Int {
        if case .zstd(let context) = backend { return ZSTD_sizeof_CCtx(context) }
        return 0
    }

    /// A fresh context for `encoding`, which must not be `.none`.
    public convenience init(_ encoding: WireCompression) throws(WireCompressionError) {
        try self.init(encoding, now: { .now })
    }

    /// `input` compressed into one complete gzip member (RFC 1952) at zlib level `level` (1 fastest … 9 smallest): a
    /// whole request body, as the collector's sinks send their batches with `compression: gzip`.
    public static func gzipMember(_ input: ByteBuffer, level: Int32) throws(WireCompressionError) -> ByteBuffer {
        let compressor = try StreamCompressor(.gzip, gzipLevel: level, now: { .now })
        var output = ByteBuffer()
        output.reserveCapacity(input.readableBytes / 4 + 64)
        try input.withUnsafeReadableBytes { bytes throws(WireCompressionError) in
            guard case .gzip(let stream) = compressor.backend else { return }
            try gzip(stream, bytes, mode: Z_FINISH, into: &output)
        }
        return output
    }

    /// With the clock the level policy reads (tests pass their own) and, for gzip, zlib's level.
    init(
        _ encoding: WireCompression, gzipLevel: Int32 = StreamCompressor.gzipLevel,
        now: @escaping () -> ContinuousClock.Instant
    ) throws(WireCompressionError) {
        self.encoding = encoding
        self.now = now
        self.levelPolicy = ZstdLevelPolicy(now: now())
        switch encoding {
        case .zstd:
            guard let context = ZSTD_createCCtx() else {
                throw WireCompressionError(.unavailable, "zstd: cannot create a compression context")
            }
            // The match tables are sized for the window explicitly: left to the level, level 19 sizes them for its
            // own 8 MiB window (hash 2^22, chain 2^24 entries: 82 MiB of memory per stream), whatever the window
            // is. Explicit values stay when the level changes. 2^16 entries each (half and a quarter of what the
            // window could use) keep the context at about 1.4 MiB instead of 2.4 at the same ratio; it counts in the
            // agent's memory beyond its ring while a backlog drains (docs/deploy.md, "Draining a backlog").
            let statuses = [
                ZSTD_CCtx_setParameter(context, ZSTD_c_compressionLevel, Self.zstdLevel),
                ZSTD_CCtx_setParameter(context, ZSTD_c_windowLog, Self.zstdWindowLog),
                ZSTD_CCtx_setParameter(context, ZSTD_c_hashLog, Self.zstdTableLog),
                ZSTD_CCtx_setParameter(context, ZSTD_c_chainLog, Self.zstdTableLog),
            ]
            guard statuses.allSatisfy({ ZSTD_isError($0) == 0 }) else {
                ZSTD_freeCCtx(context)
                throw WireCompressionError(.unavailable, "zstd: the compression parameters were refused")
            }
            backend = .zstd(context)
        case .gzip:
            // windowBits 15 + 16: a gzip header and trailer; memLevel 8 is zlib's default.
            backend = .gzip(try ZlibStream.start {
                deflateInit2_($0, gzipLevel, Z_DEFLATED, 15 + 16, 8, Z_DEFAULT_STRATEGY, zlibVersion(), ZlibStream.size)
            })
        case .none:
            preconditionFailure("StreamCompressor(.none): an uncompressed stream has no compressor")
        }
    }

    deinit {
        switch backend {
        case .zstd(let context):
            ZSTD_freeCCtx(context)
        case .gzip(let stream):
            ZlibStream.end(stream, with: deflateEnd)
        }
    }

    /// Compresses the readable bytes of `input` and appends the output to `output`. With `flush`, everything given
    /// so far is in `output` when it returns.
    public func compress(_ input: ByteBuffer, flush: Bool, into output: inout ByteBuffer) throws(WireCompressionError) {
        try input.withUnsafeReadableBytes { bytes throws(WireCompressionError) in
            try compress(bytes, flush: flush, into: &output)
        }
    }

    /// Compresses `input` and appends the output to `output`. With `flush`, everything given so far is in `output`
    /// when it returns.
    public func compress(
        _ input: UnsafeRawBufferPointer, flush: Bool, into output: inout ByteBuffer
    ) throws(WireCompressionError) {
        switch backend {
        case .zstd(let context):
            let wanted = levelPolicy.level(forPass: input.count, now: now())
            if wanted != appliedLevel {
                try Self.zstdEndFrame(context, into: &output)
                let status = ZSTD_CCtx_setParameter(context, ZSTD_c_compressionLevel, wanted)
                if ZSTD_isError(status) != 0 {
                    throw WireCompressionError(.corrupt, "zstd: \(String(cString: ZSTD_getErrorName(status)))")
                }
                appliedLevel = wanted
            }
            try Self.zstd(context, input, flush: flush, into: &output)
        case .gzip(let stream):
            try Self.gzip(stream, input, mode: flush ? Z_SYNC_FLUSH : Z_NO_FLUSH, into: &output)
        }
    }

    /// Ends the current frame (everything given so far is in `output`), so that the next starts with new parameters.
    private static func zstdEndFrame(_ context: OpaquePointer, into output: inout ByteBuffer) throws(WireCompressionError) {
        try zstd(context, UnsafeRawBufferPointer(start: nil, count: 0), directive: ZSTD_e_end, into: &output)
    }

    private static func zstd(
        _ context: OpaquePointer, _ input: UnsafeRawBufferPointer, flush: Bool, into output: inout ByteBuffer
    ) throws(WireCompressionError) {
        try zstd(context, input, directive: flush ? ZSTD_e_flush : ZSTD_e_continue, into: &output)
    }

    private static func zstd(
        _ context: OpaquePointer, _ input: UnsafeRawBufferPointer, directive: ZSTD_EndDirective,
        into output: inout ByteBuffer
    ) throws(WireCompressionError) {
        var source = ZSTD_inBuffer(src: input.baseAddress, size: input.count, pos: 0)
        let finishing = directive != ZSTD_e_continue
        // Each call consumes input or emits output; zstd's contract ends the loop once the input is consumed and,
        // when flushing or ending the frame, nothing remains to write (the return value is then 0).
        var remaining = 1
        var failure: Int?
        while source.pos < source.size || (finishing && remaining != 0) {
            output.writeWithUnsafeMutableBytes(minimumWritableBytes: min(input.count / 2 + 4096, 128 << 10)) { space in
                var target = ZSTD_outBuffer(dst: space.baseAddress, size: space.count, pos: 0)
                remaining = ZSTD_compressStream2(context, &target, &source, directive)
                if ZSTD_isError(remaining) != 0 { failure = remaining }
                return target.pos
            }
            if let failure {
                throw WireCompressionError(.corrupt, "zstd: \(String(cString: ZSTD_getErrorName(failure)))")
            }
            if !finishing && source.pos == source.size { break }
        }
    }

    /// `mode` applies to the last piece of `input`: `Z_NO_FLUSH`, `Z_SYNC_FLUSH` (everything so far decodes) or
    /// `Z_FINISH` (the member's end and trailer).
    private static func gzip(
        _ stream: UnsafeMutablePointer<z_stream>, _ input: UnsafeRawBufferPointer, mode lastMode: Int32,
        into output: inout ByteBuffer
    ) throws(WireCompressionError) {
        // zlib counts in 32-bit integers: feed at most this much per call.
        let piece = 1 << 30
        var offset = 0
        repeat {
            let take = min(input.count - offset, piece)
            let last = offset + take == input.count
            stream.pointee.next_in = UnsafeMutablePointer(
                mutating: input.baseAddress.map { $0.advanced(by: offset).assumingMemoryBound(to: Bytef.self) })
            stream.pointee.avail_in = uInt(take)
            let mode = last ? lastMode : Z_NO_FLUSH
            // zlib's contract: once a call leaves output space unused, it has consumed all input and flushed (with
            // Z_FINISH: written the trailer, Z_STREAM_END).
            var full = true
            while full {
                var status = Z_OK
                output.writeWithUnsafeMutableBytes(minimumWritableBytes: min(take / 2 + 4096, 128 << 10)) { space in
                    let room = min(space.count, piece)
                    stream.pointee.next_out = space.baseAddress?.assumingMemoryBound(to: Bytef.self)
                    stream.pointee.avail_out = uInt(room)
                    status = deflate(stream, mode)
                    return room - Int(stream.pointee.avail_out)
                }
                // Z_BUF_ERROR: no progress was possible (nothing to do), not a failure.
                guard status == Z_OK || status == Z_BUF_ERROR || status == Z_STREAM_END else {
                    throw WireCompressionError(.corrupt, "gzip: zlib failed to compress (\(status))")
                }
                full = stream.pointee.avail_out == 0
            }
            offset += take
        } while offset < input.count
        stream.pointee.next_in = nil
    }
}

@available(*, unavailable)
extension StreamCompressor: Sendable {}
