/// Bytes written on the current stream (as they go into the pair: compressed when the stream is) that the collector
/// has not acknowledged yet, and how many more may be written.
///
/// The bound stream pair limits what waits for the HTTP client to take it, but the client hands each chunk it took to
/// its event loop without waiting for the socket, so while the collector is slower than the agent (a backlog) the
/// chunks queued there would grow without bound (docs/deploy.md, "Draining a backlog"). The window bounds the whole
/// path behind the pair (client, event loop, socket buffers, the collector's work) by what is acknowledged: the uplink
/// takes no new frames from the ring while `room` is 0 and resumes on the next ack.
struct InFlightWindow {
    /// Most unacknowledged bytes: `max(1 MiB, 16 × stream_buffer)`, a few milliseconds of acknowledgements at the
    /// highest rates measured on loopback.
    let limit: Int
    /// Per fill taken from the ring: its last sequence and the stream's written bytes after it.
    private var fills: [(sequence: UInt64, writtenAfter: Int)] = []
    /// Index of the oldest fill not acknowledged yet (the array is compacted now and then).
    private var head = 0
    private var written = 0
    private var released = 0

    init(streamBufferBytes: Int) {
        limit = max(1 << 20, 16 * streamBufferBytes)
    }

    /// Unacknowledged bytes written.
    var bytes: Int { written - released }

    /// How many more bytes may be taken from the ring now.
    var room: Int { max(0, limit - bytes) }

    /// A fill of `count` bytes ending with record `sequence` was taken for this stream.
    mutating func took(_ count: Int, through sequence: UInt64) {
        written += count
        fills.append((sequence, written))
    }

    /// The collector acknowledged everything through `sequence`.
    mutating func acknowledged(through sequence: UInt64) {
        while head < fills.count, fills[head].sequence <= sequence {
            released = fills[head].writtenAfter
            head += 1
        }
        if head >= 256 && head * 2 >= fills.count {
            fills.removeFirst(head)
            head = 0
        }
    }

    /// A new stream starts with nothing in flight.
    mutating func reset() {
        fills.removeAll(keepingCapacity: true)
        head = 0
        written = 0
        released = 0
    }
}
