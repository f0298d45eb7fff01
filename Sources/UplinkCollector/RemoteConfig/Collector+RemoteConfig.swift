import HTTPTypes
import Hummingbird
import NIOCore
import NIOSSL
import UplinkCore
import UplinkRemoteConfig
import UplinkWire

extension HTTPField.Name {
    static let uplinkConfig = HTTPField.Name("Uplink-Config")!
    static let uplinkLabels = HTTPField.Name("Uplink-Labels")!
}

extension Collector {
    /// Largest `POST /v1/config/status` body.
    static let maximumStatusBytes = 16 * 1024

    /// The remote configuration, once `run()` loaded it; nil without `collector.remote_config`.
    var remoteConfig: RemoteConfigService? { remote.withLock { $0 } }

    /// Reads `collector.remote_config.dir` again, as SIGHUP does: on success the new documents and assignments are
    /// served and every open stream whose revision changed gets a `config` line; on failure (a refused document, a
    /// lower generation, …) the previous set stays and the reason is logged and returned. Nil when the collector
    /// has no remote configuration (or has not started).
    @discardableResult
    public func reloadRemoteConfig() -> Result<UInt64, RemoteConfigLoadFailure>? {
        remoteConfig?.reload()
    }

    /// Every agent's last remote configuration report (a `config_status` line or `POST /v1/config/status`).
    public func remoteConfigStatuses() -> [String: AgentConfigStatus] {
        remoteConfig?.statuses() ?? [:]
    }

    /// The rollouts of the served assignments: stage, and whether and why they halted.
    public func remoteConfigRollouts() -> [RolloutStatus] {
        remoteConfig?.rollouts() ?? []
    }

    /// Loads the directory (a bad one stops the start) and adds the routes.
    func addRemoteConfigRoutes(to router: Router<CollectorRequestContext>) throws(CollectorError) {
        guard let settings = configuration.remoteConfig else { return }
        guard let validator = documentValidator else {
            throw CollectorError(
                code: "remote_config",
                message: "collector.remote_config needs the agent's document validator (Collector(documentValidator:))")
        }
        let service = try RemoteConfigService(
            settings: settings, validator: validator, haltsFile: configuration.remoteConfigHaltsFile, logger: logger)
        remote.withLock { $0 = service }
        router.get("v1/config") { request, context in
            await self.answer(service, endpoint: "manifest", request, context) { agent, labels in
                Self.manifestResponse(service.manifest(agent: agent, labels: labels), request)
            }
        }
        router.get("v1/config/blobs/:blob") { request, context in
            let name = context.parameters.get("blob") ?? ""
            return await self.answer(service, endpoint: "blob", request, context) { agent, labels in
                guard let digest = SHA256Digest(prefixed: name), let bytes = service.blob(digest, agent: agent, labels: labels)
                else { return Self.text(.notFound, "no such blob for this agent\n") }
                return Self.blobResponse(bytes, digest: digest, request)
            }
        }
        router.post("v1/config/status") { request, context in
            // Who asks is checked before the body is read.
            await self.answer(service, endpoint: "status", request, context) { agent, labels in
                var body: ByteBuffer
                do {
                    body = try await request.body.collect(upTo: Self.maximumStatusBytes)
                } catch {
                    return Self.text(.contentTooLarge, "the status is larger than \(Self.maximumStatusBytes) bytes\n")
                }
                while let last = body.readableBytesView.last, last == UInt8(ascii: "\n") || last == UInt8(ascii: "\r") {
                    body.moveWriterIndex(to: body.writerIndex - 1)
                }
                let status: ConfigStatus
                do {
                    status = try ConfigStatus.parse(body)
                } catch {
                    return Self.text(.badRequest, "not a config_status: \(error)\n")
                }
                await service.record(status, agent: agent, labels: labels, wall: WallClock.nowNanoseconds())
                return Response(status: .noContent)
            }
        }
    }

    /// Checks the token, the agent id and, under `agent_identity: certificate`, that the id is the certificate's;
    /// then notes the agent in the fleet table (it was heard from), answers with `body` and counts the answer.
    private func answer(
        _ service: RemoteConfigService, endpoint: String, _ request: Request, _ context: CollectorRequestContext,
        _ body: (String, PresentedLabels) async -> Response
    ) async -> Response {
        let response: Response
        switch await requester(request, context, labelsFrom: service.settings.labelsFrom) {
        case .refused(let refusal): response = refusal
        case .agent(let agent, let labels):
            // Who it is is known now: the fleet table shows the agent, streaming or not (POST-only agents).
            fleetTable.heard(agent: agent, wall: WallClock.nowNanoseconds())
            response = await body(agent, labels)
        }
        service.countRequest(endpoint: endpoint, code: Int(response.status.code))
        return response
    }

    /// Who asks, with the labels the request and its certificate carry, or the refusal.
    private func requester(
        _ request: Request, _ context: CollectorRequestContext, labelsFrom: Set<RemoteConfigSettings.LabelSource>
    ) async -> Requester {
        if let token = configuration.token {
            guard let authorization = request.headers[.authorization], Self.isBearer(authorization, token: token) else {
                var response = Self.text(.unauthorized, "missing or wrong bearer token\n")
                response.headers[.wwwAuthenticate] = "Bearer"
                return .refused(response)
            }
        }
        guard let header = request.headers[.uplinkAgent], let agent = AgentID.validated(header.utf8) else {
            return .refused(Self.text(.badRequest, "missing or invalid Uplink-Agent header: 1-128 bytes of [A-Za-z0-9._:-]\n"))
        }
        var labels = PresentedLabels()
        if let header = request.headers[.uplinkLabels] {
            switch Self.labels(header) {
            case .failure(let problem):
                return .refused(Self.text(.badRequest, "invalid Uplink-Labels header: \(problem)\n"))
            case .success(let reported):
                // Kept only where rules may match them: otherwise they would cost memory for nothing.
                if labelsFrom.contains(.agent) { labels.reported = reported }
            }
        }
        if configuration.tls != nil {
            let connection = await StreamConnection.inspect(context.channel, tls: true)
            if let refusal = refusedIdentity(agent: agent, connection, refusing: "a remote configuration request") {
                return .refused(Self.text(.forbidden, refusal + "\n"))
            }
            if labelsFrom.contains(.certificate), let certificate = connection.certificate {
                labels.certificate = Self.certificateLabels(certificate)
            }
        }
        return .agent(agent, labels)
    }

    /// Why an `Uplink-Labels` header is refused.
    struct LabelsProblem: Error, CustomStringConvertible {
        let description: String
    }

    /// `Uplink-Labels: name=value,name=value` (spaces around items allowed), within `AgentLabels`' limits: at most
    /// 64 labels, each name 1 to 63 of `A-Z a-z 0-9 . _ -` and given once, each value at most 255 bytes without
    /// whitespace or control characters. The reason when it is malformed or over these limits.
    static func labels(_ header: String) -> Result<[String: String], LabelsProblem> {
        var labels: [String: String] = [:]
        for item in header.split(separator: ",") {
            let term = String(item.trimmingSpacesAndTabs)
            guard !term.isEmpty else { continue }
            guard labels.count < AgentLabels.maximumCount else {
                return .failure(LabelsProblem(description: "more than \(AgentLabels.maximumCount) labels"))
            }
            guard let equals = term.firstIndex(of: "="), equals != term.startIndex else {
                return .failure(LabelsProblem(description: "expected name=value,name=value"))
            }
            let name = String(term[..<equals])
            let value = String(term[term.index(after: equals)...])
            guard AgentLabels.isValidName(name) else {
                return .failure(LabelsProblem(
                    description: "label name '\(name.prefix(AgentLabels.maximumNameBytes))' is not 1 to \(AgentLabels.maximumNameBytes) of A-Z a-z 0-9 . _ -"))
            }
            guard labels[name] == nil else { return .failure(LabelsProblem(description: "label '\(name)' is given twice")) }
            switch AgentLabels.valueProblem(value) {
            case nil:
                labels[name] = value
            case .tooLong:
                return .failure(LabelsProblem(
                    description: "the value of label '\(name)' is longer than \(AgentLabels.maximumValueBytes) bytes"))
            case .whitespaceOrControl, .comma:  // no comma gets here: the header is split at them
                return .failure(LabelsProblem(
                    description: "the value of label '\(name)' contains whitespace or control characters"))
            }
        }
        return .success(labels)
    }

    /// The `uplink:label:NAME=VALUE` URIs among the certificate's subject alternative names.
    static func certificateLabels(_ certificate: NIOSSLCertificate) -> [String: String] {
        var labels: [String: String] = [:]
        for name in certificate._subjectAlternativeNames() where name.nameType == .uri {
            let text = name.contents.withUnsafeBufferPointer { String(decoding: $0, as: UTF8.self) }
            guard text.hasPrefix("uplink:label:") else { continue }
            let term = text.dropFirst("uplink:label:".count)
            guard let equals = term.firstIndex(of: "="), equals != term.startIndex else { continue }
            labels[String(term[..<equals])] = String(term[term.index(after: equals)...])
        }
        return labels
    }

    // MARK: - Responses

    static func text(_ status: HTTPResponse.Status, _ text: String) -> Response {
        Response(
            status: status, headers: [.contentType: "text/plain; charset=utf-8"],
            body: ResponseBody(byteBuffer: ByteBuffer(string: text)))
    }

    /// `200` with the manifest and its ETag, `304` when `If-None-Match` names it, `204` when nothing is assigned.
    static func manifestResponse(_ manifest: ConfigManifest, _ request: Request) -> Response {
        guard !manifest.documents.isEmpty else { return Response(status: .noContent, headers: [.cacheControl: "no-cache"]) }
        guard manifest.documents.count <= ConfigManifest.maximumDocuments else {
            // An agent refuses such a manifest; a 5xx leaves its running documents alone.
            return text(
                .internalServerError,
                "the rules assign this agent \(manifest.documents.count) documents, more than \(ConfigManifest.maximumDocuments)\n")
        }
        let etag = "\"\(manifest.revision.prefixed)-\(manifest.generation)\""
        let headers: HTTPFields = [.eTag: etag, .cacheControl: "no-cache"]
        if let condition = request.headers[.ifNoneMatch], Self.matches(condition, etag) {
            return Response(status: .notModified, headers: headers)
        }
        var full = headers
        full[.contentType] = "application/json"
        return Response(status: .ok, headers: full, body: ResponseBody(byteBuffer: ByteBuffer(bytes: manifest.json)))
    }

    /// Whether an `If-None-Match` value names `etag` (or is `*`); weak tags compare by their opaque part.
    static func matches(_ condition: String, _ etag: String) -> Bool {
        for item in condition.split(separator: ",") {
            var tag = String(item.trimmingSpacesAndTabs)
            if tag == "*" { return true }
            if tag.hasPrefix("W/") { tag = String(tag.dropFirst(2)) }
            if tag == etag { return true }
        }
        return false
    }

    /// The blob, whole or the part a `Range` asks for (`bytes=N-`, `bytes=N-M`, `bytes=-N`): `206` with
    /// `Content-Range`, `416` when it starts beyond the end; an `If-Range` naming another ETag, a range in another
    /// unit or several ranges get the whole blob.
    static func blobResponse(_ bytes: [UInt8], digest: SHA256Digest, _ request: Request) -> Response {
        let etag = "\"\(digest.prefixed)\""
        var headers: HTTPFields = [
            .eTag: etag, .acceptRanges: "bytes", .cacheControl: "max-age=31536000, immutable",
            .contentType: "application/octet-stream",
        ]
        let rangeApplies = request.headers[.ifRange].map { $0.trimmingSpacesAndTabs == etag } ?? true
        if rangeApplies, let header = request.headers[.range] {
            switch ByteRange.parse(header, size: bytes.count) {
            case .whole:
                break
            case .unsatisfiable:
                headers[.contentRange] = "bytes */\(bytes.count)"
                return Response(status: .rangeNotSatisfiable, headers: headers)
            case .part(let range):
                headers[.contentRange] = "bytes \(range.lowerBound)-\(range.upperBound - 1)/\(bytes.count)"
                return Response(
                    status: .partialContent, headers: headers,
                    body: ResponseBody(byteBuffer: ByteBuffer(bytes: bytes[range])))
            }
        }
        return Response(status: .ok, headers: headers, body: ResponseBody(byteBuffer: ByteBuffer(bytes: bytes)))
    }
}

/// Who asks a remote configuration endpoint, or the answer that refuses the request.
enum Requester {
    case agent(String, PresentedLabels)
    case refused(Response)
}

/// A `Range` request header against a body of known size (RFC 9110, 14.2), one range only.
enum ByteRange: Equatable {
    /// Serve the whole body: no usable single byte range.
    case whole
    case unsatisfiable
    case part(Range<Int>)

    static func parse(_ header: String, size: Int) -> ByteRange {
        let value = String(header.trimmingSpacesAndTabs)
        guard value.hasPrefix("bytes=") else { return .whole }
        let spec = value.dropFirst("bytes=".count)
        guard !spec.contains(","), let dash = spec.firstIndex(of: "-") else { return .whole }
        let first = String(spec[..<dash].trimmingSpacesAndTabs)
        let last = String(spec[spec.index(after: dash)...].trimmingSpacesAndTabs)
        if first.isEmpty {
            // A suffix: the last N bytes.
            guard let count = Int(last), count >= 0 else { return .whole }
            guard count > 0, size > 0 else { return .unsatisfiable }
            return .part(max(0, size - count)..<size)
        }
        guard let start = Int(first), start >= 0 else { return .whole }
        var end = size - 1
        if !last.isEmpty {
            guard let given = Int(last), given >= start else { return .whole }
            end = min(given, size - 1)
        }
        guard start < size else { return .unsatisfiable }
        return .part(start..<(end + 1))
    }
}
