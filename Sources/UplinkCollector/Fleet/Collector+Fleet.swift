import HTTPTypes
import Hummingbird
import NIOCore
import UplinkCore

extension HTTPField.Name {
    static let contentSecurityPolicy = HTTPField.Name("Content-Security-Policy")!
    static let xContentTypeOptions = HTTPField.Name("X-Content-Type-Options")!
    static let referrerPolicy = HTTPField.Name("Referrer-Policy")!
}

extension Collector {
    /// Every agent the collector has seen since it started (at most about `FleetSnapshot.capacity`), sorted by
    /// agent id: whether it streams, its cumulative counts, its lag and its connection.
    public func agents() -> [AgentActivity] {
        fleet().agents
    }

    /// The fleet table with the collector's clock and the table's bounds: what `GET /v1/fleet` serves.
    public func fleet() -> FleetSnapshot {
        fleetTable.snapshot(now: WallClock.nowNanoseconds(), second: fleetTable.currentSecond())
    }

    /// One fleet table update per received chunk of `stream`'s body.
    func noteActivity(_ activity: FleetBatch, of stream: StreamKey) {
        fleetTable.received(agent: stream.agent, activity, wall: WallClock.nowNanoseconds(), second: fleetTable.currentSecond())
    }

    /// `GET /`: the fleet page, one self-contained HTML document that polls `/v1/fleet`.
    func fleetPage(_ request: Request) -> Response {
        if let refusal = fleetRefusal(request) { return refusal }
        var headers = Self.fleetHeaders
        headers[.contentType] = "text/html; charset=utf-8"
        return Response(status: .ok, headers: headers, body: ResponseBody(byteBuffer: Self.fleetPageBuffer))
    }

    /// `GET /v1/fleet`: the fleet table as JSON (docs/fleet.md).
    func fleetData(_ request: Request) -> Response {
        if let refusal = fleetRefusal(request) { return refusal }
        var headers = Self.fleetHeaders
        headers[.contentType] = "application/json"
        return Response(
            status: .ok, headers: headers,
            body: ResponseBody(byteBuffer: ByteBuffer(bytes: FleetJSON.render(
                fleet(), config: remoteConfigStatuses(), rollouts: remoteConfig.map { $0.rollouts() }))))
    }

    /// A `401` asking for the token (bearer, or basic with the token as password) when one is configured and the
    /// request lacks it; nil when the request may go on.
    func fleetRefusal(_ request: Request) -> Response? {
        guard let token = configuration.token, !FleetAuthorization.allows(request.headers[.authorization], token: token)
        else { return nil }
        var headers = Self.fleetHeaders
        headers[.contentType] = "text/plain; charset=utf-8"
        headers[.wwwAuthenticate] = FleetAuthorization.challenge
        return Response(
            status: .unauthorized, headers: headers,
            body: ResponseBody(byteBuffer: ByteBuffer(string: "the collector's token is required (bearer, or as the basic password)\n")))
    }

    /// Headers of every fleet response: never cached, never framed, nothing loaded from elsewhere.
    private static let fleetHeaders: HTTPFields = [
        .cacheControl: "no-store",
        .xContentTypeOptions: "nosniff",
        .referrerPolicy: "no-referrer",
        .contentSecurityPolicy:
            "default-src 'none'; script-src 'unsafe-inline'; style-src 'unsafe-inline'; connect-src 'self'; "
            + "img-src data:; base-uri 'none'; form-action 'none'; frame-ancestors 'none'",
    ]

    private static let fleetPageBuffer = ByteBuffer(string: FleetPage.html)
}
