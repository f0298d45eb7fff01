import Foundation

/// A blocking HTTP/1.0 request on loopback (so the answer is never chunked), for talking to test stores.
public enum LoopbackHTTP10 {
    public struct Response: Sendable {
        public var status: Int
        public var body: [UInt8]
        public var text: String { String(decoding: body, as: UTF8.self) }
    }

    public static func request(
        port: Int, method: String = "GET", path: String, body: [UInt8] = [], headers: [String: String] = [:]
    ) -> Response? {
        let descriptor = socket(AF_INET, Int32(SOCK_STREAM.rawValue), 0)
        guard descriptor >= 0 else { return nil }
        defer { close(descriptor) }
        var address = sockaddr_in()
        address.sin_family = sa_family_t(AF_INET)
        address.sin_port = UInt16(port).bigEndian
        address.sin_addr.s_addr = UInt32(0x7F00_0001).bigEndian
        let connected = withUnsafePointer(to: &address) {
            $0.withMemoryRebound(to: sockaddr.self, capacity: 1) {
                connect(descriptor, $0, socklen_t(MemoryLayout<sockaddr_in>.size)) == 0
            }
        }
        guard connected else { return nil }
        var head = "\(method) \(path) HTTP/1.0\r\nHost: 127.0.0.1:\(port)\r\nContent-Length: \(body.count)\r\n"
        for (name, value) in headers { head += "\(name): \(value)\r\n" }
        head += "\r\n"
        let request = Array(head.utf8) + body
        var sent = 0
        while sent < request.count {
            let count = request[sent...].withUnsafeBytes { send(descriptor, $0.baseAddress, $0.count, Int32(MSG_NOSIGNAL)) }
            if count <= 0 { return nil }
            sent += count
        }
        var response: [UInt8] = []
        var buffer = [UInt8](repeating: 0, count: 65536)
        while response.count < 256 << 20 {
            let count = recv(descriptor, &buffer, buffer.count, 0)
            if count <= 0 { break }
            response.append(contentsOf: buffer[0..<count])
        }
        let separator: [UInt8] = Array("\r\n\r\n".utf8)
        guard let end = response.indices.first(where: { response[$0...].starts(with: separator) }) else { return nil }
        let statusLine = String(decoding: response[..<end], as: UTF8.self).split(separator: "\r\n").first ?? ""
        let parts = statusLine.split(separator: " ")
        guard parts.count >= 2, let status = Int(parts[1]) else { return nil }
        return Response(status: status, body: Array(response[(end + 4)...]))
    }

    /// Waits (`eventually`, at most `timeout`) until `GET path` on `port` answers 200; false after `timeout` or once
    /// `isRunning` (the server's process) is false.
    public static func waitUntilOK(
        port: Int, path: String, timeout: Duration = .seconds(30), while isRunning: () -> Bool = { true }
    ) async -> Bool {
        var ok = false
        await eventually(timeout: timeout) {
            ok = request(port: port, path: path, headers: ["Connection": "close"])?.status == 200
            return ok || !isRunning()
        }
        return ok
    }
}

/// VictoriaMetrics single node (Debian `victoria-metrics`) in a temporary directory on a free loopback port.
public final class TestVictoriaMetrics: @unchecked Sendable {
    public static let binary = "/usr/bin/victoria-metrics"
    public static var isAvailable: Bool { FileManager.default.isExecutableFile(atPath: binary) }
    public static let missingMessage = "\(binary) is not installed (Debian package victoria-metrics); skipping"

    public let port: Int
    public let directory: String
    private var process: ChildProcess?

    /// Starts VictoriaMetrics with `-dedup.minScrapeInterval=1ms` (identical samples collapse, as docs/deploy.md
    /// tells users) on `port` (a free one when nil) and waits until it answers `/health`.
    public init(directory: String, port: Int? = nil, start: Bool = true) async throws {
        self.directory = directory
        self.port = try port ?? FreePort.pick()
        if start { try await self.start() }
    }

    public var url: String { "http://127.0.0.1:\(port)" }

    public func start() async throws {
        precondition(process == nil, "already running")
        try FileManager.default.createDirectory(atPath: directory, withIntermediateDirectories: true)
        let port = port
        process = try await ChildProcess.startServer(
            "VictoriaMetrics on port \(port)",
            [
                Self.binary, "-storageDataPath", directory + "/data", "-httpListenAddr", "127.0.0.1:\(port)",
                "-dedup.minScrapeInterval=1ms", "-retentionPeriod=100y", "-search.latencyOffset=0s",
                "-search.disableCache", "-loggerLevel=ERROR",
            ], outputPath: directory + "/victoria-metrics.log", timeout: .seconds(60), grace: 20
        ) { LoopbackHTTP10.request(port: port, path: "/health")?.status == 200 }
    }

    /// SIGTERM (VictoriaMetrics flushes what it buffered), then waits for the exit. Released without `stop()`, the
    /// process is killed (SIGKILL, by ``ChildProcess``).
    public func stop() async {
        await process?.terminate(grace: 20)
        process = nil
    }

    /// Every sample of the series matching `selector`, via `/api/v1/export` (JSON lines).
    public func export(_ selector: String = #"{__name__=~".+"}"#) throws -> [[String: Any]] {
        let query = "match[]=" + selector.addingPercentEncoding(withAllowedCharacters: .alphanumerics)!
        guard let response = LoopbackHTTP10.request(
            port: port, method: "POST", path: "/api/v1/export", body: Array(query.utf8),
            headers: ["Content-Type": "application/x-www-form-urlencoded"]), response.status == 200
        else { throw ChildProcess.Failure(description: "export from VictoriaMetrics failed") }
        return try response.body.split(separator: UInt8(ascii: "\n")).map {
            try JSONSerialization.jsonObject(with: Data($0)) as! [String: Any]
        }
    }
}

/// ClickHouse (Debian `clickhouse-server`) in a temporary directory: a minimal config.xml and users.xml with the
/// HTTP interface on a free loopback port, user `default` with `password`.
public final class TestClickHouse: @unchecked Sendable {
    public static let binary = "/usr/sbin/clickhouse-server"
    public static var isAvailable: Bool { FileManager.default.isExecutableFile(atPath: binary) }
    public static let missingMessage = "\(binary) is not installed (Debian package clickhouse-server); skipping"
    public static let password = "uplink-test"

    public let port: Int
    public let directory: String
    private var process: ChildProcess?

    public init(directory: String, port: Int? = nil, start: Bool = true) async throws {
        self.directory = directory
        self.port = try port ?? FreePort.pick()
        if start { try await self.start() }
    }

    public var url: String { "http://127.0.0.1:\(port)" }

    public func start() async throws {
        precondition(process == nil, "already running")
        try FileManager.default.createDirectory(atPath: directory + "/data/tmp", withIntermediateDirectories: true)
        let tcpPort = try FreePort.pick()
        let config = """
            <?xml version="1.0"?>
            <yandex>
                <logger><level>warning</level><console>1</console></logger>
                <http_port>\(port)</http_port>
                <tcp_port>\(tcpPort)</tcp_port>
                <listen_host>127.0.0.1</listen_host>
                <path>\(directory)/data/</path>
                <tmp_path>\(directory)/data/tmp/</tmp_path>
                <user_files_path>\(directory)/data/user_files/</user_files_path>
                <format_schema_path>\(directory)/data/format_schemas/</format_schema_path>
                <users_config>\(directory)/users.xml</users_config>
                <default_profile>default</default_profile>
                <default_database>default</default_database>
                <mark_cache_size>5368709</mark_cache_size>
            </yandex>
            """
        let users = """
            <?xml version="1.0"?>
            <yandex>
                <profiles><default></default></profiles>
                <users><default>
                    <password>\(Self.password)</password>
                    <networks><ip>127.0.0.1</ip><ip>::1</ip></networks>
                    <profile>default</profile><quota>default</quota>
                </default></users>
                <quotas><default></default></quotas>
            </yandex>
            """
        try config.write(toFile: directory + "/config.xml", atomically: true, encoding: .utf8)
        try users.write(toFile: directory + "/users.xml", atomically: true, encoding: .utf8)
        process = try await ChildProcess.startServer(
            "ClickHouse on port \(port)", [Self.binary, "--config-file=\(directory)/config.xml"],
            outputPath: directory + "/clickhouse.log", timeout: .seconds(90), grace: 30
        ) { (try? query("SELECT 1")) == "1\n" }
    }

    /// SIGTERM, then waits for the exit. Released without `stop()`, the process is killed (SIGKILL, by
    /// ``ChildProcess``).
    public func stop() async {
        await process?.terminate(grace: 30)
        process = nil
    }

    /// Runs `sql` and returns the answer's text; throws on a non-200 answer.
    @discardableResult
    public func query(_ sql: String) throws -> String {
        let credentials = Data("default:\(Self.password)".utf8).base64EncodedString()
        guard let response = LoopbackHTTP10.request(
            port: port, method: "POST", path: "/", body: Array(sql.utf8), headers: ["Authorization": "Basic \(credentials)"])
        else { throw ChildProcess.Failure(description: "ClickHouse on port \(port) does not answer") }
        guard response.status == 200 else {
            throw ChildProcess.Failure(description: "ClickHouse answered \(response.status): \(response.text)")
        }
        return response.text
    }
}
