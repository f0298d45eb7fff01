import Logging
import NIOCore
import UplinkWire

extension UplinkDriver {
    /// How much more than the pair's free space a compressed fill may take from the ring: compressed, a fill of
    /// record lines is 5 to 30 times smaller, so taking only the free space would flush after every few KiB.
    static let compressedFillFactor = 4

    /// A fresh compression context for a new stream, or nil for an uncompressed one. A context that cannot be
    /// created (out of memory) makes this one stream uncompressed.
    func makeCompressor() -> StreamCompressor? {
        guard compression != .none else { return nil }
        do {
            return try StreamCompressor(compression)
        } catch {
            logger.warning("cannot compress this stream; sending it uncompressed", metadata: ["error": "\(error)"])
            return nil
        }
    }

    /// `lines` as they go into the pair: compressed and flushed, so the collector can decode everything written so
    /// far (docs/protocol.md, "Compression"), or as they are. Nil when compressing failed; the stream is then failed.
    func encode(_ lines: ByteBuffer, connection: ConnectionID) -> ByteBuffer? {
        guard let compressor else { return lines }
        var output = Self.takeKept(&compressedScratch)
        defer {
            output.clear()
            compressedScratch = output
        }
        do {
            try compressor.compress(lines, flush: true, into: &output)
            // The compressor asks for room for the worst case; what it wrote is usually a tenth of that. The pass's
            // output waits in the pair and the client's queue until the socket takes it, and the in-flight window
            // counts its bytes, so only those go on (a copy of a few KiB); the room stays for the next pass.
            var exact = ByteBufferAllocator().buffer(capacity: output.readableBytes)
            exact.writeImmutableBuffer(output)
            return exact
        } catch {
            handleLater(.streamFailed(connection, .transport("compressing the body failed: \(error)")))
            return nil
        }
    }

    /// The collector answered 415 to a compressed body: every later stream of this uplink is uncompressed. Said once
    /// in the log, since it happens at most once.
    func fallBackToUncompressed(refused: WireCompression, detail: String?) {
        compression = .none
        uplink.statisticsBox.withLock {
            $0.compression = .none
            $0.compressionFallbacks += 1
        }
        var metadata: Logger.Metadata = ["url": "\(uplink.configuration.streamURL)", "refused": "\(refused)"]
        if let detail { metadata["collector_said"] = "\(detail)" }
        let text =
            "collector does not accept Content-Encoding \(refused) (HTTP 415); sending uncompressed from now on "
            + "(set uplink.compression: none to silence this, or enable \(refused) in the collector's accept_encodings)"
        logger.warning("\(text)", metadata: metadata)
    }
}
