import DequeModule
import NIOCore

/// What the output side of a `BoundStreamPair` tells its writer.
public enum BoundStreamEvent: Sendable {
    /// The pair has room. Raised once when the input side opens (a sink was bound: the stream is open), and
    /// afterwards once each time the sink's sends have freed at least half the capacity after the writer was turned
    /// away (a write that did not take everything offered or that filled the pair). Never raised twice for one such
    /// occasion, never lost.
    ///
    /// Half, not any: a writer that refilled whatever a send had just freed would, once the transport took small
    /// chunks, keep writing chunks of that size (the pair stays full, every send frees a few bytes, every write
    /// fills them), and a stream would cross the connection a few bytes per write ("silly window syndrome").
    case hasSpaceAvailable
    /// The input side failed (the transport gave the body up); further writes take nothing.
    case errorOccurred(any Error)
    /// The input side ended without error; further writes take nothing.
    case endEncountered
}

/// What drains a `BoundStreamPair`'s input side: the transport's body writer (AsyncHTTPClient's
/// `HTTPClient.Body.StreamWriter` in the uplink). Called on the pair's event loop only.
public protocol BoundStreamSink: AnyObject {
    /// Takes `chunk` for sending. Returns whether the transport wants more now; after `false` the pair sends
    /// nothing until `BoundStreamPair.sinkWritable()`. The chunk's bytes count against the pair's capacity until the
    /// transport reports them sent (`BoundStreamPair.sinkSent(_:)`).
    func send(_ chunk: ByteBuffer) -> Bool
    /// The output side ended: cleanly (nil, after every chunk was handed over) or with `error` (chunks not yet handed
    /// over are discarded).
    func finish(error: (any Error)?)
}

/// A bounded byte pipe with two ends, standing in for Foundation's `Stream.getBoundStreams` (which Foundation on
/// Linux lacks), bound to one event loop: every call and every event happens on `loop`, so it needs no lock.
///
/// The **output side** (`write`, `close`, `fail`) never blocks: a write takes as many bytes as fit and returns the
/// count. The writer learns about room through `BoundStreamEvent.hasSpaceAvailable` and writes only then.
/// The **input side** is a sink (`bind(_:)`) that the pair pushes every written chunk into at once while the sink
/// wants more; the sink reports the bytes it sent (`sinkSent(_:)`, which frees their room) and when it wants more
/// again after pausing (`sinkWritable()`). Capacity counts both the chunks waiting here and those handed to the sink
/// but not sent yet, so it bounds everything between the writer and the socket.
///
/// Events are delivered through `loop.execute`, never from inside a call of the writer or the sink: a write whose
/// chunk the transport sends at once (the sink reports it sent before `send` returns) cannot re-enter the writer.
/// So the writer sees an event in a later loop turn than the call that caused it.
///
/// Closing or failing one side reaches the other: the sink gets `finish` (after the waiting chunks, or with the
/// error), the writer gets `endEncountered` or `errorOccurred` and its writes return 0.
public final class BoundStreamPair {
    /// 64 KiB.
    public static let defaultCapacity = 64 * 1024

    /// Most bytes between the writer and the socket: waiting here plus handed to the sink and not yet sent.
    public let capacity: Int
    /// The loop every call and event happens on.
    public let loop: any EventLoop
    private let onEvent: (BoundStreamEvent) -> Void

    private var chunks: Deque<ByteBuffer> = []
    /// Bytes in `chunks`.
    private var queuedBytes = 0
    /// Bytes handed to the sink that it has not reported sent.
    private var unsentBytes = 0
    private var sink: (any BoundStreamSink)?
    /// The sink said it wants nothing more until `sinkWritable()`.
    private var sinkPaused = false
    /// `push()` is running (a sink that reports sends or writability from inside `send` re-enters it).
    private var pushing = false
    /// The writer was turned away (or the stream has not opened yet) and is owed one `hasSpaceAvailable`.
    private var spaceSignalArmed = true
    private var writer = WriterState.open
    /// The input side ended (the sink finished it, or it was given the end).
    private var inputFinished = false
    /// `endEncountered` or `errorOccurred` was raised: no more events.
    private var eventsEnded = false

    /// Creates an open pair on `loop`. `onEvent` receives the output side's events on `loop`.
    public init(
        capacity: Int = BoundStreamPair.defaultCapacity, loop: any EventLoop,
        onEvent: @escaping (BoundStreamEvent) -> Void
    ) {
        precondition(capacity > 0, "stream pair capacity must be positive")
        self.capacity = capacity
        self.loop = loop
        self.onEvent = onEvent
    }

    private var isWritable: Bool {
        guard case .open = writer else { return false }
        return !inputFinished
    }

    // MARK: Output side

    /// Bytes that a write can take right now (0 once either side is closed).
    public var availableSpace: Int {
        isWritable ? capacity - queuedBytes - unsentBytes : 0
    }

    /// Bytes written and not yet reported sent by the sink.
    public var bufferedBytes: Int { queuedBytes + unsentBytes }

    /// Takes as many bytes of `bytes` as fit, copying them, and returns how many it took. Never blocks.
    public func write(_ bytes: UnsafeRawBufferPointer) -> Int {
        let length = min(bytes.count, availableSpace)
        var buffer = ByteBufferAllocator().buffer(capacity: length)
        buffer.writeBytes(UnsafeRawBufferPointer(rebasing: bytes[0..<length]))
        let taken = write(&buffer)
        if taken < bytes.count {
            spaceSignalArmed = true
            signalSpaceIfDue()
        }
        return taken
    }

    /// Takes as many readable bytes of `buffer` as fit, without copying them, and moves `buffer`'s reader index
    /// past them. Returns how many it took. Never blocks.
    public func write(_ buffer: inout ByteBuffer) -> Int {
        loop.assertInEventLoop()
        var taken = 0
        // A sink that sends at once frees the room during `push()`: go on while there is some.
        while isWritable, buffer.readableBytes > 0 {
            let room = capacity - queuedBytes - unsentBytes
            guard room > 0 else { break }
            let chunk = buffer.readSlice(length: min(room, buffer.readableBytes))!
            taken += chunk.readableBytes
            chunks.append(chunk)
            queuedBytes += chunk.readableBytes
            push()
        }
        if buffer.readableBytes > 0 || queuedBytes + unsentBytes == capacity {
            spaceSignalArmed = true
            // The sink may have sent everything from inside `push()`: then no later send would raise the signal.
            signalSpaceIfDue()
        }
        return taken
    }

    /// Ends the stream from the output side: the sink gets the waiting chunks, then the end.
    public func close() {
        loop.assertInEventLoop()
        guard case .open = writer else { return }
        writer = .closed
        finishSinkIfDrained()
    }

    /// Fails the stream from the output side: waiting chunks are discarded and the sink gets `error`.
    public func fail(_ error: any Error) {
        loop.assertInEventLoop()
        guard case .open = writer else { return }
        writer = .failed(error)
        chunks.removeAll()
        queuedBytes = 0
        let sink = self.sink
        self.sink = nil
        sink?.finish(error: error)
    }

    // MARK: Input side

    /// Opens the input side: `sink` drains the pair from now on. The writer gets its first `hasSpaceAvailable`.
    /// Binding to a pair already failed or closed finishes `sink` at once.
    public func bind(_ sink: any BoundStreamSink) {
        loop.assertInEventLoop()
        precondition(self.sink == nil, "a stream pair is drained by one sink")
        if case .failed(let error) = writer {
            sink.finish(error: error)
            return
        }
        guard !inputFinished else {
            sink.finish(error: nil)
            return
        }
        self.sink = sink
        sinkPaused = false
        push()
        if case .closed = writer { finishSinkIfDrained() }
        signalSpaceIfDue()
    }

    /// The sink sent `count` bytes of what it was given: their room is free again.
    public func sinkSent(_ count: Int) {
        loop.assertInEventLoop()
        unsentBytes = max(0, unsentBytes - count)
        signalSpaceIfDue()
    }

    /// The sink wants more again after `send` returned false.
    public func sinkWritable() {
        loop.assertInEventLoop()
        sinkPaused = false
        push()
        if case .closed = writer { finishSinkIfDrained() }
    }

    /// Closes the stream from the input side (the transport ended the body). The writer gets `endEncountered` (no
    /// error) or `errorOccurred(error)`; waiting chunks are discarded and later writes take nothing.
    public func finishInput(error: (any Error)? = nil) {
        loop.assertInEventLoop()
        guard !inputFinished else { return }
        inputFinished = true
        chunks.removeAll()
        queuedBytes = 0
        unsentBytes = 0
        sink = nil
        guard !eventsEnded else { return }
        eventsEnded = true
        raise(error.map { .errorOccurred($0) } ?? .endEncountered)
    }

    // MARK: Helpers

    /// Hands waiting chunks to the sink while it wants more.
    private func push() {
        guard !pushing else { return }
        pushing = true
        defer { pushing = false }
        while !sinkPaused, let sink, let chunk = chunks.popFirst() {
            queuedBytes -= chunk.readableBytes
            unsentBytes += chunk.readableBytes
            if !sink.send(chunk) { sinkPaused = true }
        }
    }

    private func finishSinkIfDrained() {
        guard chunks.isEmpty, let sink else { return }
        self.sink = nil
        sink.finish(error: nil)
    }

    /// Raises the owed `hasSpaceAvailable` when the stream is open and at least half of `capacity` is free.
    private func signalSpaceIfDue() {
        guard spaceSignalArmed, sink != nil, isWritable, !eventsEnded,
            capacity - queuedBytes - unsentBytes >= (capacity + 1) / 2
        else { return }
        spaceSignalArmed = false
        raise(.hasSpaceAvailable)
    }

    private func raise(_ event: BoundStreamEvent) {
        let deliver = NIOLoopBound(onEvent, eventLoop: loop)
        loop.execute { deliver.value(event) }
    }

    private enum WriterState {
        case open
        case closed
        case failed(any Error)
    }
}
