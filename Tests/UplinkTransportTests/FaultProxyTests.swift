import Testing
import UplinkTestSupport

#if canImport(Glibc)
import Glibc
#elseif canImport(Darwin)
import Darwin
#endif

/// Tests of the `FaultProxy` test tool itself, on real loopback sockets:
/// client (`LoopbackTestClient`) -> `FaultProxy` -> upstream (`LoopbackEchoServer`).
///
/// Every wait is a bounded poll (`eventually`). Time-based checks only ever assert that something
/// did *not* happen during a short window, or a lower bound on a delay, so a slow machine can
/// make them pass less strictly but never fail.
@Suite("FaultProxy")
struct FaultProxyTests {
    // MARK: Pass-through

    @Test("1 MiB passes through unchanged in both directions")
    func passThroughBothWays() async throws {
        try await withProxy { proxy, echo in
            let client = try await LoopbackTestClient.connect(port: proxy.port)
            let payload = testBytes(count: 1 << 20, seed: 1)
            for chunk in payload.chunks(of: 16 * 1024) {
                client.send(chunk)
            }
            #expect(await eventually { client.receivedCount >= payload.count })
            #expect(client.received == payload)
            #expect(echo.bytesReceived == payload.count)
            #expect(proxy.bytesToUpstream == payload.count)
            #expect(proxy.bytesToClient == payload.count)
            #expect(client.termination == nil)
            await client.close()
        }
    }

    @Test("half-close is propagated: upstream finishes its reply, then the client sees EOF")
    func halfClosePropagates() async throws {
        try await withProxy { proxy, echo in
            let client = try await LoopbackTestClient.connect(port: proxy.port)
            let payload = testBytes(count: 200_000, seed: 2)
            client.send(payload)
            try await client.shutdownOutput()
            #expect(await eventually { client.termination != nil })
            #expect(client.termination == .endOfStream)
            #expect(client.received == payload)
            #expect(await eventually { proxy.liveConnectionCount == 0 && echo.liveConnectionCount == 0 })
        }
    }

    // MARK: Faults

    @Test("resetAllConnections: the client sees a connection reset, upstream is closed too")
    func resetGivesConnectionReset() async throws {
        try await withProxy { proxy, echo in
            let client = try await LoopbackTestClient.connect(port: proxy.port)
            try await pingPong(client)
            #expect(proxy.liveConnectionCount == 1)

            proxy.resetAllConnections()

            #expect(await eventually { client.termination != nil })
            #expect(client.termination == .reset)
            #expect(await eventually { proxy.liveConnectionCount == 0 && echo.liveConnectionCount == 0 })
        }
    }

    @Test("cutAllConnections: the client sees an orderly end of stream")
    func cutGivesEOF() async throws {
        try await withProxy { proxy, echo in
            let clients = [
                try await LoopbackTestClient.connect(port: proxy.port),
                try await LoopbackTestClient.connect(port: proxy.port),
            ]
            for client in clients { try await pingPong(client) }

            proxy.cutAllConnections()

            for client in clients {
                #expect(await eventually { client.termination != nil })
                #expect(client.termination == .endOfStream)
            }
            #expect(await eventually { proxy.liveConnectionCount == 0 && echo.liveConnectionCount == 0 })
        }
    }

    @Test("cut during an upload that keeps sending still gives EOF, not a reset")
    func cutWhileUploading() async throws {
        try await withProxy { proxy, _ in
            let client = try await LoopbackTestClient.connect(port: proxy.port)
            try await pingPong(client)
            proxy.setStalled(true)  // so the proxy has unread bytes from the client when it cuts
            for chunk in testBytes(count: 256 * 1024, seed: 3).chunks(of: 8 * 1024) {
                client.send(chunk)
            }
            proxy.cutAllConnections()
            #expect(await eventually { client.termination != nil })
            #expect(client.termination == .endOfStream)
            proxy.setStalled(false)
            #expect(await eventually { proxy.liveConnectionCount == 0 })
        }
    }

    @Test("stall holds data in both directions; resume delivers it in order")
    func stallAndResume() async throws {
        try await withProxy { proxy, echo in
            let client = try await LoopbackTestClient.connect(port: proxy.port)
            try await pingPong(client)
            let upstreamBefore = echo.bytesReceived
            let clientBefore = client.receivedCount

            proxy.setStalled(true)
            let payload = testBytes(count: 100 * 1000, seed: 4)
            for chunk in payload.chunks(of: 1000) {
                client.send(chunk)
            }
            // Nothing may be forwarded while stalled (a negative check; cannot flake).
            try await Task.sleep(for: .milliseconds(300))
            #expect(echo.bytesReceived == upstreamBefore)
            #expect(client.receivedCount == clientBefore)
            #expect(client.termination == nil)
            #expect(proxy.liveConnectionCount == 1)

            proxy.setStalled(false)
            #expect(await eventually { client.receivedCount >= clientBefore + payload.count })
            #expect(Array(client.received.dropFirst(clientBefore)) == payload)
            await client.close()
        }
    }

    @Test("stall stops reading: TCP backpressure reaches the client; resume delivers everything")
    func stallBuildsBackpressure() async throws {
        try await withProxy { proxy, _ in
            let client = try await LoopbackTestClient.connect(port: proxy.port)
            try await pingPong(client)
            let forwardedBefore = proxy.bytesToUpstream
            let receivedBefore = client.receivedCount

            proxy.setStalled(true)
            // Far more than loopback socket buffers can hold while nobody reads (the send buffer
            // autotunes to at most a few MiB and the receive buffer does not grow without reads).
            let payload = testBytes(count: 16 << 20, seed: 5)
            for chunk in payload.chunks(of: 1 << 20) {
                client.send(chunk)
            }
            try await Task.sleep(for: .milliseconds(300))
            #expect(try await client.bufferedOutboundBytes() > 0)
            #expect(!client.isWritable)
            #expect(proxy.bytesToUpstream == forwardedBefore)

            proxy.setStalled(false)
            #expect(await eventually(timeout: .seconds(60)) { client.receivedCount >= receivedBefore + payload.count })
            #expect(Array(client.received.dropFirst(receivedBefore)) == payload)
            await client.close()
        }
    }

    @Test("controls toggled concurrently while data flows never corrupt the stream")
    func concurrentControls() async throws {
        try await withProxy { proxy, _ in
            let client = try await LoopbackTestClient.connect(port: proxy.port)
            let payload = testBytes(count: 1 << 20, seed: 6)
            try await withThrowingTaskGroup(of: Void.self) { group in
                group.addTask {
                    for chunk in payload.chunks(of: 4096) {
                        client.send(chunk)
                        await Task.yield()
                    }
                }
                for index in 0..<4 {
                    group.addTask {
                        for round in 0..<25 {
                            proxy.setStalled((round + index) % 2 == 0)
                            proxy.setLatency(round % 5 == 0 ? .milliseconds(2) : .zero)
                            _ = proxy.liveConnectionCount + proxy.bytesToUpstream
                            try await Task.sleep(for: .milliseconds(2))
                        }
                    }
                }
                try await group.waitForAll()
            }
            proxy.setStalled(false)
            proxy.setLatency(.zero)
            #expect(await eventually { client.receivedCount >= payload.count })
            #expect(client.received == payload)
            await client.close()
        }
    }

    @Test("latency delays each hop by at least the configured amount and keeps order")
    func latencyDelaysAndKeepsOrder() async throws {
        try await withProxy { proxy, _ in
            let client = try await LoopbackTestClient.connect(port: proxy.port)
            try await pingPong(client)
            let before = client.receivedCount
            let latency = Duration.milliseconds(150)
            proxy.setLatency(latency)

            let clock = ContinuousClock()
            let sentAt = clock.now
            let payload = testBytes(count: 50 * 100, seed: 7)
            for chunk in payload.chunks(of: 100) {
                client.send(chunk)
            }
            #expect(await eventually { client.receivedCount >= before + 1 })
            // Both hops (to upstream and back) are delayed: a lower bound only, so no flakiness.
            #expect(clock.now - sentAt >= latency * 2)
            #expect(await eventually { client.receivedCount >= before + payload.count })
            #expect(Array(client.received.dropFirst(before)) == payload)

            proxy.setLatency(.zero)
            try await pingPong(client)
            await client.close()
        }
    }

    @Test("respondWithStatus(503, times: 2): two canned 503s without contacting upstream, then forwarding")
    func respondWithStatus() async throws {
        try await withProxy { proxy, echo in
            proxy.respondWithStatus(503, times: 2)
            let head = Array("POST /v1/ingest HTTP/1.1\r\nHost: collector\r\nTransfer-Encoding: chunked\r\n\r\n".utf8)
            let expected = Array(
                "HTTP/1.1 503 Service Unavailable\r\nContent-Length: 0\r\nConnection: close\r\n\r\n".utf8
            )

            for _ in 0..<2 {
                let client = try await LoopbackTestClient.connect(port: proxy.port)
                // Only part of the head: the proxy must wait for "\r\n\r\n".
                client.send(Array(head.prefix(30)))
                try await Task.sleep(for: .milliseconds(100))
                #expect(client.receivedCount == 0)
                client.send(Array(head.dropFirst(30)) + Array("5\r\nhello\r\n".utf8))
                #expect(await eventually { client.termination != nil })
                #expect(client.termination == .endOfStream)
                #expect(client.received == expected)
            }
            #expect(echo.acceptedConnectionCount == 0)

            let client = try await LoopbackTestClient.connect(port: proxy.port)
            client.send(head)
            #expect(await eventually { client.receivedCount >= head.count })
            #expect(client.received == head)
            #expect(echo.acceptedConnectionCount == 1)
            #expect(proxy.acceptedConnectionCount == 3)
            await client.close()
            #expect(await eventually { proxy.liveConnectionCount == 0 })
        }
    }

    @Test("respondWithStatus uses the standard reason phrase")
    func respondWithOtherStatus() async throws {
        try await withProxy { proxy, _ in
            proxy.respondWithStatus(429, times: 1)
            let client = try await LoopbackTestClient.connect(port: proxy.port)
            client.send(Array("GET / HTTP/1.1\r\n\r\n".utf8))
            #expect(await eventually { client.termination != nil })
            #expect(
                String(decoding: client.received, as: UTF8.self)
                    == "HTTP/1.1 429 Too Many Requests\r\nContent-Length: 0\r\nConnection: close\r\n\r\n"
            )
        }
    }

    @Test("cutAfterUpstreamBytes forwards exactly n bytes, then cuts both sides; nil turns it off")
    func cutAfterUpstreamBytes() async throws {
        try await withProxy { proxy, echo in
            proxy.cutAfterUpstreamBytes(1000)
            let payload = testBytes(count: 5000, seed: 8)

            let client = try await LoopbackTestClient.connect(port: proxy.port)
            client.send(Array(payload.prefix(600)))
            client.send(Array(payload.dropFirst(600)))
            #expect(await eventually { client.termination != nil })
            #expect(client.termination == .endOfStream)
            #expect(await eventually { echo.liveConnectionCount == 0 && proxy.liveConnectionCount == 0 })
            #expect(echo.bytesReceived == 1000)
            #expect(proxy.bytesToUpstream == 1000)
            // Whatever came back before the cut is an in-order prefix of what was sent.
            #expect(client.receivedCount <= 1000)
            #expect(client.received == Array(payload.prefix(client.receivedCount)))

            proxy.cutAfterUpstreamBytes(nil)
            let second = try await LoopbackTestClient.connect(port: proxy.port)
            second.send(payload)
            #expect(await eventually { second.receivedCount >= payload.count })
            #expect(second.received == payload)
            #expect(second.termination == nil)
            await second.close()
        }
    }

    // MARK: Observations and lifecycle

    @Test("acceptedConnectionCount and acceptInstants record every accept in order")
    func acceptInstants() async throws {
        try await withProxy { proxy, echo in
            let clock = ContinuousClock()
            var windows: [(before: ContinuousClock.Instant, after: ContinuousClock.Instant)] = []
            var clients: [LoopbackTestClient] = []
            for index in 0..<3 {
                let before = clock.now
                clients.append(try await LoopbackTestClient.connect(port: proxy.port))
                #expect(await eventually { proxy.acceptedConnectionCount == index + 1 })
                windows.append((before, clock.now))
            }
            let instants = proxy.acceptInstants
            #expect(instants.count == 3)
            #expect(proxy.acceptedConnectionCount == 3)
            for (instant, window) in zip(instants, windows) {
                #expect(instant >= window.before && instant <= window.after)
            }
            #expect(await eventually { proxy.liveConnectionCount == 3 })
            for client in clients { await client.close() }
            #expect(await eventually { proxy.liveConnectionCount == 0 && echo.liveConnectionCount == 0 })
            #expect(proxy.acceptedConnectionCount == 3)
        }
    }

    @Test("stop() closes the listener and every connection")
    func stopClosesEverything() async throws {
        let echo = LoopbackEchoServer()
        try await echo.start()
        let proxy = FaultProxy(upstreamPort: echo.port)
        try await proxy.start()
        let port = proxy.port
        var clients: [LoopbackTestClient] = []
        for _ in 0..<3 {
            let client = try await LoopbackTestClient.connect(port: port)
            try await pingPong(client)
            clients.append(client)
        }
        proxy.setStalled(true)  // stop must not depend on anything flowing
        #expect(proxy.liveConnectionCount == 3)

        try await proxy.stop()

        #expect(proxy.liveConnectionCount == 0)
        for client in clients {
            #expect(await eventually { client.termination != nil })
        }
        #expect(await eventually { echo.liveConnectionCount == 0 })
        // The listener is gone: a new attempt is refused (or, should another test have bound the
        // freed port meanwhile, at least never reaches this proxy).
        let late = try? await LoopbackTestClient.connect(port: port)
        await late?.close()
        #expect(proxy.acceptedConnectionCount == 3)
        try await echo.stop()
    }

    @Test("an unreachable upstream closes the client connection promptly")
    func upstreamDown() async throws {
        let refusing = try FreePort.reserve()
        defer { refusing.release() }

        let proxy = FaultProxy(upstreamPort: refusing.port)
        try await proxy.start()
        let client = try await LoopbackTestClient.connect(port: proxy.port)
        client.send(Array("POST / HTTP/1.1\r\n\r\n".utf8))
        #expect(await eventually { client.termination != nil })
        #expect(client.termination != .closedLocally)
        #expect(client.receivedCount == 0)
        #expect(await eventually { proxy.liveConnectionCount == 0 })
        #expect(proxy.acceptedConnectionCount == 1)
        try await proxy.stop()
    }

    @Test("start() twice throws")
    func startTwiceThrows() async throws {
        let proxy = FaultProxy(upstreamPort: 9)
        try await proxy.start()
        #expect(proxy.port > 0)
        await #expect(throws: FaultProxyError.alreadyStarted) {
            try await proxy.start()
        }
        try await proxy.stop()
    }
}

// MARK: - Helpers

/// Runs `body` with a started echo server and a proxy in front of it; stops both afterwards
/// (also when `body` throws) and checks the proxy left nothing behind.
private func withProxy(
    _ body: (FaultProxy, LoopbackEchoServer) async throws -> Void
) async throws {
    let echo = LoopbackEchoServer()
    try await echo.start()
    let proxy = FaultProxy(upstreamPort: echo.port)
    do {
        try await proxy.start()
        try await body(proxy, echo)
    } catch {
        try? await proxy.stop()
        try? await echo.stop()
        throw error
    }
    try await proxy.stop()
    #expect(proxy.liveConnectionCount == 0)
    try await echo.stop()
}

/// Sends a short message and waits for its echo, proving the client is relayed end to end.
private func pingPong(_ client: LoopbackTestClient) async throws {
    let before = client.receivedCount
    let ping = Array("ping".utf8)
    client.send(ping)
    let arrived = await eventually { client.receivedCount >= before + ping.count }
    try #require(arrived, "ping was not echoed through the proxy")
    #expect(Array(client.received.dropFirst(before)) == ping)
}


/// Deterministic pseudo-random bytes, so any reordering or corruption is detected.
private func testBytes(count: Int, seed: UInt64) -> [UInt8] {
    var state = seed &* 0x9E37_79B9_7F4A_7C15 | 1
    return [UInt8](unsafeUninitializedCapacity: count) { buffer, initialized in
        var index = 0
        while index < count {
            // xorshift64*
            state ^= state >> 12
            state ^= state << 25
            state ^= state >> 27
            var word = state &* 0x2545_F491_4F6C_DD1D
            for _ in 0..<min(8, count - index) {
                buffer[index] = UInt8(truncatingIfNeeded: word)
                word >>= 8
                index += 1
            }
        }
        initialized = count
    }
}

extension Array where Element == UInt8 {
    fileprivate func chunks(of size: Int) -> [[UInt8]] {
        stride(from: 0, to: self.count, by: size).map { Array(self[$0..<Swift.min($0 + size, self.count)]) }
    }
}
