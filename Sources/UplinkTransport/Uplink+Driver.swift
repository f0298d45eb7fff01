import Logging
import NIOCore
import UplinkCore
import UplinkWire

/// Performs `UplinkStateMachine`'s actions. Lives on the stream's event loop (`loop`): every event is handled there,
/// synchronously, as it happens (a response line, space in the pair, a timer, the ring's data notification), so a
/// record costs no thread hop between the uplink's parts. Never shared: others reach it through `NIOLoopBound`.
final class UplinkDriver {
    typealias ConnectionID = UplinkStateMachine.ConnectionID
    typealias Action = UplinkStateMachine.Action

    let uplink: Uplink
    let loop: any EventLoop
    var machine: UplinkStateMachine
    var ring: RecordRing { uplink.ring }
    var logger: Logger { uplink.logger }
    /// Succeeded when the driver is done (`Uplink.run` returns then).
    let finished: EventLoopPromise<Void>

    var pair: BoundStreamPair?
    /// The current stream's exchange, from the moment its connection is being made.
    var exchange: StreamExchangeHandler?
    /// The current stream's connection, once made.
    var channel: (any Channel)?
    /// The TLS context of the connections, for an `https://` URL.
    let tlsContexts = StreamTLSContexts()
    /// Bytes taken from the ring that the pair has not accepted yet (at most one fill, compressed if the stream is).
    var pending = ByteBuffer()
    /// What the current stream carried that the collector has not acknowledged; bounds what the client queues.
    var inFlight: InFlightWindow
    /// A write pass stopped because the window was full: the next ack resumes writing.
    var waitingForAcknowledgements = false
    /// The encoding of the streams to come: `uplink.compression` until a collector answers 415, then `.none`.
    var compression: WireCompression
    /// The current stream's compression context (nil: uncompressed); a fresh one per stream.
    var compressor: StreamCompressor?
    /// Compressed streams only: the buffer a write pass gathers its lines in before they are compressed, and the one
    /// the compressor writes into. Both are kept from pass to pass (a pass takes up to a few hundred KiB of lines), so
    /// that a long drain does not allocate and free them hundreds of times a second, which leaves the allocator
    /// holding megabytes (bounded memory). What goes into the pair is an exact copy of the compressed bytes.
    var lineScratch = ByteBuffer()
    var compressedScratch = ByteBuffer()
    private var timer: Scheduled<Void>?
    private var timerDeadline: ContinuousClock.Instant?
    private var backoff: Scheduled<Void>?
    private var backoffTask: Task<Void, Never>?
    /// What the body of the last non-200 answer said, for the log line.
    private var rejectionDetail: String?
    private var endedCleanly = false
    private var stopping = false
    /// `finished` was completed.
    private var finishedAlready = false
    /// The current stream's collector sent `Uplink-Config`: it reads `config_status` lines.
    var configAdvertised = false
    /// The version of the status line the current stream carried (`RemoteConfigRelay.publishedVersion`).
    var configStatusSent: UInt64 = 0

    init(uplink: Uplink, loop: any EventLoop) {
        self.uplink = uplink
        self.loop = loop
        self.finished = loop.makePromise()
        let configuration = uplink.configuration
        self.inFlight = InFlightWindow(streamBufferBytes: configuration.streamBufferBytes)
        self.compression = configuration.compression
        uplink.statisticsBox.withLock { $0.compression = configuration.compression }
        self.machine = UplinkStateMachine(
            backoff: configuration.backoff,
            heartbeatInterval: configuration.heartbeatInterval,
            stallTimeout: configuration.stallTimeout,
            drainTimeout: configuration.drainTimeout,
            seed: configuration.jitterSeed ?? UInt64.random(in: .min ... .max)
        )
    }

    /// This driver, to be reached from closures that run on `loop`.
    var bound: NIOLoopBound<UplinkDriver> { NIOLoopBound(self, eventLoop: loop) }

    /// Opens the first stream.
    func start() {
        // A status published while this uplink runs is written at once (as new data would be).
        let driver = bound
        let loop = self.loop
        uplink.remoteConfig?.onStatusPublished { loop.execute { driver.value.handle(.dataAvailable) } }
        perform(machine.start(now: .now))
        publishState()
        scheduleTimer()
    }

    /// Handles `event` now (on `loop`).
    func handle(_ event: UplinkEvent) {
        guard !stopping else { return }
        handleEvent(event)
        publishState()
        if !stopping { scheduleTimer() }
    }

    /// Handles `event` in a later turn of the loop: for events raised inside a write pass or inside the HTTP client's
    /// callbacks, which must not re-enter them.
    func handleLater(_ event: UplinkEvent) {
        let driver = bound
        loop.execute { driver.value.handle(event) }
    }

    /// Stops at once (the task running the uplink was cancelled): no drain.
    func stopNow() {
        guard !stopping else { return }
        stop(waitForCleanEnd: false)
    }

    /// Copies the machine's state into the statistics when it changed (for the status view and the metrics).
    private func publishState() {
        let state: UplinkStreamState
        switch machine.state {
        case .idle: state = .connecting
        case .streaming(let stream): state = stream.phase == .flowing ? .streaming : .connecting
        case .backingOff: state = .backingOff
        case .draining: state = .draining
        case .finished: state = .stopped
        }
        let lastSent = machine.currentStream?.lastSent
        uplink.statisticsBox.withLock { statistics in
            if let lastSent { statistics.lastSent = max(statistics.lastSent, lastSent) }
            guard statistics.state != state || statistics.stateSince == 0 else { return }
            statistics.state = state
            statistics.stateSince = WallClock.nowNanoseconds()
        }
    }

    private func handleEvent(_ event: UplinkEvent) {
        let now = ContinuousClock.now
        switch event {
        case .responseHead(let connection, let status, let detail):
            rejectionDetail = detail
            if let detail { uplink.statisticsBox.withLock { $0.lastRejectionDetail = detail } }
            if status == 415, let refused = compressor?.encoding, connection == machine.currentStream?.connection {
                fallBackToUncompressed(refused: refused, detail: detail)
                perform(machine.failed(connection, .encodingRefused(refused), now: now))
                return
            }
            perform(machine.responseHead(connection, status: status, now: now))
        case .configAdvertised(let connection):
            guard connection == machine.currentStream?.connection else { return }
            configAdvertised = true
        case .ackLine(let connection, .resume(let sequence)):
            perform(machine.resumeReceived(connection, collectorHas: sequence, now: now))
            // A resume acknowledges everything through its sequence: a drain that waited for this stream to open
            // ends here when the collector already had all the ring held.
            if ring.isEmpty {
                perform(machine.acknowledged(connection, through: sequence, everythingAcknowledged: true, now: now))
            }
        case .ackLine(let connection, .ack(let sequence)):
            // The collector stored these, whichever stream carried them: release them in any case.
            ring.acknowledge(through: sequence)
            uplink.statisticsBox.withLock { $0.acknowledged = max($0.acknowledged, sequence) }
            perform(machine.acknowledged(connection, through: sequence, everythingAcknowledged: ring.isEmpty, now: now))
            if connection == machine.currentStream?.connection {
                inFlight.acknowledged(through: sequence)
                if waitingForAcknowledgements && inFlight.room > 0 {
                    waitingForAcknowledgements = false
                    perform(machine.dataAvailable(now: now))
                }
            }
        case .streamFailed(let connection, let failure):
            perform(machine.failed(connection, failure, now: now))
        case .spaceAvailable(let connection):
            uplink.statisticsBox.withLock { $0.spaceAvailableEvents += 1 }
            perform(machine.spaceAvailable(connection, now: now))
        case .dataAvailable:
            uplink.statisticsBox.withLock { $0.dataAvailableEvents += 1 }
            perform(machine.dataAvailable(now: now))
        case .deadline:
            timer = nil
            timerDeadline = nil
            perform(machine.deadlinePassed(now: now))
        case .backoffElapsed:
            backoff = nil
            backoffTask = nil
            perform(machine.backoffElapsed(now: now))
        case .shutdown:
            logger.info("uplink draining before shutdown", metadata: ["deadline": "\(uplink.configuration.drainTimeout)"])
            perform(machine.shutdown(everythingAcknowledged: ring.isEmpty, now: now))
        case .handOver:
            logger.info(
                "uplink handing over: waiting for the collector to acknowledge what this stream carried",
                metadata: ["deadline": "\(uplink.configuration.drainTimeout)"])
            perform(machine.handOver(now: now))
        }
    }

    private func perform(_ actions: [Action]) {
        for action in actions { perform(action) }
    }

    private func perform(_ action: Action) {
        switch action {
        case .connect(let connection):
            uplink.statisticsBox.withLock { $0.connectionAttempts += 1 }
            openStream(connection)
        case .resume(let collectorHas):
            let first = ring.resume(collectorHas: collectorHas)
            uplink.statisticsBox.withLock { $0.streamsOpened += 1 }
            logger.info("stream open", metadata: ["collector_has": "\(collectorHas)", "sending_from": "\(first)"])
        case .write:
            writeAvailable(takingNewFrames: !machine.handingOver)
        case .sendHeartbeat:
            sendHeartbeat()
            // Nothing was written for a heartbeat interval: a ring that went quiet after a burst gives back its pages.
            ring.releaseFreeMemory()
        case .failStream(_, let failure, let delay):
            closeStream(failing: failure)
            record(failure, delay: delay)
            if let delay { scheduleBackoff(delay) }
        case .endStream:
            pair?.close()
            endedCleanly = true
        case .finish:
            stop(waitForCleanEnd: endedCleanly)
        }
    }

    private func record(_ failure: StreamFailure, delay: Duration?) {
        uplink.statisticsBox.withLock { statistics in
            statistics.failures += 1
            statistics.failuresByReason[failure.reason, default: 0] += 1
            statistics.lastFailure = failure
            statistics.lastFailureTime = WallClock.nowNanoseconds()
            if let delay {
                statistics.backoffDelays.append(delay)
                if statistics.backoffDelays.count > 128 { statistics.backoffDelays.removeFirst() }
            }
        }
        var metadata: Logger.Metadata = ["url": "\(uplink.configuration.streamURL)"]
        if let delay { metadata["retry_in"] = "\(delay)" }
        // The fallback to an uncompressed body said so already, once (`fallBackToUncompressed`).
        if case .encodingRefused = failure { return }
        var said = ""
        if case .status = failure, let detail = rejectionDetail { said = " (\(detail))" }
        if failure.isConfigurationProblem {
            let check = uplink.configuration.usesTLS ? "uplink.url, the token and uplink.tls" : "uplink.url and the token"
            logger.error("collector rejected the stream: \(failure)\(said); check \(check)", metadata: metadata)
        } else {
            logger.warning("stream broken: \(failure)\(said)", metadata: metadata)
        }
    }

    // MARK: Stream lifecycle

    private func closeStream(failing failure: StreamFailure) {
        // The exchange first: it reports nothing more once the driver gave the stream up.
        closeConnection()
        pair?.fail(UplinkStreamClosed(failure: failure))
        pair = nil
        pending = ByteBuffer()
        inFlight.reset()
        waitingForAcknowledgements = false
        compressor = nil
        lineScratch = ByteBuffer()
        compressedScratch = ByteBuffer()
        ring.cancelDataNotification()
        ring.rewindToAcknowledged()
    }

    /// Ends the driver's work. After a clean end of the body it lets the collector see the end and close its response,
    /// for at most 2 s, before the request is cancelled.
    private func stop(waitForCleanEnd: Bool) {
        stopping = true
        timer?.cancel()
        timer = nil
        backoff?.cancel()
        backoffTask?.cancel()
        ring.cancelDataNotification()
        guard waitForCleanEnd, let exchange else {
            endRequest()
            return
        }
        let driver = bound
        let giveUp = loop.scheduleTask(in: .seconds(2)) { driver.value.endRequest() }
        exchange.ended.futureResult.whenComplete { _ in
            giveUp.cancel()
            driver.value.endRequest()
        }
    }

    /// The last step of `stop`: the connection is closed if it is still open, and the driver is done.
    private func endRequest() {
        guard !finishedAlready else { return }
        finishedAlready = true
        closeConnection()
        pair?.fail(UplinkStreamClosed(failure: nil))
        pair = nil
        publishState()
        finished.succeed()
    }

    /// Closes the current stream's connection, or gives up making it.
    private func closeConnection() {
        exchange?.abandon(UplinkStreamClosed(failure: nil))
        exchange = nil
        channel?.close(promise: nil)
        channel = nil
    }

    // MARK: Timers

    /// Keeps one timer for the machine's earliest deadline. A deadline that moved later is handled when the timer
    /// fires early and finds nothing due; only an earlier deadline replaces the timer.
    private func scheduleTimer() {
        guard let deadline = machine.nextDeadline else { return }
        if let current = timerDeadline, current <= deadline { return }
        timer?.cancel()
        timerDeadline = deadline
        let driver = bound
        let remaining = ContinuousClock.now.duration(to: deadline)
        timer = loop.scheduleTask(in: .nanoseconds(max(0, remaining.nanoseconds))) { driver.value.handle(.deadline) }
    }

    /// Reconnects after `delay`: a timer on the loop, or the uplink's `backoffSleep` when one was given. That sleep
    /// runs on the loop too, so the uplink's progress never waits for a thread of Swift's shared pool.
    private func scheduleBackoff(_ delay: Duration) {
        let driver = bound
        guard let sleep = uplink.backoffSleep else {
            backoff = loop.scheduleTask(in: .nanoseconds(delay.nanoseconds)) { driver.value.handle(.backoffElapsed) }
            return
        }
        let loop = self.loop
        backoffTask = Task(executorPreference: EventLoopTaskExecutor(loop: loop)) {
            do {
                try await sleep(delay)
                loop.execute { driver.value.handle(.backoffElapsed) }
            } catch {}
        }
    }
}

/// The error a stream pair is failed with when the uplink gives the stream up.
struct UplinkStreamClosed: Error, CustomStringConvertible {
    let failure: StreamFailure?
    var description: String { failure.map { "stream closed: \($0)" } ?? "uplink stopped" }
}
