import AsyncHTTPClient
import Logging
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

        let request = Self.makeRequest(configuration, body: pair.input)
        let headTimeout = configuration.stallTimeout
        connectionTask = Task { [client, logger] in
            await UplinkDriver.exchange(
                request, connection: connection, client: client, logger: logger, headTimeout: headTimeout, events: events)
        }
    }

    private static func makeRequest(_ configuration: UplinkConfiguration, body: BoundInputStream) -> HTTPClientRequest {
        var request = HTTPClientRequest(url: configuration.streamURL)
        request.method = .POST
        request.headers.add(name: "Content-Type", value: "application/x-ndjson")
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
        headTimeout: Duration, events: AsyncStream<UplinkEvent>.Continuation
    ) async {
        do {
            let response = try await client.execute(request, timeout: .nanoseconds(headTimeout.nanoseconds), logger: logger)
            events.yield(.responseHead(connection, status: Int(response.status.code)))
            guard response.status == .ok else { return }
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
        } catch {
            events.yield(.streamFailed(connection, .transport(describe(error))))
        }
    }

    private static func describe(_ error: any Error) -> String {
        if let error = error as? HTTPClientError { return "\(error)" }
        if let error = error as? IOError { return "\(error.description)" }
        return String(describing: error)
    }
}
