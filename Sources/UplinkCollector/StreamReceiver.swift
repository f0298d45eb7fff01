import NIOCore
import UplinkWire

/// The receiving side of one stream, on its channel's loop: takes the body's parts from the `StreamBodyTap` as the
/// channel reads them, decodes and sorts them (`StreamProcessor`) and stores the batches, one at a time and in order.
/// Batches received while one is being stored wait, merged into one, so reading and storing overlap and slow storage
/// turns many small commits into fewer large ones; above `waitingLimit` bytes of them reading pauses. A small batch
/// is usually stored right here, on the loop (`Storage.commit(_:completion:)`), a large one on the storage thread.
///
/// It ends (`ending`, given once to `finished`) when the body ends, the body fails, storing fails, or the stream is
/// stopped; what was received before the end is stored first.
final class StreamReceiver: StreamBodyReceiver {
    /// What a received and sorted batch is handed to for storing; calls back on any thread.
    typealias Store = (ReceivedBatch, _ completion: @escaping @Sendable (Result<Void, any Error>) -> Void) -> Void

    private let loop: any EventLoop
    private let tap: StreamBodyTap
    private var processor: StreamProcessor
    private let decompressor: StreamDecompressor?
    private let waitingLimit: Int
    private let store: Store
    /// A batch with heartbeat lines arrived.
    private let heartbeat: () -> Void
    /// Counts a body that could not be decoded.
    private let decodingFailed: (WireCompressionError) -> Void
    /// The stream was asked to stop (its connection may then close before `stop()` comes).
    private let isStopRequested: () -> Bool
    private var finished: ((StreamEnding) -> Void)?

    private var waiting: ReceivedBatch?
    private var waitingBytes = 0
    private var storing = false
    /// Inside `storeWaiting`: a store completed synchronously asks for another round instead of recursing.
    private var inStoreWaiting = false
    private var storeAgain = false
    /// Why reading ended, once it did.
    private var readingEnding: StreamEnding?
    private var storeFailure: (any Error)?
    private var stopped = false

    init(
        loop: any EventLoop, tap: StreamBodyTap, processor: StreamProcessor, encoding: WireCompression,
        waitingLimit: Int, store: @escaping Store, heartbeat: @escaping () -> Void,
        decodingFailed: @escaping (WireCompressionError) -> Void, isStopRequested: @escaping () -> Bool,
        finished: @escaping (StreamEnding) -> Void
    ) throws {
        self.loop = loop
        self.tap = tap
        self.processor = processor
        // A compressed body is decoded part by part, in bounded pieces (StreamDecompressor's limits).
        self.decompressor = encoding == .none ? nil : try StreamDecompressor(encoding)
        self.waitingLimit = waitingLimit
        self.store = store
        self.heartbeat = heartbeat
        self.decodingFailed = decodingFailed
        self.isStopRequested = isStopRequested
        self.finished = finished
    }

    // MARK: StreamBodyReceiver

    func receive(_ part: ByteBuffer) -> Bool {
        guard readingEnding == nil else { return true }
        guard let decompressor else {
            take(processor.process(part))
            return waitingBytes <= waitingLimit
        }
        decompressor.feed(part)
        do throws(WireCompressionError) {
            while let piece = try decompressor.next() {
                take(processor.process(piece))
            }
        } catch {
            decodingFailed(error)
            endReading(.failed(error))
            return true
        }
        return waitingBytes <= waitingLimit
    }

    func bodyEnded() {
        guard readingEnding == nil else { return }
        if let cut = processor.finish() { take(cut) }
        endReading(.bodyEnded)
    }

    func bodyFailed(_ error: any Error) {
        endReading(.failed(error))
    }

    /// Ends the stream at the next batch boundary (the batch being stored completes first).
    func stop() {
        stopped = true
        endReading(.stopped)
    }

    // MARK: Storing

    private func take(_ batch: ReceivedBatch) {
        if batch.heartbeats > 0 { heartbeat() }
        if waiting == nil {
            waiting = batch
        } else {
            waiting?.merge(batch)
        }
        waitingBytes += batch.lines.byteCount
        storeWaiting()
    }

    private func endReading(_ ending: StreamEnding) {
        guard readingEnding == nil else { return }
        readingEnding = ending
        tap.detach()
        storeWaiting()
    }

    /// Stores what waits when nothing is being stored; finishes once reading ended and nothing waits.
    private func storeWaiting() {
        guard !inStoreWaiting else {
            storeAgain = true
            return
        }
        inStoreWaiting = true
        defer { inStoreWaiting = false }
        repeat {
            storeAgain = false
            guard !storing, storeFailure == nil, let batch = waiting else { break }
            let wasFull = waitingBytes > waitingLimit
            (waiting, waitingBytes) = (nil, 0)
            storing = true
            let receiver = NIOLoopBound(self, eventLoop: loop)
            let loop = self.loop
            store(batch) { result in
                if loop.inEventLoop {
                    receiver.value.stored(result)
                } else {
                    loop.execute { receiver.value.stored(result) }
                }
            }
            if wasFull, readingEnding == nil { tap.resumeReading() }
        } while storeAgain
        finishIfDone()
    }

    private func stored(_ result: Result<Void, any Error>) {
        storing = false
        if case .failure(let error) = result {
            storeFailure = error
            endReading(.failed(error))
        }
        storeWaiting()
    }

    private func finishIfDone() {
        guard let readingEnding, !storing, waiting == nil || storeFailure != nil, let finished else { return }
        self.finished = nil
        if let storeFailure {
            finished(.failed(storeFailure))
        } else {
            finished(stopped || isStopRequested() ? .stopped : readingEnding)
        }
    }
}
