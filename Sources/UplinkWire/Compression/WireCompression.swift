import CZlib

/// How the body of a stream is encoded on the wire (`uplink.compression`, the request's `Content-Encoding`).
///
/// docs/protocol.md, "Compression": one compressor context per stream, flushed at the end of every write pass, so
/// the collector decodes each pass completely as it arrives and latency does not change.
public enum WireCompression: String, Sendable, Hashable, CaseIterable, CustomStringConvertible {
    /// Zstandard (RFC 8878) with a 128 KiB window, level 1 while busy and 12 while trickling. The default.
    case zstd
    /// gzip (RFC 1952) through zlib, level 6, sync-flushed.
    case gzip
    /// Uncompressed NDJSON (no `Content-Encoding`, or `identity`).
    case none

    /// The `Content-Encoding` header value, or nil for `none` (the header is left out).
    public var contentEncoding: String? {
        switch self {
        case .zstd: "zstd"
        case .gzip: "gzip"
        case .none: nil
        }
    }

    /// The encoding a `Content-Encoding` header names (case-insensitive, surrounding spaces ignored): `zstd`,
    /// `gzip` (also `x-gzip`), `identity` (`none`); nil for anything else, including a list of several codings.
    public init?(contentEncoding header: some StringProtocol) {
        var text = Substring(header.lowercased())
        while text.first == " " || text.first == "\t" { text.removeFirst() }
        while text.last == " " || text.last == "\t" { text.removeLast() }
        switch text {
        case "zstd": self = .zstd
        case "gzip", "x-gzip": self = .gzip
        case "identity", "": self = .none
        default: return nil
        }
    }

    /// The configuration name: `zstd`, `gzip` or `none`.
    public var description: String { rawValue }
}

/// Why compressing or decompressing a stream failed. `code` is stable (logs, the collector's error line); `message`
/// is for people.
public struct WireCompressionError: Error, Sendable, Equatable, CustomStringConvertible {
    public enum Code: String, Sendable, Equatable {
        /// The compressed input is not valid for its encoding (or is cut inside a block the decoder cannot finish).
        case corrupt = "corrupt_body"
        /// One input chunk decoded to more than `StreamDecompressor.outputLimit(inputBytes:)` bytes.
        case bomb = "decompression_bomb"
        /// A zstd frame asks for a window larger than `StreamDecompressor.maximumWindowBytes`.
        case windowTooLarge = "window_too_large"
        /// The library could not set up a context (out of memory).
        case unavailable = "compression_unavailable"
    }

    public var code: Code
    public var message: String

    public init(_ code: Code, _ message: String) {
        self.code = code
        self.message = message
    }

    /// Whether the input asked for more output or memory than the limits allow (a bomb or an oversized window),
    /// rather than being malformed.
    public var isResourceLimit: Bool { code == .bomb || code == .windowTooLarge }

    public var description: String { "\(code.rawValue): \(message)" }
}

/// A zlib stream for one compressor or decompressor. zlib keeps a pointer back to its `z_stream`, so it must not move:
/// it lives on the heap from `start` to `end`.
enum ZlibStream {
    /// `MemoryLayout<z_stream>.size`, as zlib's init functions check it.
    static let size = Int32(MemoryLayout<z_stream>.size)

    /// A new stream, set up by `initialise` (`deflateInit2_` or `inflateInit2_`); freed again when that fails.
    static func start(
        _ initialise: (UnsafeMutablePointer<z_stream>) -> Int32
    ) throws(WireCompressionError) -> UnsafeMutablePointer<z_stream> {
        let stream = UnsafeMutablePointer<z_stream>.allocate(capacity: 1)
        stream.initialize(to: z_stream())
        let status = initialise(stream)
        guard status == Z_OK else {
            stream.deinitialize(count: 1)
            stream.deallocate()
            throw WireCompressionError(.unavailable, "gzip: zlib could not start (\(status))")
        }
        return stream
    }

    /// Ends `stream` with `finish` (`deflateEnd` or `inflateEnd`) and frees it.
    static func end(_ stream: UnsafeMutablePointer<z_stream>, with finish: (UnsafeMutablePointer<z_stream>) -> Int32) {
        _ = finish(stream)
        stream.deinitialize(count: 1)
        stream.deallocate()
    }
}
