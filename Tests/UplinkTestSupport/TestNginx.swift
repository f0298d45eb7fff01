import Foundation

/// A real nginx (Debian's `/usr/sbin/nginx`) started for one test on loopback, in its own temporary directory, with a
/// generated configuration: TLS termination (optionally verifying client certificates), HTTP/1.1 or HTTP/2 (ALPN),
/// proxying to an upstream on loopback with the settings docs/deploy.md recommends for the stream.
///
/// Every run is bounded: nginx is started under `timeout(1)` (`lifetime`), so it ends even if the test process dies,
/// and `withNginx` stops it when the body returns or throws.
///
/// ```swift
/// try await TestNginx.withNginx(.init(upstreamPort: collector.port, tls: .init(certificate: server, clientCA: ca.certificateFile))) { nginx in
///     // point the agent at nginx.url
/// }
/// ```
public final class TestNginx: @unchecked Sendable {
    /// What nginx is set up to do.
    public struct Configuration: Sendable {
        /// TLS on the listening side.
        public struct TLS: Sendable {
            /// The server certificate and key nginx presents.
            public var certificate: TestCertificateAuthority.Certificate
            /// When set, client certificates are verified against this CA file (`ssl_verify_client`).
            public var clientCAFile: String?
            /// `ssl_verify_client on` (true) or `optional` (false); only with `clientCAFile`.
            public var requireClientCertificate: Bool
            /// `ssl_protocols`. Default TLS 1.3 only.
            public var protocols: String

            public init(
                certificate: TestCertificateAuthority.Certificate, clientCAFile: String? = nil,
                requireClientCertificate: Bool = true, protocols: String = "TLSv1.3"
            ) {
                self.certificate = certificate
                self.clientCAFile = clientCAFile
                self.requireClientCertificate = requireClientCertificate
                self.protocols = protocols
            }
        }

        /// The plain-HTTP upstream on 127.0.0.1 (e.g. an in-process collector).
        public var upstreamPort: Int
        /// TLS settings; nil listens in plain HTTP/1.1.
        public var tls: TLS?
        /// `listen … ssl http2`: HTTP/2 offered through ALPN (HTTP/1.1 too).
        public var http2: Bool
        /// `proxy_read_timeout` / `proxy_send_timeout` in seconds.
        public var proxyTimeoutSeconds: Int
        /// `worker_shutdown_timeout` in seconds: how long a reload lets old connections finish.
        public var workerShutdownTimeoutSeconds: Int
        /// Extra directives inside `location /`.
        public var extraLocationDirectives: String
        /// When set, these `upstream`/`server` blocks replace the generated ones (e.g. deploy/nginx/uplink.conf with
        /// its paths and ports substituted); the other settings then only choose `url`'s scheme.
        public var serverBlocks: String?

        public init(
            upstreamPort: Int, tls: TLS? = nil, http2: Bool = false, proxyTimeoutSeconds: Int = 3600,
            workerShutdownTimeoutSeconds: Int = 1, extraLocationDirectives: String = "", serverBlocks: String? = nil
        ) {
            self.upstreamPort = upstreamPort
            self.tls = tls
            self.http2 = http2
            self.proxyTimeoutSeconds = proxyTimeoutSeconds
            self.workerShutdownTimeoutSeconds = workerShutdownTimeoutSeconds
            self.extraLocationDirectives = extraLocationDirectives
            self.serverBlocks = serverBlocks
        }
    }

    public struct Failure: Error, CustomStringConvertible {
        public let description: String
        public init(description: String) { self.description = description }
    }

    /// The nginx binary.
    public static let binary = "/usr/sbin/nginx"
    /// Longest time one nginx process may live.
    public static let lifetime = 300

    public let configuration: Configuration
    /// The temporary directory holding the configuration, logs, pid and temp files.
    public let directory: String
    /// The loopback port nginx listens on.
    public private(set) var port: Int
    private var process: ChildProcess?

    /// `https://127.0.0.1:<port>` or `http://127.0.0.1:<port>`.
    public var url: String { "\(configuration.tls == nil ? "http" : "https")://127.0.0.1:\(port)" }
    /// `https://localhost:<port>` (the name test server certificates carry).
    public var localhostURL: String { "\(configuration.tls == nil ? "http" : "https")://localhost:\(port)" }
    /// The access log: one line per finished request (see `accessLog()`).
    public var accessLogPath: String { directory + "/access.log" }
    public var errorLogPath: String { directory + "/error.log" }

    private init(configuration: Configuration, directory: String) {
        self.configuration = configuration
        self.directory = directory
        self.port = 0
    }

    /// Starts nginx, runs `body`, and stops nginx whether `body` returned or threw.
    public static func withNginx<T: Sendable>(
        _ configuration: Configuration, _ body: (TestNginx) async throws -> T
    ) async throws -> T {
        let nginx = try await start(configuration)
        do {
            let result = try await body(nginx)
            await nginx.stop()
            return result
        } catch {
            await nginx.stop()
            throw error
        }
    }

    /// Starts nginx on a free loopback port (a few tries, as the port is chosen before nginx binds it).
    public static func start(_ configuration: Configuration) async throws -> TestNginx {
        guard FileManager.default.isExecutableFile(atPath: binary) else {
            throw Failure(description: "nginx is not installed (Debian: apt-get install nginx)")
        }
        let directory = try TestDirectories.make("uplink-nginx")
        try FileManager.default.createDirectory(atPath: directory + "/temp", withIntermediateDirectories: true)
        let nginx = TestNginx(configuration: configuration, directory: directory)
        var lastError: (any Error)?
        for _ in 0..<5 {
            do {
                nginx.port = try FreePort.pick()
                try await nginx.launch()
                return nginx
            } catch {
                lastError = error
            }
        }
        throw lastError ?? Failure(description: "nginx did not start")
    }

    /// Fast shutdown (SIGTERM, which timeout(1) passes on to nginx), bounded: SIGKILL to every nginx process after
    /// 5 s. Safe to call more than once.
    public func stop() async {
        guard let process else { return }
        self.process = nil
        let master = masterProcessID()
        let workers = (try? workerProcessIDs(of: master)) ?? []
        process.send(SIGTERM)
        if await !process.waitForExit(seconds: 5) {
            Self.killAll(process, master: master, workers: workers)
            await process.waitForExit(seconds: 5)
        }
    }

    /// SIGKILL to the workers, the master and timeout(1): none of them can hold on to a port or a connection.
    private static func killAll(_ process: ChildProcess, master: Int32?, workers: Set<Int32>) {
        for worker in workers { kill(worker, SIGKILL) }
        if let master { kill(master, SIGKILL) }
        process.send(SIGKILL)
    }

    /// Stops nginx and starts it again on the same port: every connection through it is cut.
    public func restart() async throws {
        await stop()
        try await launch()
    }

    /// `nginx -s reload` (SIGHUP to the master): new workers take new connections; old ones finish theirs within
    /// `workerShutdownTimeoutSeconds`, then close them. Waits until the old workers have exited.
    public func reload() async throws {
        guard let master = masterProcessID() else { throw Failure(description: "nginx reload: no master pid") }
        let before = try workerProcessIDs(of: master)
        kill(master, SIGHUP)
        let replaced = try await eventually(timeout: .seconds(configuration.workerShutdownTimeoutSeconds + 10)) {
            let now = try workerProcessIDs(of: master)
            return !now.isEmpty && before.isDisjoint(with: now)
        }
        if replaced { return }
        throw Failure(description: "nginx reload: old workers \(before) still running")
    }

    /// The access log's lines; each is `protocol tls-protocol status verify=… serial=… dn=… "request"`.
    public func accessLog() -> [String] {
        guard let text = try? String(contentsOfFile: accessLogPath, encoding: .utf8) else { return [] }
        return text.split(separator: "\n").map(String.init)
    }

    /// The error log (for failure messages).
    public func errorLog() -> String {
        (try? String(contentsOfFile: errorLogPath, encoding: .utf8)) ?? ""
    }

    // MARK: Private

    private func launch() async throws {
        try renderConfiguration().write(toFile: directory + "/nginx.conf", atomically: true, encoding: .utf8)
        // Bounded even if this test process dies: timeout(1) ends nginx after `lifetime` seconds.
        let process = try ChildProcess([
            "/usr/bin/timeout", "--signal=TERM", "--kill-after=5", String(Self.lifetime),
            Self.binary, "-p", directory + "/", "-c", directory + "/nginx.conf", "-e", errorLogPath,
        ])
        self.process = process
        let port = port
        if await process.waitUntil(timeout: .seconds(10), { Self.canConnect(port: port) }) { return }
        if !process.isRunning {
            self.process = nil
            throw Failure(description: "nginx exited at start: \(errorLog().suffix(2000))")
        }
        await stop()
        throw Failure(description: "nginx did not listen on 127.0.0.1:\(port) within 10 s: \(errorLog().suffix(2000))")
    }

    private func renderConfiguration() -> String {
        var listen = "listen 127.0.0.1:\(port)"
        var tlsDirectives = ""
        if let tls = configuration.tls {
            listen += " ssl"
            if configuration.http2 { listen += " http2" }
            tlsDirectives = """
                    ssl_certificate \(tls.certificate.certificateFile);
                    ssl_certificate_key \(tls.certificate.keyFile);
                    ssl_protocols \(tls.protocols);
                    ssl_session_tickets off;

                """
            if let clientCA = tls.clientCAFile {
                tlsDirectives += """
                            ssl_client_certificate \(clientCA);
                            ssl_verify_client \(tls.requireClientCertificate ? "on" : "optional");
                            ssl_verify_depth 2;

                    """
            }
        }
        let temp = directory + "/temp"
        let blocks = configuration.serverBlocks.map { $0.replacingOccurrences(of: "@PORT@", with: String(port)) } ?? """
                upstream collector {
                    server 127.0.0.1:\(configuration.upstreamPort);
                    keepalive 4;
                }
                server {
                    \(listen);
                    server_name localhost;
            \(tlsDirectives)
                    location / {
                        proxy_pass http://collector;
                        proxy_http_version 1.1;
                        proxy_set_header Connection "";
                        proxy_request_buffering off;
                        proxy_buffering off;
                        client_max_body_size 0;
                        proxy_read_timeout \(configuration.proxyTimeoutSeconds)s;
                        proxy_send_timeout \(configuration.proxyTimeoutSeconds)s;
                        client_body_timeout \(configuration.proxyTimeoutSeconds)s;
                        send_timeout \(configuration.proxyTimeoutSeconds)s;
                        \(configuration.extraLocationDirectives)
                    }
                }
            """
        return """
            \(geteuid() == 0 ? "user root;" : "")
            daemon off;
            worker_processes 1;
            pid \(directory)/nginx.pid;
            error_log \(errorLogPath) info;
            worker_shutdown_timeout \(configuration.workerShutdownTimeoutSeconds)s;
            events { worker_connections 256; }
            http {
                log_format uplink '$server_protocol $ssl_protocol $status verify=$ssl_client_verify '
                                  'serial=$ssl_client_serial dn="$ssl_client_s_dn" "$request" $request_length';
                access_log \(accessLogPath) uplink;
                client_body_temp_path \(temp)/body;
                proxy_temp_path \(temp)/proxy;
                fastcgi_temp_path \(temp)/fastcgi;
                uwsgi_temp_path \(temp)/uwsgi;
                scgi_temp_path \(temp)/scgi;
            \(blocks)
            }

            """
    }

    private func masterProcessID() -> Int32? {
        let pidText = (try? String(contentsOfFile: directory + "/nginx.pid", encoding: .utf8)) ?? ""
        return Int32(pidText.trimmingCharacters(in: .whitespacesAndNewlines))
    }

    private func workerProcessIDs(of master: Int32?) throws -> Set<Int32> {
        guard let master else { return [] }
        let children = (try? String(contentsOfFile: "/proc/\(master)/task/\(master)/children", encoding: .utf8)) ?? ""
        return Set(children.split(separator: " ").compactMap { Int32($0.trimmingCharacters(in: .whitespacesAndNewlines)) })
    }

    /// Whether a TCP connection to 127.0.0.1:`port` succeeds now.
    public static func canConnect(port: Int) -> Bool {
        let descriptor = socket(AF_INET, Int32(SOCK_STREAM.rawValue), 0)
        guard descriptor >= 0 else { return false }
        defer { close(descriptor) }
        var address = loopback(port: port)
        return withUnsafePointer(to: &address) {
            $0.withMemoryRebound(to: sockaddr.self, capacity: 1) {
                connect(descriptor, $0, socklen_t(MemoryLayout<sockaddr_in>.size)) == 0
            }
        }
    }

    private static func loopback(port: Int) -> sockaddr_in {
        var address = sockaddr_in()
        address.sin_family = sa_family_t(AF_INET)
        address.sin_port = UInt16(port).bigEndian
        address.sin_addr.s_addr = UInt32(0x7F00_0001).bigEndian
        return address
    }

    deinit {
        // Last resort when a test forgot `stop()`: never leave nginx running (no waiting in a deinit).
        guard let process else { return }
        let master = masterProcessID()
        Self.killAll(process, master: master, workers: (try? workerProcessIDs(of: master)) ?? [])
    }
}
