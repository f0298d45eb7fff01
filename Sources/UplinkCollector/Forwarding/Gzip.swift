import CZlib
import NIOCore

/// Gzip (RFC 1952) of a whole request body, through zlib: how sinks with `compression: gzip` send their batches.
enum Gzip {
    /// zlib's compression level. 1 (fastest): a batch of JSON lines repeats the same keys and label sets so much that
    /// level 1 already shrinks it about tenfold, at a fraction of level 6's CPU, which matters because forwarding shares
    /// the collector's cores with the streams it receives.
    static let level: Int32 = 1

    /// `input` compressed into one gzip member.
    static func compress(_ input: ByteBuffer) throws(SinkFailure) -> ByteBuffer {
        var stream = z_stream()
        // windowBits 15 + 16: a gzip header and trailer instead of zlib's; memLevel 8 is zlib's default.
        let initialized = deflateInit2_(
            &stream, level, Z_DEFLATED, 15 + 16, 8, Z_DEFAULT_STRATEGY, zlibVersion(), Int32(MemoryLayout<z_stream>.size))
        guard initialized == Z_OK else { throw SinkFailure(.reject, "gzip: zlib could not start (\(initialized))") }
        defer { deflateEnd(&stream) }
        // zlib counts in 32-bit unsigned integers: feed and drain at most this much per call.
        let piece = 1 << 30
        var output = ByteBuffer()
        output.reserveCapacity(min(input.readableBytes / 4 + 64, piece))
        let finished = input.withUnsafeReadableBytes { raw -> Bool in
            var offset = 0
            while true {
                let take = min(raw.count - offset, piece)
                let last = offset + take == raw.count
                stream.next_in = UnsafeMutablePointer(
                    mutating: raw.baseAddress.map { $0.advanced(by: offset).assumingMemoryBound(to: Bytef.self) })
                stream.avail_in = uInt(take)
                var status = Z_OK
                // zlib's contract: once a call leaves output space unused, it has consumed all input (Z_NO_FLUSH)
                // or written the trailer (Z_FINISH, then it says Z_STREAM_END).
                repeat {
                    output.writeWithUnsafeMutableBytes(minimumWritableBytes: 64 << 10) { space in
                        let room = min(space.count, piece)
                        stream.next_out = space.baseAddress?.assumingMemoryBound(to: Bytef.self)
                        stream.avail_out = uInt(room)
                        status = deflate(&stream, last ? Z_FINISH : Z_NO_FLUSH)
                        return room - Int(stream.avail_out)
                    }
                    if status == Z_STREAM_ERROR { return false }
                } while stream.avail_out == 0
                offset += take
                if last { return status == Z_STREAM_END }
            }
        }
        guard finished else { throw SinkFailure(.reject, "gzip: zlib failed to compress the batch") }
        return output
    }
}
