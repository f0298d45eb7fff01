import Synchronization
import Testing
import UplinkRemoteConfig
import UplinkTestSupport
@testable import UplinkTransport

/// Blob downloads against a test server that answers like the collector (or deliberately not): resume, restart,
/// every reason the `.part` is kept or discarded, the size cap on an endless body.
@Suite("Remote config: resumable blob downloads", .timeLimit(.minutes(2)))
struct RemoteConfigBlobTests {
    typealias T = RemoteConfigTesting

    let blob = T.blob(count: 100_000, seed: 1)
    var digest: SHA256Digest { SHA256Digest(of: blob) }

    func withServer<R: Sendable>(
        _ respond: @escaping @Sendable (TestHTTPServer.Request) -> TestHTTPServer.Response,
        _ body: (TestHTTPServer) async throws -> R
    ) async throws -> R {
        let server = TestHTTPServer(respond: respond)
        try await server.start()
        do {
            let result = try await body(server)
            await server.stop()
            return result
        } catch {
            await server.stop()
            throw error
        }
    }

    /// `downloadBlob`'s outcome as a Result (typed throws do not travel through `#expect(throws:)` well).
    func download(
        _ client: RemoteConfigClient, _ digest: SHA256Digest, size: Int, into directory: String,
        progress: (@Sendable (BlobProgress) -> Void)? = nil
    ) async -> Result<BlobDownload, BlobDownloadFailure> {
        do throws(BlobDownloadFailure) {
            return .success(try await client.downloadBlob(digest, size: size, into: directory, progress: progress))
        } catch {
            return .failure(error)
        }
    }

    @Test("A whole download: .part, then <hex> after the hash check; progress up to the size; no Range asked")
    func complete() async throws {
        let directory = try T.directory()
        let reports = Mutex<[BlobProgress]>([])
        try await withServer(T.blobResponder([digest: blob])) { server in
            let result = try await T.withClient(url: server.url) { client in
                await download(client, digest, size: blob.count, into: directory) { progress in
                    reports.withLock { $0.append(progress) }
                }
            }
            let done = try result.get()
            #expect(done == BlobDownload(
                path: directory + "/" + digest.hex, wasPresent: false, resumedAt: 0, restarted: false, bytesReceived: blob.count))
            #expect(T.files(in: directory) == [digest.hex])
            #expect(T.digest(done.path) == SHA256Digest(of: blob))
            #expect(server.requests.count == 1)
            #expect(server.requests.first?.uri == "/v1/config/blobs/\(digest.prefixed)")
            #expect(server.requests.first?.header("Range") == nil)
            #expect(server.requests.first?.header("Uplink-Agent") == T.agentID)
            #expect(server.requests.first?.header("Authorization") == "Bearer \(T.token)")
        }
        let seen = reports.withLock { $0 }
        #expect(seen.first == BlobProgress(bytesWritten: 0, totalBytes: blob.count))
        #expect(seen.last == BlobProgress(bytesWritten: blob.count, totalBytes: blob.count))
        #expect(zip(seen, seen.dropFirst()).allSatisfy { $0.bytesWritten <= $1.bytesWritten })
    }

    @Test("A .part cut at byte 1, at half and at size − 1 resumes with Range and If-Range", arguments: [1, 50_000, 99_999])
    func resume(cut: Int) async throws {
        let directory = try T.directory()
        T.write(Array(blob.prefix(cut)), to: directory + "/" + digest.hex + ".part")
        try await withServer(T.blobResponder([digest: blob])) { server in
            let result = try await T.withClient(url: server.url) { await download($0, digest, size: blob.count, into: directory) }
            let done = try result.get()
            #expect(done.resumedAt == cut)
            #expect(done.bytesReceived == blob.count - cut)
            #expect(!done.restarted)
            #expect(T.digest(done.path) == SHA256Digest(of: blob))
            #expect(T.files(in: directory) == [digest.hex])
            #expect(server.requests.first?.header("Range") == "bytes=\(cut)-")
            #expect(server.requests.first?.header("If-Range") == "\"\(digest.prefixed)\"")
        }
    }

    @Test("A server that ignores Range answers 200: the .part starts over and the result hashes right")
    func serverIgnoresRange() async throws {
        let directory = try T.directory()
        T.write(Array(blob.prefix(30_000)), to: directory + "/" + digest.hex + ".part")
        let reports = Mutex<[BlobProgress]>([])
        try await withServer(T.blobResponder([digest: blob], range: .ignore)) { server in
            let result = try await T.withClient(url: server.url) { client in
                await download(client, digest, size: blob.count, into: directory) { progress in
                    reports.withLock { $0.append(progress) }
                }
            }
            let done = try result.get()
            #expect(done.restarted)
            #expect(done.resumedAt == 0)
            #expect(done.bytesReceived == blob.count)
            #expect(T.digest(done.path) == SHA256Digest(of: blob))
            #expect(server.requests.first?.header("Range") == "bytes=30000-")
        }
        // The progress goes back to 0 when the download starts over.
        #expect(reports.withLock { $0.prefix(2).map(\.bytesWritten) } == [30_000, 0])
    }

    @Test("A corrupted byte: hash mismatch, nothing moved into place, the .part removed")
    func corruptedByte() async throws {
        let directory = try T.directory()
        var corrupted = blob
        corrupted[blob.count / 3] ^= 0x01
        try await withServer(T.blobResponder([digest: corrupted])) { server in
            let result = try await T.withClient(url: server.url) { await download($0, digest, size: blob.count, into: directory) }
            #expect(result == .failure(.hashMismatch(expected: digest, actual: SHA256Digest(of: corrupted))))
            #expect(T.files(in: directory) == [])
        }
    }

    @Test("A corrupted byte in the resumed .part's prefix: mismatch, .part gone; the next attempt starts over and succeeds")
    func corruptedPrefix() async throws {
        let directory = try T.directory()
        var prefix = Array(blob.prefix(40_000))
        prefix[7] ^= 0x80
        T.write(prefix, to: directory + "/" + digest.hex + ".part")
        try await withServer(T.blobResponder([digest: blob])) { server in
            try await T.withClient(url: server.url) { client in
                guard case .failure(.hashMismatch) = await download(client, digest, size: blob.count, into: directory) else {
                    Issue.record("a corrupted .part prefix was not caught")
                    return
                }
                #expect(T.files(in: directory) == [])
                let again = try await download(client, digest, size: blob.count, into: directory).get()
                #expect(again.resumedAt == 0)
                #expect(T.digest(again.path) == SHA256Digest(of: blob))
            }
            #expect(server.requests.map { $0.header("Range") } == ["bytes=40000-", nil])
        }
    }

    @Test("An endless body is given up on as soon as it passes the size: nothing written past it, no file left")
    func endlessBody() async throws {
        let directory = try T.directory()
        let size = 10_000
        let chunk = T.blob(count: 4096, seed: 2)
        try await withServer({ _ in .endless(status: 200, headers: [], chunk: chunk) }) { server in
            let written = Mutex(0)
            let result = try await T.withClient(url: server.url) { client in
                await download(client, SHA256Digest(of: chunk), size: size, into: directory) { progress in
                    written.withLock { $0 = max($0, progress.bytesWritten) }
                }
            }
            #expect(result == .failure(.tooLarge(limit: size)))
            #expect(written.withLock { $0 } <= size)
            #expect(T.files(in: directory) == [])
            await server.stop()
            // Bounded by the socket buffers, not by the body: the client stopped reading and closed.
            #expect(server.endlessBytesWritten < 64 * 1024 * 1024)
        }
    }

    @Test("Content-Length other than the blob's size is refused before the body is read")
    func wrongLength() async throws {
        let directory = try T.directory()
        try await withServer({ _ in .full(status: 200, headers: [], body: [UInt8](repeating: 1, count: 20)) }) { server in
            let result = try await T.withClient(url: server.url) { await download($0, digest, size: blob.count, into: directory) }
            #expect(result == .failure(.unexpectedLength(announced: 20, expected: blob.count)))
            #expect(T.files(in: directory) == [])
        }
    }

    @Test("A stale .part longer than the blob is discarded: the download starts at 0 without Range")
    func stalePartTooLong() async throws {
        let directory = try T.directory()
        T.write(blob + [1, 2, 3], to: directory + "/" + digest.hex + ".part")
        try await withServer(T.blobResponder([digest: blob])) { server in
            let done = try await T.withClient(url: server.url) { await download($0, digest, size: blob.count, into: directory) }.get()
            #expect(done.resumedAt == 0)
            #expect(T.digest(done.path) == SHA256Digest(of: blob))
            #expect(server.requests.first?.header("Range") == nil)
        }
    }

    @Test("Already downloaded: no request. A whole .part is moved into place without one. A wrong <hex> is replaced")
    func presentOnDisk() async throws {
        try await withServer(T.blobResponder([digest: blob])) { server in
            try await T.withClient(url: server.url) { client in
                let directory = try T.directory()
                T.write(blob, to: directory + "/" + digest.hex)
                let present = try await download(client, digest, size: blob.count, into: directory).get()
                #expect(present.wasPresent)

                let other = try T.directory()
                T.write(blob, to: other + "/" + digest.hex + ".part")
                let moved = try await download(client, digest, size: blob.count, into: other).get()
                #expect(moved.wasPresent)
                #expect(T.files(in: other) == [digest.hex])
                #expect(server.requests.isEmpty)

                let third = try T.directory()
                T.write(Array(blob.reversed()), to: third + "/" + digest.hex)
                let replaced = try await download(client, digest, size: blob.count, into: third).get()
                #expect(!replaced.wasPresent)
                #expect(T.digest(replaced.path) == SHA256Digest(of: blob))
                #expect(server.requests.count == 1)
            }
        }
    }

    @Test("A connection cut mid-body keeps the .part; the next attempt asks for the rest and completes")
    func cutConnection() async throws {
        let directory = try T.directory()
        let honour = T.blobResponder([digest: blob])
        let first = Mutex(true)
        let cutAt = 12_345
        try await withServer({ request in
            let isFirst = first.withLock { isFirst in
                defer { isFirst = false }
                return isFirst
            }
            if isFirst {
                return .cut(status: 200, headers: [("ETag", "\"\(SHA256Digest(of: [0]).prefixed)\"")],
                    body: Array(blob.prefix(cutAt)), announced: blob.count)
            }
            return honour(request)
        }) { server in
            try await T.withClient(url: server.url) { client in
                let cut = await download(client, digest, size: blob.count, into: directory)
                switch cut {
                case .failure(.transport), .failure(.incomplete): break
                default: Issue.record("a cut connection gave \(cut)")
                }
                #expect(T.digest(directory + "/" + digest.hex + ".part") == SHA256Digest(of: Array(blob.prefix(cutAt))))
                let done = try await download(client, digest, size: blob.count, into: directory).get()
                #expect(done.resumedAt == cutAt)
                #expect(T.digest(done.path) == SHA256Digest(of: blob))
            }
            #expect(server.requests.last?.header("Range") == "bytes=\(cutAt)-")
            #expect(server.requests.last?.header("If-Range") == "\"\(digest.prefixed)\"")
        }
    }

    @Test("A collector that stops sending mid-body: the read timeout ends the attempt, the .part is kept")
    func stalledBody() async throws {
        let directory = try T.directory()
        try await withServer({ _ in .stall(status: 200, headers: [], body: Array(blob.prefix(5000))) }) { server in
            // The read timeout is the HTTP client's, on real time: nothing here measures it, and on a loaded machine it
            // may even fire before the first body bytes were read, so the .part holds a prefix of those 5000 bytes.
            let timeouts = RemoteConfigClient.Timeouts(connect: .seconds(5), readIdle: .seconds(1), request: .seconds(600))
            let result = try await T.withClient(url: server.url, timeouts: timeouts) {
                await download($0, digest, size: blob.count, into: directory)
            }
            guard case .failure(.transport(let reason)) = result else {
                Issue.record("a stalled body gave \(result)")
                return
            }
            #expect(reason.contains("read timeout"))
            let part = try #require(T.contents(directory + "/" + digest.hex + ".part"))
            #expect(part.count <= 5000 && part.elementsEqual(blob.prefix(part.count)), "\(part.count) bytes kept")
        }
    }

    @Test("A body that keeps the connection busy but never ends in time: the request deadline ends it, the .part is kept")
    func requestDeadline() async throws {
        let directory = try T.directory()
        let clock = ManualClock()
        try await withServer({ _ in .stall(status: 200, headers: [], body: Array(blob.prefix(700))) }) { server in
            let timeouts = RemoteConfigClient.Timeouts(connect: .seconds(5), readIdle: .seconds(600), request: .seconds(60))
            let result = try await T.withClient(url: server.url, timeouts: timeouts, clock: clock) { client in
                let written = Mutex(0)
                let task = Task {
                    await download(client, digest, size: blob.count, into: directory) { progress in
                        written.withLock { $0 = progress.bytesWritten }
                    }
                }
                #expect(await eventually { written.withLock { $0 } == 700 && clock.sleepers == 1 })
                clock.advance(by: .seconds(60))
                return await task.value
            }
            #expect(result == .failure(.transport("the request took longer than 60.0 seconds")))
            #expect(T.digest(directory + "/" + digest.hex + ".part") == SHA256Digest(of: Array(blob.prefix(700))))
        }
    }

    @Test("Cancelling the download's task: .cancelled, the .part kept for the next attempt")
    func cancelled() async throws {
        let directory = try T.directory()
        try await withServer({ _ in .stall(status: 200, headers: [], body: Array(blob.prefix(900))) }) { server in
            try await T.withClient(url: server.url) { client in
                let written = Mutex(0)
                let task = Task {
                    await download(client, digest, size: blob.count, into: directory) { progress in
                        written.withLock { $0 = progress.bytesWritten }
                    }
                }
                #expect(await eventually { written.withLock { $0 } == 900 })
                task.cancel()
                #expect(await task.value == .failure(.cancelled))
                #expect(T.digest(directory + "/" + digest.hex + ".part") == SHA256Digest(of: Array(blob.prefix(900))))
            }
        }
    }

    @Test("206 with another range than asked: refused, the .part discarded; 404: refused, the .part kept")
    func unexpectedAnswers() async throws {
        let directory = try T.directory()
        let part = directory + "/" + digest.hex + ".part"
        T.write(Array(blob.prefix(100)), to: part)
        try await withServer(T.blobResponder([digest: blob], range: .wrongContentRange)) { server in
            let result = try await T.withClient(url: server.url) { await download($0, digest, size: blob.count, into: directory) }
            #expect(result == .failure(.unexpectedContentRange("bytes 101-99999/100000")))
            #expect(T.files(in: directory) == [])
        }
        T.write(Array(blob.prefix(100)), to: part)
        try await withServer(T.blobResponder([:])) { server in
            let result = try await T.withClient(url: server.url) { await download($0, digest, size: blob.count, into: directory) }
            #expect(result == .failure(.status(404)))
            #expect(T.digest(part) == SHA256Digest(of: Array(blob.prefix(100))))
        }
    }

    @Test("Content-Range parsing")
    func contentRange() {
        #expect(ContentRange("bytes 5-9/10") == .init(first: 5, last: 9, total: 10))
        #expect(ContentRange("bytes 5-9/*")?.total == nil)
        for bad in ["bytes 9-5/10", "bytes 5-9/9", "bytes -1-9/10", "items 5-9/10", "bytes 5-9", "bytes 5-/10", "bytes a-9/10"] {
            #expect(ContentRange(bad) == nil, "\(bad)")
        }
    }
}

extension ContentRange {
    init(first: Int, last: Int, total: Int?) {
        self.init("bytes \(first)-\(last)/\(total.map(String.init) ?? "*")")!
    }
}
