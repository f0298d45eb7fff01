import Foundation

/// A real HTTP CONNECT proxy for tests: Debian's `tinyproxy` started on 127.0.0.1 in a temporary directory, in the
/// foreground under `timeout(1)` (so it ends even if the test process dies), stopped by `withTinyproxy`.
/// Its log (`log()`) has one `Request … CONNECT host:port` line per tunnel.
public final class TestTinyproxy: @unchecked Sendable {
    public struct Failure: Error, CustomStringConvertible {
        public let description: String
        public init(description: String) { self.description = description }
    }

    /// The tinyproxy binary.
    public static let binary = "/usr/bin/tinyproxy"
    /// Whether tinyproxy is installed (CI installs the Debian package `tinyproxy`).
    public static var isInstalled: Bool { FileManager.default.isExecutableFile(atPath: binary) }

    /// The loopback port it listens on.
    public let port: Int
    public let directory: String
    private var process: ChildProcess?

    /// `http://127.0.0.1:<port>`.
    public var url: String { "http://127.0.0.1:\(port)" }
    public var logPath: String { directory + "/tinyproxy.log" }

    private init(port: Int, directory: String) {
        self.port = port
        self.directory = directory
    }

    /// Starts tinyproxy, runs `body`, stops tinyproxy whether `body` returned or threw.
    /// - Parameter basicAuth: When set, the proxy answers 407 unless `Proxy-Authorization` carries these.
    public static func withTinyproxy<T: Sendable>(
        basicAuth: (user: String, password: String)? = nil, _ body: (TestTinyproxy) async throws -> T
    ) async throws -> T {
        let proxy = try await start(basicAuth: basicAuth)
        do {
            let result = try await body(proxy)
            await proxy.stop()
            return result
        } catch {
            await proxy.stop()
            throw error
        }
    }

    public static func start(basicAuth: (user: String, password: String)? = nil) async throws -> TestTinyproxy {
        guard isInstalled else { throw Failure(description: "tinyproxy is not installed (Debian: apt-get install tinyproxy)") }
        let directory = try TestDirectories.make("uplink-tinyproxy")
        var lastError: (any Error)?
        for _ in 0..<5 {
            let proxy = TestTinyproxy(port: try FreePort.pick(), directory: directory)
            do {
                try await proxy.launch(basicAuth: basicAuth)
                return proxy
            } catch {
                lastError = error
            }
        }
        throw lastError ?? Failure(description: "tinyproxy did not start")
    }

    /// SIGTERM (passed on by timeout(1)); SIGKILL after 5 s. Safe to call more than once.
    public func stop() async {
        guard let process else { return }
        self.process = nil
        await process.terminate()
    }

    /// What tinyproxy logged so far.
    public func log() -> String {
        (try? String(contentsOfFile: logPath, encoding: .utf8)) ?? ""
    }

    /// The `CONNECT host:port` requests it received, in order.
    public func connectRequests() -> [String] {
        log().split(separator: "\n").compactMap { line in
            guard let range = line.range(of: "CONNECT ", options: .backwards), line.contains("Request") else { return nil }
            return String(line[range.upperBound...].prefix { $0 != " " })
        }
    }

    private func launch(basicAuth: (user: String, password: String)?) async throws {
        var configuration = """
            Port \(port)
            Listen 127.0.0.1
            Timeout 600
            LogLevel Connect
            MaxClients 50
            Allow 127.0.0.1

            """
        if let basicAuth { configuration += "BasicAuth \(basicAuth.user) \(basicAuth.password)\n" }
        let configurationPath = directory + "/tinyproxy-\(port).conf"
        try configuration.write(toFile: configurationPath, atomically: true, encoding: .utf8)
        let process = try ChildProcess(
            ["/usr/bin/timeout", "--signal=TERM", "--kill-after=5", String(TestNginx.lifetime), Self.binary, "-d", "-c", configurationPath],
            outputPath: logPath)
        self.process = process
        let port = port
        if await process.waitUntil(timeout: .seconds(10), { TestNginx.canConnect(port: port) }) { return }
        if !process.isRunning {
            self.process = nil
            throw Failure(description: "tinyproxy exited at start: \(self.log().suffix(2000))")
        }
        await stop()
        throw Failure(description: "tinyproxy did not listen on 127.0.0.1:\(port) within 10 s")
    }

    deinit {
        process?.send(SIGKILL)
    }
}
