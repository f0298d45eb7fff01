import AsyncHTTPClient
import Logging
import NIOCore
import NIOSSL
import UplinkCollector
import UplinkCore
import UplinkTransport

#if canImport(Glibc)
import Glibc
#endif

/// What TLS costs: stream throughput over TLS against plaintext, and the CPU of a TLS handshake.
///
/// A private CA and a server certificate for 127.0.0.1 are made with the `openssl` command in a temporary directory
/// (the benchmark needs it on PATH). Agent and collector share this process, so CPU covers both sides.
enum TLSBenchmark {
    /// The CA and server certificate files.
    struct Files {
        let directory: String
        var caFile: String { directory + "/ca.pem" }
        var certificateFile: String { directory + "/server.pem" }
        var keyFile: String { directory + "/server.key" }

        static func make() throws -> Files {
            let files = Files(directory: try temporaryDirectory(prefix: "uplink-bench-tls"))
            let d = files.directory
            let commands = [
                "openssl req -x509 -newkey ec -pkeyopt ec_paramgen_curve:P-256 -nodes -keyout \(d)/ca.key -out \(d)/ca.pem"
                    + " -subj /CN=uplink-bench-ca -days 2 -addext basicConstraints=critical,CA:TRUE",
                "openssl req -newkey ec -pkeyopt ec_paramgen_curve:P-256 -nodes -keyout \(d)/server.key -out \(d)/server.csr"
                    + " -subj /CN=127.0.0.1",
                "printf 'subjectAltName=IP:127.0.0.1,DNS:localhost\\nextendedKeyUsage=serverAuth\\n' > \(d)/server.ext",
                "openssl x509 -req -in \(d)/server.csr -CA \(d)/ca.pem -CAkey \(d)/ca.key -CAcreateserial"
                    + " -out \(d)/server.pem -days 2 -extfile \(d)/server.ext",
            ]
            // Braces: the quieting redirect applies to the whole command, not after the printf's own `> file`
            // (a second stdout redirect would win and leave server.ext empty: a certificate without names).
            for command in commands where system("{ " + command + "; } >/dev/null 2>&1") != 0 {
                throw CollectorError(code: "bench", message: "failed (is openssl installed?): \(command)")
            }
            return files
        }

        func remove() {
            for name in ["ca.key", "ca.pem", "ca.srl", "server.key", "server.csr", "server.ext", "server.pem"] {
                unlink(directory + "/" + name)
            }
            rmdir(directory)
        }
    }

    /// CPU per new connection: `connections` requests to `/healthz`, each on a connection of its own, over TLS and
    /// over plaintext; the difference is what the TLS handshake costs (client and server together).
    static func handshakes(connections: Int, files: Files, logger: Logger) async throws -> BenchmarkResult {
        var lines: [String] = []
        var perConnection: [Bool: Double] = [:]
        for tls in [false, true] {
            let configuration = CollectorConfiguration(
                port: 0, dataDirectory: files.directory, stdoutSink: false, jsonlSink: false,
                tls: tls ? CollectorTLS(certificateFile: files.certificateFile, keyFile: files.keyFile) : nil)
            let background = try await BackgroundCollector.start(configuration: configuration, logger: logger)
            var clientConfiguration = HTTPClient.Configuration()
            var tlsConfiguration = TLSConfiguration.makeClientConfiguration()
            tlsConfiguration.trustRoots = .file(files.caFile)
            clientConfiguration.tlsConfiguration = tlsConfiguration
            clientConfiguration.connectionPool.concurrentHTTP1ConnectionsPerHostSoftLimit = 1
            clientConfiguration.httpVersion = .http1Only
            let client = HTTPClient(eventLoopGroupProvider: .singleton, configuration: clientConfiguration)
            let url = "\(tls ? "https" : "http")://127.0.0.1:\(background.port)/healthz"
            let usage = ResourceUsage.now()
            let started = ContinuousClock.now
            for _ in 0..<connections {
                var request = HTTPClientRequest(url: url)
                request.headers.add(name: "Connection", value: "close")
                let response = try await client.execute(request, timeout: .seconds(10))
                _ = try await response.body.collect(upTo: 1024)
            }
            let elapsed = ContinuousClock.now - started
            let cpu = ResourceUsage.now().cpuSeconds - usage.cpuSeconds
            try await client.shutdown()
            try await background.stop()
            perConnection[tls] = cpu / Double(connections)
            lines.append(
                "\(tls ? "TLS 1.3, P-256" : "plaintext"): \(connections) connections in \(format(elapsed.seconds)) s, "
                    + "\(format(cpu / Double(connections) * 1e6)) µs CPU per connection (client + server)")
        }
        if let plain = perConnection[false], let tls = perConnection[true] {
            lines.append("TLS handshake: \(format((tls - plain) * 1e6)) µs CPU per connection, client and server together")
        }
        return BenchmarkResult(name: "new connections: TLS handshake cost", lines: lines)
    }
}
