import AsyncHTTPClient
import Logging
import NIOCore
import NIOHTTP1
import NIOSSL
import UplinkCore
import UplinkRemoteConfig
import UplinkWire

extension UplinkDriver {
    /// Creates a fresh pair and starts the request whose body is the pair's input side, on the driver's loop; the
    /// response's lines come back as events (`UplinkExchange`).
    func openStream(_ connection: ConnectionID) {
        let configuration = uplink.configuration
        let driver = bound
        let pair = BoundStreamPair(capacity: configuration.streamBufferBytes, loop: loop) { event in
            switch event {
            case .hasSpaceAvailable:
                driver.value.handle(.spaceAvailable(connection))
            case .errorOccurred(let error):
                // The request failed too; its failure says why better, and comes first: this one only in case.
                driver.value.handleLater(.streamFailed(connection, .transport("request body aborted: \(error)")))
            case .endEncountered:
                driver.value.handleLater(.streamFailed(connection, .transport("request body closed by the client")))
            }
        }
        self.pair = pair
        pending = ByteBuffer()
        inFlight.reset()
        configAdvertised = false
        configStatusSent = 0
        waitingForAcknowledgements = false
        compressor = makeCompressor()

        var tlsConfiguration: TLSConfiguration?
        if let reloader = uplink.tlsReloader {
            do {
                tlsConfiguration = try reloader.configuration()
            } catch {
                handleLater(.streamFailed(connection, .transport("TLS settings unusable: \(error)")))
                return
            }
        }
        let request: HTTPClient.Request
        do {
            request = try HTTPClient.Request(
                url: configuration.requestURL, method: .POST,
                headers: Self.requestHeaders(
                    configuration, encoding: compressor?.encoding ?? .none, windowBytes: ring.capacity),
                body: UplinkBodySink.body(draining: pair), tlsConfiguration: tlsConfiguration)
        } catch {
            handleLater(.streamFailed(connection, .transport("cannot make a request to \(configuration.requestURL): \(error)")))
            return
        }
        let exchange = UplinkExchange(
            connection: connection, driver: driver, pair: NIOLoopBound(pair, eventLoop: loop),
            connectTimeout: configuration.effectiveConnectTimeout)
        // No deadline: the delegate API's would end the stream when it fires; the machine's stall check covers the
        // response head. `.delegate(on:)`, not `.delegateAndChannel(on:)`: the uplink's own client has no loop but
        // `loop`, so the channel is there anyway, and AsyncHTTPClient's pool opens a spare connection for a request
        // that requires a loop when the connection it waited for closes (one attempt would cost two connections).
        let task = client.execute(
            request: request, delegate: exchange, eventLoop: .delegate(on: loop), deadline: nil, logger: logger)
        self.request = task
        task.futureResult.whenComplete { exchange.requestEnded($0) }
    }

    /// The stream request's headers (docs/protocol.md, "Request"). `windowBytes`: how many bytes of records the ring
    /// holds unacknowledged at most, so the collector acknowledges before it fills (`Uplink-Window`).
    private static func requestHeaders(
        _ configuration: UplinkConfiguration, encoding: WireCompression, windowBytes: Int
    ) -> HTTPHeaders {
        var headers = HTTPHeaders()
        headers.add(name: "Content-Type", value: "application/x-ndjson")
        if let contentEncoding = encoding.contentEncoding {
            headers.add(name: "Content-Encoding", value: contentEncoding)
        }
        headers.add(name: "Uplink-Protocol", value: "1")
        headers.add(name: "Uplink-Agent", value: configuration.agentID)
        headers.add(name: "Uplink-Epoch", value: String(configuration.epoch))
        headers.add(name: "Uplink-Window", value: String(windowBytes))
        if let token = configuration.token {
            headers.add(name: "Authorization", value: "Bearer \(token)")
        }
        if !configuration.labels.isEmpty {
            headers.add(name: "Uplink-Labels", value: AgentLabels.header(configuration.labels))
        }
        return headers
    }

    private static let connectTimeoutErrors: [HTTPClientError] = [
        .connectTimeout, .getConnectionFromPoolTimeout, .tlsHandshakeTimeout, .httpProxyHandshakeTimeout,
    ]

    static func describe(_ error: any Error, connectTimeout: Duration) -> String {
        if let tls = TLSErrorText.describe(error) { return tls }
        // AHC fails the request with whichever of its connect deadlines fires first (the connection's, the queued
        // request's, the proxy's or the TLS handshake's); all of them are the one connect timeout here.
        if let error = error as? HTTPClientError, connectTimeoutErrors.contains(error) {
            return "no connection within the connect timeout (\(connectTimeout), uplink.connect_timeout): \(error)"
        }
        if let error = error as? HTTPClientError { return "\(error)" }
        if ConnectFailureText.isRefused(error) {
            return ConnectFailureText.describe(error) + " (nothing accepts connections at that address and port)"
        }
        return ConnectFailureText.describe(error)
    }
}
