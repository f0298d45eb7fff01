import NIOCore
import UplinkWire

/// The receiving side of one stream, on its channel's loop: takes the body's parts from the `StreamBodyTap` as the
/// channel reads them, decodes and sorts them (`StreamProcessor`) and stores the batches, one at a time and in order.
/// Batches received while one is being stored wait, merged into one, so reading and storing overlap and slow storage
/// turns many small commits into fewer large ones; above `waitingLimit` bytes of them reading pauses. A compressed
/// part is decoded only while fewer than `waitingLimit` bytes wait: the rest of it (and parts the tap still hands
/// over) waits undecoded until a store makes room, so a stream holds at most about `waitingLimit` of decoded lines
/// beside the batch being stored, however far a part decompresses. A small batch is usually stored right here, on
/// the loop (`Storage.commit(_:completion:)`), a large one on the storage thread.
///
/// It ends (`ending`, given once to `finished`) when the body ends, the body fails, storing fails, or the stream is
/// stopped; what was decoded before the end is stored first (a failed or stopped body drops what still waited to be
/// decoded: never stored, so never acknowledged, the agent sends it again).
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
    /// Compressed parts not yet fed to the decompressor, in order.
    private var undecodedParts: [ByteBuffer] = []
    /// The part fed last may have output left.
    private var decodingPart = false
    /// Inside `decodeWhileRoom`: a store it triggers that makes room asks for no nested round.
    private var inDecode = false
    /// The body ended while parts still waited to be decoded: it ends once they are.
    private var bodyEndWaits = false

    /// Compressed input waits for room to be decoded.
    private var decodingHeld: Bool { decodingPart || !undecodedParts.isEmpty }

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
        guard decompressor != nil else {
            take(processor.process(part))
            return waitingBytes <= waitingLimit
        }
        undecodedParts.append(part)
        decodeWhileRoom()
        return readingEnding != nil || (waitingBytes <= waitingLimit && !decodingHeld)
    }

    func bodyEnded() {
        guard readingEnding == nil else { return }
        guard !decodingHeld else {
            bodyEndWaits = true
            return
        }
        if let cut = processor.finish() { take(cut) }
        endReading(.bodyEnded)
    }

    /// Decodes waiting compressed input while no more than `waitingLimit` bytes of lines wait to be stored; ends the
    /// body once all is decoded if its end came meanwhile.
    private func decodeWhileRoom() {
        guard let decompressor, !inDecode else { return }
        inDecode = true
        do throws(WireCompressionError) {
            while readingEnding == nil, waitingBytes <= waitingLimit {
                if !decodingPart {
                    guard !undecodedParts.isEmpty else { break }
                    decompressor.feed(undecodedParts.removeFirst())
                    decodingPart = true
                }
                if let piece = try decompressor.next() {
                    take(processor.process(piece))
                } else {
                    decodingPart = false
                }
            }
        } catch {
            inDecode = false
            decodingFailed(error)
            endReading(.failed(error))
            return
        }
        inDecode = false
        if bodyEndWaits, !decodingHeld {
            bodyEndWaits = false
            bodyEnded()
        }
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
        // Input not decoded by the end is not stored, so not acknowledged: the agent sends it again.
        undecodedParts.removeAll()
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
            if wasFull, readingEnding == nil {
                decodeWhileRoom()
                if !decodingHeld { tap.resumeReading() }
            }
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
