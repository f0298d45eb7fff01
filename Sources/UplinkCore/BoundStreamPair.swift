import DequeModule
import NIOCore
import Synchronization

/// What the output side of a `BoundStreamPair` tells its writer.
public enum BoundStreamEvent: Sendable {
    /// The pair has room. Raised once when the reader first reads (the stream is open), and afterwards once each
    /// time reads have freed at least half the capacity after the writer was turned away (a write that did not take
    /// everything offered or that filled the pair). Never raised twice for one such occasion, never lost.
    ///
    /// Half, not any: a writer that refilled whatever a read had just freed would, once the reader took small
    /// chunks, keep writing chunks of that size (the pair stays full, every read frees a few bytes, every write
    /// fills them), and a stream would cross the connection a few bytes per write ("silly window syndrome").
    case hasSpaceAvailable
    /// The reading side failed or was cancelled; further writes take nothing.
    case errorOccurred(any Error)
    /// The reading side closed without error; further writes take nothing.
    case endEncountered
}

/// A bounded in-memory byte pipe with two ends, standing in for Foundation's `Stream.getBoundStreams`, which
/// Foundation on Linux lacks.
///
/// The **output side** (`write`, `close`, `fail`) never blocks: a write takes as many bytes as fit and returns
/// the count. The writer learns about room through `BoundStreamEvent.hasSpaceAvailable` and writes only then.
/// The **input side** (`input`) is an `AsyncSequence` of `ByteBuffer` meant to be handed to AsyncHTTPClient as a
/// streamed request body (`HTTPClientRequest.Body.stream(pair.input, length: .unknown)`); each read frees space.
///
/// Closing or failing one side reaches the other: the reader sees the end (after the buffered bytes) or the error;
/// the writer gets `endEncountered` or `errorOccurred` and its writes return 0.
public final class BoundStreamPair: Sendable {
    /// 64 KiB.
    public static let defaultCapacity = 64 * 1024

    /// Most bytes buffered between the two sides.
    public let capacity: Int
    private let state: Mutex<State>
    private let onEvent: @Sendable (BoundStreamEvent) -> Void

    /// Creates an open pair. `onEvent` receives the output side's events; it is called without locks held, from
    /// whichever thread caused the event, and should only hand the event on (e.g. yield it into a stream).
    public init(capacity: Int = BoundStreamPair.defaultCapacity, onEvent: @escaping @Sendable (BoundStreamEvent) -> Void) {
        precondition(capacity > 0, "stream pair capacity must be positive")
        self.capacity = capacity
        self.onEvent = onEvent
        self.state = Mutex(State())
    }

    /// The reading end. Every value reads the same stream; read it from one task at a time.
    public var input: BoundInputStream { BoundInputStream(pair: self) }

    // MARK: Output side

    /// Bytes that a write can take right now (0 once either side is closed).
    public var availableSpace: Int {
        state.withLock { $0.isWritable ? capacity - $0.bufferedBytes : 0 }
    }

    /// Takes as many bytes of `bytes` as fit, copying them, and returns how many it took. Never blocks.
    public func write(_ bytes: UnsafeRawBufferPointer) -> Int {
        write(count: bytes.count) { length in
            var buffer = ByteBufferAllocator().buffer(capacity: length)
            buffer.writeBytes(UnsafeRawBufferPointer(rebasing: bytes[0..<length]))
            return buffer
        }
    }

    /// Takes as many readable bytes of `buffer` as fit, without copying them, and moves `buffer`'s reader index
    /// past them. Returns how many it took. Never blocks.
    public func write(_ buffer: inout ByteBuffer) -> Int {
        var source = buffer
        let taken = write(count: source.readableBytes) { length in source.readSlice(length: length)! }
        buffer.moveReaderIndex(forwardBy: taken)
        return taken
    }

    private func write(count: Int, take: (Int) -> ByteBuffer) -> Int {
        let (taken, handOff): (Int, (CheckedContinuation<ByteBuffer?, any Error>, ByteBuffer)?) = state.withLock { state in
            guard state.isWritable else { return (0, nil) }
            let length = min(count, capacity - state.bufferedBytes)
            if length < count || state.bufferedBytes + length == capacity {
                state.spaceSignalArmed = true
            }
            guard length > 0 else { return (0, nil) }
            let chunk = take(length)
            if let reader = state.waitingReader {
                // The reader is parked on an empty pipe: hand the bytes straight over.
                state.waitingReader = nil
                return (length, (reader, chunk))
            }
            state.chunks.append(chunk)
            state.bufferedBytes += length
            return (length, nil)
        }
        if let (reader, chunk) = handOff { reader.resume(returning: chunk) }
        return taken
    }

    /// Ends the stream from the output side: the reader gets the buffered bytes, then the end.
    public func close() {
        let reader = state.withLock { state -> CheckedContinuation<ByteBuffer?, any Error>? in
            guard case .open = state.writer else { return nil }
            state.writer = .closed
            defer { state.waitingReader = nil }
            return state.chunks.isEmpty ? state.waitingReader : nil
        }
        reader?.resume(returning: nil)
    }

    /// Fails the stream from the output side: buffered bytes are discarded and the reader throws `error`.
    public func fail(_ error: any Error) {
        let reader = state.withLock { state -> CheckedContinuation<ByteBuffer?, any Error>? in
            guard case .open = state.writer else { return nil }
            state.writer = .failed(error)
            state.chunks.removeAll()
            state.bufferedBytes = 0
            defer { state.waitingReader = nil }
            return state.waitingReader
        }
        reader?.resume(throwing: error)
    }

    // MARK: Input side

    fileprivate func read() async throws -> ByteBuffer? {
        try await withTaskCancellationHandler {
            try await withCheckedThrowingContinuation { (continuation: CheckedContinuation<ByteBuffer?, any Error>) in
                enum Step {
                    case deliver(ByteBuffer?, signalSpace: Bool)
                    case fail(any Error, notifyWriter: Bool)
                    case wait(signalSpace: Bool)
                }
                let step: Step = state.withLock { state in
                    if state.readerFinished { return .deliver(nil, signalSpace: false) }
                    if Task.isCancelled {
                        // Reading in a cancelled task finishes the input side, as `finishInput(error:)` would.
                        return .fail(CancellationError(), notifyWriter: state.finishReader())
                    }
                    if let chunk = state.chunks.popFirst() {
                        state.bufferedBytes -= chunk.readableBytes
                        return .deliver(chunk, signalSpace: state.takeSpaceSignal(capacity: capacity))
                    }
                    switch state.writer {
                    case .failed(let error):
                        state.readerFinished = true
                        return .fail(error, notifyWriter: false)
                    case .closed:
                        state.readerFinished = true
                        return .deliver(nil, signalSpace: false)
                    case .open:
                        state.waitingReader = continuation
                        return .wait(signalSpace: state.takeSpaceSignal(capacity: capacity))
                    }
                }
                switch step {
                case .deliver(let chunk, let signalSpace):
                    continuation.resume(returning: chunk)
                    if signalSpace { onEvent(.hasSpaceAvailable) }
                case .fail(let error, let notifyWriter):
                    if notifyWriter { onEvent(.errorOccurred(error)) }
                    continuation.resume(throwing: error)
                case .wait(let signalSpace):
                    if signalSpace { onEvent(.hasSpaceAvailable) }
                }
            }
        } onCancel: {
            cancelWaitingReader()
        }
    }

    /// Cancellation of a task parked in `read()`. A task cancelled before it parks sees `Task.isCancelled` under the
    /// lock in `read()` instead (the flag is set before this handler runs), so exactly one of the two acts.
    private func cancelWaitingReader() {
        let (reader, notify) = state.withLock { state -> (CheckedContinuation<ByteBuffer?, any Error>?, Bool) in
            guard let reader = state.waitingReader else { return (nil, false) }
            state.waitingReader = nil
            return (reader, state.finishReader())
        }
        reader?.resume(throwing: CancellationError())
        if notify { onEvent(.errorOccurred(CancellationError())) }
    }

    /// Closes the stream from the input side. The writer gets `endEncountered` (no error) or
    /// `errorOccurred(error)`; buffered bytes are discarded and later writes take nothing.
    public func finishInput(error: (any Error)? = nil) {
        let (reader, notify) = state.withLock { state -> (CheckedContinuation<ByteBuffer?, any Error>?, Bool) in
            guard !state.readerFinished else { return (nil, false) }
            let notify = state.finishReader()
            defer { state.waitingReader = nil }
            return (state.waitingReader, notify)
        }
        if let reader {
            if let error { reader.resume(throwing: error) } else { reader.resume(returning: nil) }
        }
        if notify { onEvent(error.map { .errorOccurred($0) } ?? .endEncountered) }
    }
}

extension BoundStreamPair {
    fileprivate enum WriterState {
        case open
        case closed
        case failed(any Error)
    }

    fileprivate struct State {
        var chunks: Deque<ByteBuffer> = []
        var bufferedBytes = 0
        var waitingReader: CheckedContinuation<ByteBuffer?, any Error>?
        /// The writer was turned away (or the stream has not opened yet) and is owed one `hasSpaceAvailable`.
        var spaceSignalArmed = true
        var writer = WriterState.open
        var readerFinished = false
        /// `endEncountered` or `errorOccurred` was delivered: no more events.
        var eventsEnded = false

        var isWritable: Bool {
            guard case .open = writer else { return false }
            return !readerFinished
        }

        /// Ends the input side and discards the buffered bytes. Returns whether the writer still has to be told.
        mutating func finishReader() -> Bool {
            readerFinished = true
            chunks.removeAll()
            bufferedBytes = 0
            defer { eventsEnded = true }
            return !eventsEnded
        }

        /// Whether the owed `hasSpaceAvailable` is due now: at least half of `capacity` is free.
        mutating func takeSpaceSignal(capacity: Int) -> Bool {
            guard spaceSignalArmed, isWritable, !eventsEnded, capacity - bufferedBytes >= (capacity + 1) / 2 else {
                return false
            }
            spaceSignalArmed = false
            return true
        }
    }
}

/// The reading end of a `BoundStreamPair`: an `AsyncSequence` of the written bytes, ending when the output side
/// closes and throwing when it fails. Read it from one task at a time.
///
/// Reading in a cancelled task (or cancelling a task waiting for bytes) throws `CancellationError` and finishes the
/// input side like `finish(error: CancellationError())`: buffered bytes are discarded and the writer gets
/// `errorOccurred`.
public struct BoundInputStream: AsyncSequence, Sendable {
    public typealias Element = ByteBuffer

    fileprivate let pair: BoundStreamPair

    /// Closes the stream from the reading side; see `BoundStreamPair.finishInput(error:)`.
    public func finish(error: (any Error)? = nil) { pair.finishInput(error: error) }

    public struct AsyncIterator: AsyncIteratorProtocol {
        fileprivate let pair: BoundStreamPair

        public mutating func next() async throws -> ByteBuffer? {
            try await pair.read()
        }
    }

    public func makeAsyncIterator() -> AsyncIterator {
        AsyncIterator(pair: pair)
    }
}
