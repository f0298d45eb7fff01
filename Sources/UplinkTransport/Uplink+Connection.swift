import AsyncHTTPClient
import Logging
#if canImport(Glibc)
import Glibc
#elseif canImport(Musl)
import Musl
#elseif canImport(Darwin)
import Darwin
#endif
import NIOCore
import NIOHTTP1
import UplinkCore
import UplinkWire

extension UplinkDriver {
    /// Creates a fresh pair and starts the request whose body is the pair's input side; the response's lines
    /// come back as events.
    func openStream(_ connection: ConnectionID) {
        let configuration = uplink.configuration
        let events = events
        let pair = BoundStreamPair(capacity: configuration.streamBufferBytes) { event in
            switch event {
            case .hasSpaceAvailable:
                events.yield(.spaceAvailable(connection))
            case .errorOccurred(let error):
                events.yield(.streamFailed(connection, .transport("request body aborted: \(error)")))
            case .endEncountered:
                events.yield(.streamFailed(connection, .transport("request body closed by the client")))
            }
        }
        self.pair = pair
        pending = ByteBuffer()
        inFlight.reset()
        waitingForAcknowledgements = false
        compressor = makeCompressor()

        var request = Self.makeRequest(configuration, encoding: compressor?.encoding ?? .none, body: pair.input)
        if let reloader = uplink.tlsReloader {
            do {
                request.tlsConfiguration = try reloader.configuration()
            } catch {
                events.yield(.streamFailed(connection, .transport("TLS settings unusable: \(error)")))
                return
            }
        }
        let headTimeout = configuration.stallTimeout
        let connectTimeout = configuration.effectiveConnectTimeout
        connectionTask = Task { [client, logger] in
            await UplinkDriver.exchange(
                request, connection: connection, client: client, logger: logger, headTimeout: headTimeout,
                connectTimeout: connectTimeout, events: events)
        }
    }

    private static func makeRequest(
        _ configuration: UplinkConfiguration, encoding: WireCompression, body: BoundInputStream
    ) -> HTTPClientRequest {
        var request = HTTPClientRequest(url: configuration.requestURL)
        request.method = .POST
        request.headers.add(name: "Content-Type", value: "application/x-ndjson")
        if let contentEncoding = encoding.contentEncoding {
            request.headers.add(name: "Content-Encoding", value: contentEncoding)
        }
        request.headers.add(name: "Uplink-Protocol", value: "1")
        request.headers.add(name: "Uplink-Agent", value: configuration.agentID)
        request.headers.add(name: "Uplink-Epoch", value: String(configuration.epoch))
        if let token = configuration.token {
            request.headers.add(name: "Authorization", value: "Bearer \(token)")
        }
        request.body = .stream(body, length: .unknown)
        return request
    }

    /// Runs one request: reports the response head, then every ack line, then how the exchange ended.
    private static func exchange(
        _ request: HTTPClientRequest, connection: ConnectionID, client: HTTPClient, logger: Logger,
        headTimeout: Duration, connectTimeout: Duration, events: AsyncStream<UplinkEvent>.Continuation
    ) async {
        do {
            let response = try await client.execute(request, timeout: .nanoseconds(headTimeout.nanoseconds), logger: logger)
            guard response.status == .ok else {
                // A proxy or TLS terminator says why in its body (nginx: "No required SSL certificate was sent").
                let detail = await RejectionDetail.read(response.body, within: .seconds(2))
                events.yield(.responseHead(connection, status: Int(response.status.code), detail: detail))
                return
            }
            events.yield(.responseHead(connection, status: Int(response.status.code), detail: nil))
            var splitter = LineSplitter(maxLineBytes: 64 * 1024)
            for try await chunk in response.body {
                splitter.append(chunk)
                while let piece = splitter.nextLine() {
                    if case .line(let line) = piece, let ack = AckLine.parse(line) {
                        events.yield(.ackLine(connection, ack))
                    }
                }
            }
            events.yield(.streamFailed(connection, .responseEnded))
        } catch let error as HTTPClientError where error == .proxyAuthenticationRequired {
            // The proxy's 407 is as much a configuration problem as a collector's 4xx: back off long, say so.
            events.yield(.responseHead(
                connection, status: 407,
                detail: "the HTTP proxy requires credentials: give them as http://user:password@host:port in uplink.proxy or HTTPS_PROXY"))
        } catch {
            events.yield(.streamFailed(connection, .transport(describe(error, connectTimeout: connectTimeout))))
        }
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
