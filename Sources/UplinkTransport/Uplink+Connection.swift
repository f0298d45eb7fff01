import Logging
import NIOCore
import NIOHTTP1
import NIOSSL
import UplinkCore
import UplinkRemoteConfig
import UplinkWire

extension UplinkDriver {
    /// Creates a fresh pair and connects the stream whose body is the pair's input side, on the driver's loop; the
    /// response's lines come back as events (`StreamExchangeHandler`).
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
        guard let endpoint = StreamConnector.Endpoint(configuration) else {
            handleLater(.streamFailed(connection, .transport("cannot make a request to \(configuration.requestURL)")))
            return
        }
        var headers = Self.requestHeaders(configuration, encoding: compressor?.encoding ?? .none, windowBytes: ring.capacity)
        headers.replaceOrAdd(name: "Host", value: endpoint.authority)
        let head = HTTPRequestHead(version: .http1_1, method: .POST, uri: endpoint.path, headers: headers)
        let exchange = StreamExchangeHandler(
            connection: connection, head: head, pair: pair,
            report: { driver.value.handleLater($0) },
            relay: { driver.value.uplink.remoteConfig?.relay($0) })
        self.exchange = exchange
        let connectTimeout = configuration.effectiveConnectTimeout
        let loop = self.loop
        StreamConnector.connect(
            endpoint, sslContext: tlsConfiguration.map { tlsContexts.context(for: $0, on: loop) },
            connectTimeout: connectTimeout, loop: loop, exchange: exchange
        ).assumeIsolated().whenComplete { result in
            driver.value.connected(result, exchange: exchange, connectTimeout: connectTimeout)
        }
    }

    /// The connection for `exchange` was made (the exchange runs on it now) or could not be.
    private func connected(
        _ result: Result<any Channel, any Error>, exchange: StreamExchangeHandler, connectTimeout: Duration
    ) {
        switch result {
        case .success(let channel):
            // The stream may have been given up meanwhile (a stall, shutdown): its connection goes too.
            guard self.exchange === exchange else {
                channel.close(promise: nil)
                return
            }
            self.channel = channel
        case .failure(let error):
            exchange.abandon(error)
            guard self.exchange === exchange else { return }
            if StreamConnector.isProxyAuthenticationRequired(error) {
                // The proxy's 407 is as much a configuration problem as a collector's 4xx: back off long, say so.
                handleLater(.responseHead(
                    exchange.connection, status: 407,
                    detail: "the HTTP proxy requires credentials: give them as http://user:password@host:port in uplink.proxy or HTTPS_PROXY"))
            } else {
                handleLater(.streamFailed(
                    exchange.connection, .transport(StreamConnector.describe(error, connectTimeout: connectTimeout))))
            }
        }
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
}
