import HTTPTypes
import NIOCore
import NIOEmbedded
import NIOHTTPTypes
import Synchronization
import Testing
import UplinkWire

@testable import UplinkCollector

/// Counts the `read()`s that get past the tap (it sits after this handler, nearer the application).
private final class ReadCounter: ChannelOutboundHandler {
    typealias OutboundIn = Any
    var reads = 0
    func read(context: ChannelHandlerContext) {
        reads += 1
        context.read()
    }
}

/// A receiver that notes what it gets and takes more only while `accepting`.
private final class NotingReceiver: StreamBodyReceiver {
    var parts: [String] = []
    var ended = false
    var failure: (any Error)?
    var accepting = true
    var onReceive: (() -> Void)?

    func receive(_ part: ByteBuffer) -> Bool {
        parts.append(String(buffer: part))
        onReceive?()
        return accepting
    }
    func bodyEnded() { ended = true }
    func bodyFailed(_ error: any Error) { failure = error }
}

/// A channel with a `StreamBodyTap` and a read counter in front of it.
private struct TappedChannel {
    let channel = EmbeddedChannel()
    let tap: StreamBodyTap
    let reads = ReadCounter()

    init(holdLimit: Int = 1 << 20) throws {
        tap = StreamBodyTap(holdLimit: holdLimit)
        try channel.pipeline.syncOperations.addHandlers([reads, tap])
        try channel.connect(to: SocketAddress(ipAddress: "127.0.0.1", port: 1)).wait()
    }

    func send(_ part: HTTPRequestPart) throws { try channel.writeInbound(part) }
    func head(_ method: HTTPRequest.Method = .post, _ path: String = "/v1/stream") throws {
        try send(.head(HTTPRequest(method: method, scheme: "http", authority: "collector", path: path)))
    }
    func body(_ text: String) throws { try send(.body(ByteBuffer(string: text))) }

    /// What went on to the application, as `head PATH`, `body TEXT` and `end`.
    func forwarded() throws -> [String] {
        var parts: [String] = []
        while let part = try channel.readInbound(as: HTTPRequestPart.self) {
            switch part {
            case .head(let head): parts.append("head \(head.path ?? "")")
            case .body(let bytes): parts.append("body \(String(buffer: bytes))")
            case .end: parts.append("end")
            }
        }
        return parts
    }

    /// Asks for a read, as the application does, and says whether it got past the tap.
    func readPasses() -> Bool {
        let before = reads.reads
        channel.read()
        return reads.reads > before
    }
}

@Suite struct StreamBodyTapTests {
    @Test func otherRequestsPassUntouched() throws {
        let tapped = try TappedChannel()
        for (method, path) in [(HTTPRequest.Method.get, "/v1/stream"), (.post, "/v1/streamer"), (.post, "/v1/config")] {
            try tapped.head(method, path)
            try tapped.body("a")
            try tapped.send(.end(nil))
            #expect(try tapped.forwarded() == ["head \(path)", "body a", "end"])
            #expect(tapped.readPasses())
        }
    }

    @Test func theRoutersReadingOfThePathDecides() {
        for path in ["/v1/stream", "/v1/stream?x=1", "//v1//stream/", "/v1/stream/"] {
            #expect(StreamBodyTap.isStreamPath(path), "\(path)")
        }
        for path in ["/v1/streams", "/v1", "/v2/stream", "/V1/stream", "/v1/stream/x", "", "*"] {
            #expect(!StreamBodyTap.isStreamPath(path), "\(path)")
        }
        #expect(!StreamBodyTap.isStreamPath(nil))
    }

    @Test func aStreamBodyWaitsForItsReceiverThenArrivesInOrder() throws {
        let tapped = try TappedChannel()
        try tapped.head()
        try tapped.body("one")
        try tapped.body("two")
        try tapped.send(.end(nil))
        // The application sees the request's head and end; the body is the stream's.
        #expect(try tapped.forwarded() == ["head /v1/stream", "end"])
        let receiver = NotingReceiver()
        #expect(tapped.tap.attach(receiver))
        #expect(receiver.parts == ["one", "two"])
        #expect(receiver.ended)
        #expect(!tapped.tap.attach(NotingReceiver()), "one receiver per request")
        // A next request on the connection is looked at afresh.
        try tapped.head(.get, "/metrics")
        #expect(try tapped.forwarded() == ["head /metrics"])
    }

    @Test func partsGoStraightToAnAttachedReceiver() throws {
        let tapped = try TappedChannel()
        try tapped.head()
        let receiver = NotingReceiver()
        #expect(tapped.tap.attach(receiver))
        try tapped.body("a")
        try tapped.body("b")
        #expect(receiver.parts == ["a", "b"])
        #expect(!receiver.ended)
        try tapped.send(.end(nil))
        #expect(receiver.ended)
        #expect(try tapped.forwarded() == ["head /v1/stream", "end"])
    }

    @Test func readingPausesPastTheHoldLimitUntilTheReceiverComes() throws {
        let tapped = try TappedChannel(holdLimit: 8)
        try tapped.head()
        try tapped.body("12345")
        #expect(tapped.readPasses(), "below the limit")
        try tapped.body("67890")
        #expect(!tapped.readPasses(), "10 bytes wait: no more reading")
        #expect(tapped.reads.reads == 1)
        let receiver = NotingReceiver()
        #expect(tapped.tap.attach(receiver))
        #expect(tapped.reads.reads == 2, "the held read goes on once the receiver took what waited")
        #expect(receiver.parts == ["12345", "67890"])
    }

    @Test func aReceiverThatIsFullPausesReadingUntilItResumes() throws {
        let tapped = try TappedChannel()
        try tapped.head()
        let receiver = NotingReceiver()
        #expect(tapped.tap.attach(receiver))
        receiver.accepting = false
        try tapped.body("a")
        #expect(!tapped.readPasses())
        try tapped.body("b")  // already read when it paused: still delivered
        #expect(receiver.parts == ["a", "b"])
        receiver.accepting = true
        tapped.tap.resumeReading()
        #expect(tapped.reads.reads == 1)
        #expect(tapped.readPasses())
    }

    @Test func aRefusedStreamRequestsBodyIsDropped() throws {
        let tapped = try TappedChannel(holdLimit: 4)
        try tapped.head()
        try tapped.body("waiting")
        #expect(!tapped.readPasses())
        try tapped.channel.writeOutbound(HTTPResponsePart.head(HTTPResponse(status: .forbidden)))
        try tapped.channel.writeOutbound(HTTPResponsePart.end(nil))
        #expect(tapped.reads.reads == 1, "what waited is dropped, reading goes on")
        #expect(!tapped.tap.attach(NotingReceiver()))
        try tapped.body("more")
        try tapped.send(.end(nil))
        #expect(try tapped.forwarded() == ["head /v1/stream", "end"])
    }

    @Test func aConnectionLostBeforeOrAfterTheReceiverCameFailsTheBody() throws {
        let before = try TappedChannel()
        try before.head()
        try before.body("kept")
        before.channel.pipeline.fireChannelInactive()
        let late = NotingReceiver()
        #expect(before.tap.attach(late))
        #expect(late.parts == ["kept"])
        #expect(late.failure != nil && !late.ended)

        let after = try TappedChannel()
        try after.head()
        let receiver = NotingReceiver()
        #expect(after.tap.attach(receiver))
        after.channel.pipeline.fireErrorCaught(ChannelError.connectTimeout(.seconds(1)))
        #expect(receiver.failure != nil)
    }

    @Test func theInputEndingBeforeTheRequestDoesAbandonsItAfterItsEndItDoesNot() async throws {
        let cut = try TappedChannel()
        try cut.head()
        try cut.body("part")
        #expect(await !StreamBodyTap.isAbandoned(cut.channel))
        cut.channel.pipeline.fireUserInboundEventTriggered(ChannelEvent.inputClosed)
        #expect(await StreamBodyTap.isAbandoned(cut.channel), "the body can never end")
        let late = NotingReceiver()
        #expect(cut.tap.attach(late))
        #expect(late.parts == ["part"] && late.failure != nil)

        let complete = try TappedChannel()
        try complete.head()
        try complete.body("all")
        try complete.send(.end(nil))
        complete.channel.pipeline.fireUserInboundEventTriggered(ChannelEvent.inputClosed)
        #expect(await !StreamBodyTap.isAbandoned(complete.channel), "a complete request is served")

        let receiving = try TappedChannel()
        try receiving.head()
        let receiver = NotingReceiver()
        #expect(receiving.tap.attach(receiver))
        receiving.channel.pipeline.fireUserInboundEventTriggered(ChannelEvent.inputClosed)
        #expect(receiver.failure != nil, "a half-closed peer ends its stream at once, not at the idle timeout")

        let closed = try TappedChannel()
        try closed.head()
        _ = try? closed.channel.finish()
        #expect(await StreamBodyTap.isAbandoned(closed.channel))
    }

    @Test func aReceiverThatDetachesWhileTakingWhatWaitedGetsNoMore() throws {
        let tapped = try TappedChannel()
        try tapped.head()
        try tapped.body("a")
        try tapped.body("b")
        try tapped.send(.end(nil))
        let receiver = NotingReceiver()
        receiver.onReceive = { tapped.tap.detach() }
        #expect(tapped.tap.attach(receiver))
        #expect(receiver.parts == ["a"])
        #expect(!receiver.ended)
        try tapped.body("c")
        #expect(receiver.parts == ["a"])
    }
}

/// A `StreamReceiver` behind a tap, whose stores complete when the test says.
private final class ReceiverUnderTest {
    let tapped: TappedChannel
    var receiver: StreamReceiver!
    /// Each store asked for: the batch's sequences, and how to complete it.
    var stores: [(sequences: [UInt64], complete: @Sendable (Result<Void, any Error>) -> Void)] = []
    /// The states of the `config_status` lines each store was given.
    var statuses: [[ConfigStatus.State]] = []
    var ending: StreamEnding?
    var heartbeats = 0
    /// Complete every store at once, on the calling thread, as the inline store does.
    var storesAtOnce = false
    /// The agent's side of a compressed stream.
    private let compressor: StreamCompressor?

    init(waitingLimit: Int = 1 << 20, encoding: WireCompression = .none) throws {
        compressor = encoding == .none ? nil : try StreamCompressor(encoding)
        tapped = try TappedChannel()
        receiver = try StreamReceiver(
            loop: tapped.channel.embeddedEventLoop, tap: tapped.tap,
            processor: StreamProcessor(stream: StreamKey(agent: "r", epoch: 1), mark: 0, maxLineBytes: 1 << 16),
            encoding: encoding, waitingLimit: waitingLimit,
            store: { [unowned self] batch, completion in
                let sequences = batch.lines.lineArrays.map { line in
                    UInt64(String(decoding: line.drop(while: { $0 != UInt8(ascii: ":") }).dropFirst()
                        .prefix(while: { $0 != UInt8(ascii: ",") }), as: UTF8.self))!
                }
                self.statuses.append(batch.configStatuses.map(\.state))
                if self.storesAtOnce { return completion(.success(())) }
                self.stores.append((sequences, completion))
            },
            heartbeat: { [unowned self] in self.heartbeats += 1 },
            decodingFailed: { _ in }, isStopRequested: { false },
            finished: { [unowned self] in self.ending = $0 })
        try tapped.head()
        #expect(tapped.tap.attach(receiver))
    }

    func send(_ sequences: ClosedRange<UInt64>) throws {
        try tapped.send(.body(ByteBuffer(bytes: sequences.flatMap { recordLine($0) + [UInt8(ascii: "\n")] })))
    }

    /// The lines of `sequences` as one compressed part (a receiver made with an `encoding`), each part a flush of
    /// the one stream, as an agent sends.
    func sendCompressed(_ sequences: ClosedRange<UInt64>) throws {
        let compressor = try #require(compressor, "made with encoding: .none")
        var part = ByteBuffer()
        try compressor.compress(
            ByteBuffer(bytes: sequences.flatMap { recordLine($0) + [UInt8(ascii: "\n")] }), flush: true, into: &part)
        try tapped.send(.body(part))
    }

    /// Completes the stores one by one, the ones each completion starts too, up to `limit` of them.
    func completeEveryStore(limit: Int = 10_000) {
        var completed = 0
        while completed < stores.count, completed < limit {
            stores[completed].complete(.success(()))
            completed += 1
        }
    }

    var endingText: String? {
        switch ending {
        case nil: nil
        case .bodyEnded: "bodyEnded"
        case .stopped: "stopped"
        case .failed: "failed"
        }
    }
}

@Suite struct StreamReceiverTests {
    @Test func batchesAreStoredOneAtATimeInOrderAndWhatArrivesMeanwhileAsOne() throws {
        let test = try ReceiverUnderTest()
        try test.send(1...2)
        try test.send(3...3)
        try test.send(4...5)
        #expect(test.stores.map(\.sequences) == [[1, 2]], "one store at a time")
        test.stores[0].complete(.success(()))
        #expect(test.stores.map(\.sequences) == [[1, 2], [3, 4, 5]], "what waited goes as one batch")
        test.stores[1].complete(.success(()))
        #expect(test.stores.count == 2)
        #expect(test.ending == nil)
    }

    @Test func readingPausesWhileTooMuchWaitsAndGoesOnOnceItIsTaken() throws {
        let line = recordLine(1).count + 1
        let test = try ReceiverUnderTest(waitingLimit: 2 * line)
        try test.send(1...1)
        #expect(test.tapped.readPasses())
        try test.send(2...4)
        #expect(!test.tapped.readPasses(), "three lines wait, more than the limit")
        let reads = test.tapped.reads.reads
        test.stores[0].complete(.success(()))
        #expect(test.stores.map(\.sequences) == [[1], [2, 3, 4]])
        #expect(test.tapped.reads.reads == reads + 1, "the held read goes on")
    }

    @Test func aCompressedPartIsDecodedOnlyAsFarAsThereIsRoomTheRestAfterEachStore() throws {
        let limit = 64 << 10
        let test = try ReceiverUnderTest(waitingLimit: limit, encoding: .zstd)
        // About 60 bytes a line: some 1.2 MB decoded from a part of a few tens of KiB.
        try test.sendCompressed(1...20_000)
        #expect(test.stores.count == 1, "the first piece is being stored")
        #expect(!test.tapped.readPasses(), "the part is not decoded to its end, so reading waits")
        test.completeEveryStore()
        let stored = test.stores.flatMap(\.sequences)
        #expect(stored == Array(1...20_000), "every line once, in order")
        // Decoded lines wait while one batch is stored: never much more than the limit and one decoded piece.
        let lineBytes = recordLine(20_000).count + 1
        let most = test.stores.map(\.sequences.count).max() ?? 0
        #expect(most * lineBytes <= limit + StreamDecompressor.pieceBytes + lineBytes, "\(most) lines in one store")
        #expect(test.tapped.readPasses(), "all decoded and stored: reading goes on")
        #expect(test.ending == nil)
    }

    @Test func anEndThatArrivesWhileAPartWaitsToBeDecodedComesAfterAllOfItIsStored() throws {
        let test = try ReceiverUnderTest(waitingLimit: 64 << 10, encoding: .zstd)
        try test.sendCompressed(1...10_000)
        try test.sendCompressed(10_001...10_010)
        try test.tapped.send(.end(nil))
        #expect(test.ending == nil)
        test.completeEveryStore()
        #expect(test.stores.flatMap(\.sequences) == Array(1...10_010))
        #expect(test.endingText == "bodyEnded")
    }

    @Test func aStopWhileAPartWaitsToBeDecodedStoresWhatWasDecodedAndDropsTheRest() throws {
        let test = try ReceiverUnderTest(waitingLimit: 64 << 10, encoding: .zstd)
        try test.sendCompressed(1...10_000)
        #expect(test.stores.count == 1)
        test.receiver.stop()
        test.completeEveryStore()
        // The batch being stored and the piece decoded while it was: a prefix, in order; the rest is never decoded
        // (not stored, so not acknowledged: the agent sends it again).
        let stored = test.stores.flatMap(\.sequences)
        #expect(test.stores.count == 2)
        #expect(stored == Array(1...UInt64(stored.count)))
        #expect(stored.count < 10_000)
        #expect(test.endingText == "stopped")
    }

    @Test func theEndComesAfterWhatWasReceivedIsStored() throws {
        let test = try ReceiverUnderTest()
        try test.send(1...1)
        try test.send(2...2)
        try test.tapped.send(.end(nil))
        #expect(test.ending == nil)
        test.stores[0].complete(.success(()))
        #expect(test.ending == nil, "line 2 is still to be stored")
        test.stores[1].complete(.success(()))
        #expect(test.endingText == "bodyEnded")
    }

    @Test func aStopEndsAtTheNextBatchBoundaryAndTakesNothingMore() throws {
        let test = try ReceiverUnderTest()
        try test.send(1...1)
        test.receiver.stop()
        try test.send(2...2)
        #expect(test.ending == nil, "the batch being stored completes first")
        test.stores[0].complete(.success(()))
        #expect(test.endingText == "stopped")
        #expect(test.stores.map(\.sequences) == [[1]])
    }

    @Test func aFailedStoreEndsTheStreamWithoutStoringWhatWaits() throws {
        let test = try ReceiverUnderTest()
        try test.send(1...1)
        try test.send(2...2)
        test.stores[0].complete(.failure(CollectorError(code: "disk", message: "full")))
        #expect(test.endingText == "failed")
        #expect(test.stores.count == 1)
        try test.send(3...3)
        #expect(test.stores.count == 1)
    }

    @Test func storesThatCompleteAtOnceKeepUpAndTheEndFollowsAtOnce() throws {
        let test = try ReceiverUnderTest()
        test.storesAtOnce = true
        try test.send(1...3)
        #expect(test.tapped.readPasses())
        try test.send(4...4)
        try test.tapped.send(.end(nil))
        #expect(test.endingText == "bodyEnded")
    }

    @Test func aLostConnectionEndsTheStreamAfterWhatArrivedIsStored() throws {
        let test = try ReceiverUnderTest()
        try test.send(1...1)
        try test.send(2...2)
        test.tapped.channel.pipeline.fireChannelInactive()
        test.stores[0].complete(.success(()))
        #expect(test.stores.map(\.sequences) == [[1], [2]])
        test.stores[1].complete(.success(()))
        #expect(test.endingText == "failed")
    }

    @Test func configurationStatusesThatArriveWhileAStoreIsUnderWayAreNotLost() throws {
        let test = try ReceiverUnderTest()
        try test.send(1...1)
        func status(_ state: ConfigStatus.State) -> HTTPRequestPart {
            var line: [UInt8] = []
            let revision = "sha256:" + String(repeating: "a", count: 64)
            WireLineWriter.appendConfigStatusLine(ConfigStatus(desired: revision, effective: revision, state: state), to: &line)
            return .body(ByteBuffer(bytes: line))
        }
        // Three parts while the first store is under way: they wait as one batch, which must keep what counts.
        try test.tapped.send(status(.applying))
        try test.tapped.send(status(.rolledBack))
        try test.tapped.send(status(.pinned))
        test.stores[0].complete(.success(()))
        #expect(test.statuses == [[], [.rolledBack, .pinned]])
    }

    @Test func mergedBatchesKeepTheLastStatusAndTheLastFailureBeforeIt() {
        let revision = "sha256:" + String(repeating: "b", count: 64)
        func batch(_ states: [ConfigStatus.State]) -> ReceivedBatch {
            var batch = ReceivedBatch(highestSequence: 0)
            batch.configStatuses = states.map { ConfigStatus(desired: revision, effective: revision, state: $0) }
            return batch
        }
        for (first, second, kept) in [
            ([ConfigStatus.State.applying], [ConfigStatus.State.rolledBack, .pinned], [ConfigStatus.State.rolledBack, .pinned]),
            ([.failed], [.applying, .applied], [.failed, .applied]),
            ([.failed, .applied], [], [.failed, .applied]),
            ([], [.applied], [.applied]),
            ([], [], []),
        ] {
            var merged = batch(first)
            merged.merge(batch(second))
            #expect(merged.configStatuses.map(\.state) == kept, "\(first) + \(second)")
        }
    }

    @Test func heartbeatLinesAreAnswered() throws {
        let test = try ReceiverUnderTest()
        var line = ByteBufferAllocator().buffer(capacity: 40)
        WireLineWriter.appendHeartbeat(timestamp: 1, to: &line)
        try test.tapped.send(.body(line))
        #expect(test.heartbeats == 1)
    }
}
