import Foundation
import Testing
import UplinkCore
import UplinkRemoteConfig
import UplinkTestSupport

/// Remote configuration delivered to an agent process through a `FaultProxy` in front of a collector process: the
/// documents a box refuses while a remote set runs, downloads cut and resumed, and a collector that answers errors.
/// What reached the collector is read from the proxy's log of request heads.
@Suite("Remote configuration: delivery through a fault proxy", .serialized, .timeLimit(.minutes(3)))
struct RemoteConfigDeliveryTests {
    /// Runs `body` with a fleet whose agent reaches the collector through a started `FaultProxy`. The probation is
    /// 3 s: the acknowledgement criterion needs a record appended after the swap acknowledged, and `local-load`
    /// appends one a second; a probation as short as that interval fails on a loaded machine.
    static func withProxiedFleet(
        probation: String = "3s", collectorRequiresSignature: Bool = true,
        _ body: (RemoteConfigFleet, FaultProxy) async throws -> Void
    ) async throws {
        try await RemoteConfigFleet.with(probation: probation, collectorRequiresSignature: collectorRequiresSignature) { fleet in
            let proxy = FaultProxy(upstreamPort: fleet.collectorPort)
            try await proxy.start()
            do {
                try fleet.routeAgent(throughPort: proxy.port)
                try await body(fleet, proxy)
            } catch {
                try? await proxy.stop()
                throw error
            }
            try await proxy.stop()
        }
    }

    /// The value of header `name` in a request head as `FaultProxy.requestHeads` has it.
    static func header(_ name: String, in head: String) -> String? {
        for line in head.split(separator: "\r\n").dropFirst() {
            let parts = line.split(separator: ":", maxSplits: 1)
            if parts.count == 2, parts[0].lowercased() == name.lowercased() {
                return String(parts[1].drop { $0 == " " })
            }
        }
        return nil
    }

    /// The request heads of `GET /v1/config/blobs/<digest>` the proxy saw.
    static func blobRequests(_ proxy: FaultProxy, _ digest: SHA256Digest) -> [String] {
        proxy.requestHeads.filter { $0.hasPrefix("GET /v1/config/blobs/\(digest.prefixed) ") }
    }

    /// The digest of the document `name` as the collector serves it.
    static func digest(_ fleet: RemoteConfigFleet, _ name: String) throws -> SHA256Digest {
        SHA256Digest(of: Array(try Data(contentsOf: URL(fileURLWithPath: fleet.root + "/fleet/documents/\(name).yaml"))))
    }

    @Test("refused while a remote set runs: a bad signature, a byte changed in transit, an older serial (also after a restart), another audience, an expired envelope, 1 MiB + 1 byte, an endless body; the running tail goes on, no exec ever starts")
    func refusedDocumentsLeaveTheRunningSetAlone() async throws {
        // The collector does not check signatures: the box is what refuses.
        try await Self.withProxiedFleet(collectorRequiresSignature: false) { fleet, proxy in
            // The probe the documents below would run: it leaves a marker when it does run. Each document differs
            // from the others by a comment: the same bytes would be a blob the agent has already.
            let marker = fleet.root + "/exec-ran"
            try "#!/bin/sh\ntouch \"$1\"\n".write(toFile: fleet.root + "/missing-probe", atomically: true, encoding: .utf8)
            chmod(fleet.root + "/missing-probe", 0o755)
            let probe = "  - { name: probe, type: exec, command: [\"\(fleet.root)/missing-probe\", \"\(marker)\"], interval: 1s }"
            let app = fleet.tailDocument(source: "app", file: "app.log")
            try "app-1\n".write(toFile: fleet.root + "/logs/app.log", atomically: true, encoding: .utf8)
            try fleet.signedDocument("logs", serial: 5, app)
            try fleet.assign(generation: 1, ["logs"])
            try fleet.startCollector()
            try fleet.startAgent()
            #expect(await eventually(timeout: .seconds(60)) { await fleet.remoteState().state == "applied" }, "\(fleet.logs)")
            let running = try #require(await fleet.remote("effective"))
            let lastKnownGood = try FileManager.default.destinationOfSymbolicLink(atPath: fleet.root + "/state/remote/current")
            var generation = 1
            var lines = ["app-1"]

            /// Assigns `documents` anew, waits for the agent to say why it does not take them, and checks that what
            /// ran before still runs: the same set and sources, the tail not restarted and still storing lines.
            func expectRefused(_ documents: [String], _ reason: String, _ what: String) async throws {
                generation += 1
                try fleet.assign(generation: generation, documents)
                kill(fleet.collector!.processIdentifier, SIGHUP)
                let refused = await eventually(timeout: .seconds(30)) {
                    await fleet.remoteState().error?.contains(reason) == true
                }
                let state = await fleet.remoteState()
                #expect(refused, "\(what): \(state) \(fleet.logs)")
                #expect(state.sources.sorted() == ["app", "local-load"], "\(what): \(state)")
                #expect(await fleet.remote("effective") == running, "\(what)")
                #expect(try FileManager.default.destinationOfSymbolicLink(atPath: fleet.root + "/state/remote/current") == lastKnownGood, "\(what)")
                #expect(!fleet.agentStopped(source: "app"), "\(what): the running tail was stopped")
                lines.append("app-\(lines.count + 1)")
                try RemoteConfigFleet.append([lines.last!], to: fleet.root + "/logs/app.log")
                #expect(await eventually(timeout: .seconds(30)) { fleet.storedMessages(source: "app") == lines }, "\(what): \(fleet.logs)")
                #expect(!FileManager.default.fileExists(atPath: marker), "\(what): the refused document's exec ran")
            }

            try fleet.signedDocument("extra", serial: 1, change: { $0.signature[7] ^= 0x01 }, "sources:\n" + probe + "\n# bad signature")
            try await expectRefused(["logs", "extra"], "the signature does not verify with trusted key 'ops'", "bad signature")

            // A failed download is tried again soon, so every copy of this document is changed on its way: what is
            // checked is that changed bytes are never applied (a copy that arrived intact would be, rightly).
            try fleet.signedDocument("extra", serial: 2, "sources:\n" + probe + "\n# changed in transit")
            proxy.alterResponse(toRequestContaining: "GET /v1/config/blobs/\(try Self.digest(fleet, "extra").prefixed) ", .flipBodyByte(20), times: 1_000)
            try await expectRefused(["logs", "extra"], "(discarded)", "a byte changed in transit")
            #expect(proxy.pendingResponseAlterations < 1_000, "the document went through the proxy")

            let documents = fleet.root + "/fleet/documents/"
            for file in ["logs.yaml", "logs.yaml.sig"] { try FileManager.default.copyItem(atPath: documents + file, toPath: fleet.root + "/" + file) }
            try fleet.signedDocument("logs", serial: 4, app + "\n" + probe + "\n# older serial")
            try await expectRefused(["logs"], "serial 4 is below 5", "an older serial")
            // The agent looks at what is assigned now: the changed document is not asked for again.
            proxy.discardResponseAlterations()
            // The highest serial is on disk: after a restart the same replay is refused again.
            fleet.agent!.terminate()
            await fleet.agent!.awaitExit()
            try fleet.startAgent()
            #expect(await eventually(timeout: .seconds(60)) {
                await fleet.remoteState().sources.sorted() == ["app", "local-load"]
            }, "\(fleet.logs)")
            try await expectRefused(["logs"], "serial 4 is below 5", "an older serial after a restart")
            // The running document again, as the cases below assign it.
            for file in ["logs.yaml", "logs.yaml.sig"] {
                try FileManager.default.removeItem(atPath: documents + file)
                try FileManager.default.copyItem(atPath: fleet.root + "/" + file, toPath: documents + file)
            }

            try fleet.signedDocument("extra", serial: 3, audience: "labels.site=elsewhere", "sources:\n" + probe + "\n# another audience")
            try await expectRefused(["logs", "extra"], "which does not include this agent", "another audience")

            let now = Int64(Date().timeIntervalSince1970)
            try fleet.signedDocument("extra", serial: 4, notAfter: now - 60, "sources:\n" + probe + "\n# expired")
            try await expectRefused(["logs", "extra"], "the signature expired at", "an expired envelope")

            // 1 MiB + 1 byte (with the newline `signedDocument` adds): refused from the manifest, never downloaded.
            let head = "sources:\n" + probe + "\n"
            let padding = String(repeating: "# padding to the limit\n", count: (1_048_576 - head.utf8.count) / 23)
            var large = head + padding
            large += "#" + String(repeating: "x", count: 1_048_577 - large.utf8.count - 2)
            try fleet.signedDocument("extra", serial: 5, large)
            #expect(try Data(contentsOf: URL(fileURLWithPath: fleet.root + "/fleet/documents/extra.yaml")).count == 1_048_577)
            try await expectRefused(["logs", "extra"], "is 1048577 bytes, more than remote_config.max_document_bytes (1048576)", "1 MiB + 1 byte")
            #expect(Self.blobRequests(proxy, try Self.digest(fleet, "extra")).isEmpty, "the large document was downloaded")

            // A body that does not end where the manifest says the document does: cut off while it streams.
            // Every copy endless, as above; each one the agent gives up on as soon as it is longer than the blob.
            try fleet.signedDocument("extra", serial: 6, "sources:\n" + probe + "\n# endless")
            proxy.alterResponse(toRequestContaining: "GET /v1/config/blobs/\(try Self.digest(fleet, "extra").prefixed) ", .endlessBody, times: 1_000)
            let sentBefore = proxy.bytesToClient
            try await expectRefused(["logs", "extra"], "the body is longer than the blob's", "an endless body")
            // Bytes first: every body they include was armed before the count of those armed is read.
            let read = proxy.bytesToClient - sentBefore
            let endless = 1_000 - proxy.pendingResponseAlterations
            #expect(endless > 0, "the document went through the proxy")
            #expect(read < endless * (64 << 20), "\(read) bytes of \(endless) endless bodies read")

            // The same probe in a document the box accepts does run: the marker is a real witness.
            try fleet.signedDocument("extra", serial: 7, "sources:\n" + probe)
            generation += 1
            try fleet.assign(generation: generation, ["logs", "extra"])
            kill(fleet.collector!.processIdentifier, SIGHUP)
            #expect(await eventually(timeout: .seconds(30)) { FileManager.default.fileExists(atPath: marker) }, "\(fleet.logs)")
        }
    }

    @Test("a download cut at byte 1, at half and at size − 1 resumes with Range and If-Range each time (seen at the proxy); the result hashes right and is applied")
    func resumedDownload() async throws {
        try await Self.withProxiedFleet { fleet, proxy in
            try "app-1\n".write(toFile: fleet.root + "/logs/app.log", atomically: true, encoding: .utf8)
            let text = "sources:\n  - { name: app, type: tail, paths: [\"\(fleet.root)/logs/app.log\"], start_at: beginning }\n"
                + String(repeating: "# a comment that makes the document long enough to cut in the middle\n", count: 300)
            try await fleet.document("logs", serial: 1, text)
            let digest = try Self.digest(fleet, "logs")
            let size = try Data(contentsOf: URL(fileURLWithPath: fleet.root + "/fleet/documents/logs.yaml")).count
            let cuts = [1, size / 2, size - 1]
            // The first three requests for the document are cut at those bytes, wherever each resumed from.
            for cut in cuts {
                proxy.alterResponse(toRequestContaining: "GET /v1/config/blobs/\(digest.prefixed) ", .cutAtResourceOffset(cut))
            }
            try fleet.assign(generation: 1, ["logs"])
            try fleet.startCollector()
            try fleet.startAgent()

            // Each failed download is tried again by itself, on the retry backoff (within 1, 2, then 4 s): no signal,
            // no new assignment. The stream is up all along, so the poll interval never comes into it.
            #expect(await eventually(timeout: .seconds(90)) { await fleet.remoteState().state == "applied" }, "\(fleet.logs)")
            let failedLooks = (fleet.agentLog?.text ?? "").components(separatedBy: "cannot download the remote configuration yet").count - 1
            #expect(failedLooks == cuts.count, "\(fleet.logs)")
            #expect(proxy.pendingResponseAlterations == 0)
            let requests = Self.blobRequests(proxy, digest)
            // After each cut the next request asks for the rest of what the `.part` holds (at most the bytes sent
            // before the cut: what was in flight may be lost with the connection), for this very blob.
            let starts = requests.dropFirst().map { Self.header("Range", in: $0).flatMap { Int($0.dropFirst("bytes=".count).dropLast()) } }
            #expect(requests.count == cuts.count + 1 && Self.header("Range", in: requests[0]) == nil, "\(requests)")
            for (start, cut) in zip(starts, cuts) {
                #expect(start.map { 0 < $0 && $0 <= cut } == true, "resumed at \(String(describing: start)) after a cut at \(cut): \(requests)")
            }
            #expect(zip(starts, starts.dropFirst()).allSatisfy { ($0 ?? 0) < ($1 ?? 0) }, "each resume starts further on: \(requests)")
            #expect(requests.dropFirst().allSatisfy { Self.header("If-Range", in: $0) == "\"\(digest.prefixed)\"" }, "\(requests)")
            let blob = try Data(contentsOf: URL(fileURLWithPath: fleet.root + "/state/remote/blobs/\(digest.hex)"))
            #expect(SHA256Digest(of: Array(blob)) == digest)
            #expect(!FileManager.default.fileExists(atPath: fleet.root + "/state/remote/blobs/\(digest.hex).part"))
            #expect(await eventually(timeout: .seconds(30)) { fleet.storedMessages(source: "app") == ["app-1"] }, "\(fleet.logs)")
        }
    }

    @Test("a collector that answers 503, then 404, while remote sources run: they keep running, and store again once it answers")
    func errorsNeverRemoveRunningSources() async throws {
        try await Self.withProxiedFleet { fleet, proxy in
            try "app-1\n".write(toFile: fleet.root + "/logs/app.log", atomically: true, encoding: .utf8)
            try await fleet.document("logs", serial: 1, fleet.tailDocument(source: "app", file: "app.log"))
            try fleet.assign(generation: 1, ["logs"])
            try fleet.startCollector()
            try fleet.startAgent()
            #expect(await eventually(timeout: .seconds(60)) { await fleet.remoteState().state == "applied" }, "\(fleet.logs)")
            let running = try #require(await fleet.remote("effective"))

            var lines = ["app-1"]
            // 404 last: after a 4xx the stream waits the longest backoff, so nothing after it needs the stream.
            for status in [503, 404] {
                // Every new connection gets the error; the open ones are closed, so the next look makes a new one.
                proxy.respondWithStatus(status, times: 1_000)
                proxy.cutAllConnections()
                let asked = proxy.requestHeads.count
                func manifestRequests() -> Int { proxy.requestHeads.dropFirst(asked).filter { $0.hasPrefix("GET /v1/config ") }.count }
                // Two looks answered, one after the other: when the second asks, the first has dealt with its answer.
                // A SIGHUP starts a look, again about every second: one that went out on a connection the cut was
                // closing never reached the proxy's log.
                var polls = 0
                #expect(await eventually(timeout: .seconds(60)) {
                    if manifestRequests() >= 2 { return true }
                    if polls % 100 == 0 { kill(fleet.agent!.processIdentifier, SIGHUP) }
                    polls += 1
                    return false
                }, "\(status): \(proxy.requestHeads)")
                let state = await fleet.remoteState()
                #expect(state.sources.sorted() == ["app", "local-load"], "\(status): \(state)")
                #expect(await fleet.remote("effective") == running, "\(status)")
                #expect(!fleet.agentStopped(source: "app"), "\(status): \(fleet.logs)")
                guard status == 503 else { continue }
                // Answers again: a line written meanwhile arrives through the tail that kept running.
                proxy.respondWithStatus(200, times: 0)
                lines.append("app-2")
                try RemoteConfigFleet.append(["app-2"], to: fleet.root + "/logs/app.log")
                #expect(await eventually(timeout: .seconds(60)) { fleet.storedMessages(source: "app") == lines }, "\(fleet.logs)")
                #expect(await fleet.remoteState().state == "applied")
            }
        }
    }
}
