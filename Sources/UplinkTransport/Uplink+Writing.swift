import NIOCore
import UplinkCore
import UplinkWire

extension UplinkDriver {
    /// Copies frames from the ring into the pair until the pair turns bytes away (it will signal space later) or
    /// the ring has nothing unsent (then the ring is asked to signal new data). Runs only while the uplink holds a
    /// space-available signal. Without `takingNewFrames` (a hand-over) it only finishes the fill already taken.
    ///
    /// On a compressed stream each fill is compressed and flushed as a whole before it goes into the pair, and
    /// `pending` holds the compressed leftover, so the pair's back-pressure works on wire bytes exactly as without
    /// compression. The ring keeps the uncompressed frames (a reconnect resends them through a fresh context).
    func writeAvailable(takingNewFrames: Bool = true) {
        guard let pair, let connection = machine.currentStream?.connection else { return }
        if pending.readableBytes == 0, takingNewFrames { writeConfigStatusIfDue(pair, connection) }
        while true {
            var lastSequence: UInt64?
            var bytesWritten = 0
            var lineBytes = 0
            var recordsWritten = 0
            var pairFull = false
            while true {
                if pending.readableBytes == 0 {
                    guard takingNewFrames else { break }
                    // The window and the pair count wire bytes; compressed, a pass takes more lines than that.
                    let room = min(max(pair.availableSpace, 1), inFlight.room)
                    let take = compressor == nil ? room : room * Self.compressedFillFactor
                    guard take > 0 else {
                        waitingForAcknowledgements = true
                        break
                    }
                    var fill = takeFillBuffer(capacity: take + take / 4 + 64)
                    var fillLast: UInt64?
                    recordsWritten += ring.readUnsent(maxBytes: take) { sequence, first, second in
                        WireLineWriter.appendRecordLine(sequence: sequence, frame: first, second, to: &fill)
                        fillLast = sequence
                    }
                    defer { returnFillBuffer(fill) }
                    guard let fillLast else { break }
                    lastSequence = fillLast
                    lineBytes += fill.readableBytes
                    guard let encoded = encode(fill, connection: connection) else {
                        note(bytes: bytesWritten, lineBytes: lineBytes, records: recordsWritten)
                        return
                    }
                    inFlight.took(encoded.readableBytes, through: fillLast)
                    pending = encoded
                }
                bytesWritten += pair.write(&pending)
                if pending.readableBytes > 0 {
                    pairFull = true
                    break
                }
            }
            note(bytes: bytesWritten, lineBytes: lineBytes, records: recordsWritten)
            _ = machine.wrote(
                connection, lastSequence: lastSequence, wroteBytes: bytesWritten > 0, pairFull: pairFull, now: .now)
            // A full pair signals space; a full window resumes on the next ack.
            if pairFull || !takingNewFrames || waitingForAcknowledgements { return }
            // The ring ran dry. Ask to be woken by the next append; if one slipped in meanwhile, write it now. The
            // handler runs on the appender's thread and hands the write to this loop: appended on the loop it costs
            // no wake-up, and the write comes at the end of the turn, after everything the turn appended.
            let driver = bound
            let loop = self.loop
            if ring.notifyWhenDataAvailable({ loop.execute { driver.value.handle(.dataAvailable) } }) { return }
        }
    }

    /// Writes the agent's remote configuration status line (`RemoteConfigRelay`) when the collector reads them and
    /// this stream has not carried the latest one. Called at the start of a write pass, with nothing pending; what
    /// the pair does not take stays in `pending`, ahead of the records.
    private func writeConfigStatusIfDue(_ pair: BoundStreamPair, _ connection: ConnectionID) {
        guard configAdvertised, let relay = uplink.remoteConfig, relay.publishedVersion > configStatusSent else { return }
        let status = relay.latestStatus
        configStatusSent = status.version
        var line = ByteBufferAllocator().buffer(capacity: status.line.count)
        line.writeBytes(status.line)
        guard let encoded = encode(line, connection: connection) else { return }
        pending = encoded
        let written = pair.write(&pending)
        note(bytes: written, lineBytes: line.readableBytes, records: 0)
        _ = machine.wrote(
            connection, lastSequence: nil, wroteBytes: written > 0, pairFull: pending.readableBytes > 0, now: .now)
    }

    /// Writes a heartbeat line. Only called while the uplink can write, so no partial frame is pending.
    func sendHeartbeat() {
        guard let pair, let connection = machine.currentStream?.connection, pending.readableBytes == 0 else { return }
        var line = ByteBufferAllocator().buffer(capacity: 40)
        WireLineWriter.appendHeartbeat(timestamp: WallClock.nowNanoseconds(), to: &line)
        guard let encoded = encode(line, connection: connection) else { return }
        pending = encoded
        let written = pair.write(&pending)
        note(bytes: written, lineBytes: line.readableBytes, records: 0)
        uplink.statisticsBox.withLock { $0.heartbeatsSent += 1 }
        _ = machine.wrote(
            connection, lastSequence: nil, wroteBytes: written > 0, pairFull: pending.readableBytes > 0, now: .now)
    }

    /// An empty buffer for a pass's lines: the kept one when the stream is compressed (the lines only pass through
    /// the compressor), a new one otherwise (the pair takes slices of it without copying).
    private func takeFillBuffer(capacity: Int) -> ByteBuffer {
        guard compressor != nil else { return ByteBufferAllocator().buffer(capacity: capacity) }
        return Self.takeKept(&lineScratch, minimumCapacity: capacity)
    }

    /// `kept`, emptied, with `kept` left empty: the returned buffer holds the only reference to the storage, so
    /// clearing it keeps the storage instead of copying it.
    static func takeKept(_ kept: inout ByteBuffer, minimumCapacity: Int = 0) -> ByteBuffer {
        var buffer = kept
        kept = ByteBuffer()
        buffer.clear(minimumCapacity: minimumCapacity)
        return buffer
    }

    /// Keeps a compressed pass's line buffer for the next pass.
    private func returnFillBuffer(_ buffer: ByteBuffer) {
        if compressor != nil { lineScratch = buffer }
    }

    private func note(bytes: Int, lineBytes: Int, records: Int) {
        uplink.statisticsBox.withLock {
            $0.writePasses += 1
            $0.bytesWritten += bytes
            $0.lineBytesWritten += lineBytes
            $0.recordsWritten += records
        }
    }
}
