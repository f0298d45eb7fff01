import Foundation

/// Prometheus (Debian `prometheus`, 2.42) in a temporary directory on a free loopback port, scraping the given
/// loopback targets every second.
public final class TestPrometheus: @unchecked Sendable {
    public static let binary = "/usr/bin/prometheus"
    public static var isAvailable: Bool { FileManager.default.isExecutableFile(atPath: binary) }
    public static let missingMessage = "\(binary) is not installed (Debian package prometheus); skipping"

    public let port: Int
    public let directory: String
    private var process: ChildProcess?

    /// One scrape job per entry: job name → `host:port`.
    public init(directory: String, targets: [String: String]) async throws {
        self.directory = directory
        self.port = try TestNginx.freeLoopbackPort()
        try FileManager.default.createDirectory(atPath: directory, withIntermediateDirectories: true)
        var configuration = "global:\n  scrape_interval: 1s\n  scrape_timeout: 900ms\nscrape_configs:\n"
        for (job, target) in targets.sorted(by: { $0.key < $1.key }) {
            configuration += "  - job_name: \(job)\n    static_configs:\n      - targets: ['\(target)']\n"
        }
        try configuration.write(toFile: directory + "/prometheus.yml", atomically: true, encoding: .utf8)
        let process = try ChildProcess(
            [
                Self.binary, "--config.file=\(directory)/prometheus.yml", "--storage.tsdb.path=\(directory)/data",
                "--web.listen-address=127.0.0.1:\(port)", "--log.level=warn",
            ], outputPath: directory + "/prometheus.log")
        self.process = process
        let deadline = Date().addingTimeInterval(60)
        while Date() < deadline {
            if LoopbackHTTP10.request(port: port, path: "/-/ready")?.status == 200 { return }
            guard process.isRunning else { break }
            try await Task.sleep(for: .milliseconds(100))
        }
        await stop()
        throw ChildProcess.Failure(description: "Prometheus did not start on port \(port): \(log.suffix(2000))")
    }

    public var log: String { (try? String(contentsOfFile: directory + "/prometheus.log", encoding: .utf8)) ?? "" }

    public func stop() async {
        await process?.terminate(grace: 10)
        process = nil
    }

    /// The instant vector of `query` through `/api/v1/query`: each sample's labels and value.
    public func query(_ query: String) -> [(labels: [String: String], value: Double)] {
        var allowed = CharacterSet.alphanumerics
        allowed.insert(charactersIn: "-._~")
        let encoded = query.addingPercentEncoding(withAllowedCharacters: allowed) ?? query
        guard let response = LoopbackHTTP10.request(port: port, path: "/api/v1/query?query=\(encoded)"),
            response.status == 200,
            let json = try? JSONSerialization.jsonObject(with: Data(response.body)) as? [String: Any],
            let data = json["data"] as? [String: Any], let result = data["result"] as? [[String: Any]]
        else { return [] }
        return result.compactMap { sample in
            guard let labels = sample["metric"] as? [String: String], let value = sample["value"] as? [Any],
                value.count == 2, let text = value[1] as? String, let number = Double(text)
            else { return nil }
            return (labels, number)
        }
    }

    /// The value of `query` when it has exactly one sample.
    public func value(_ query: String) -> Double? {
        let samples = self.query(query)
        return samples.count == 1 ? samples[0].value : nil
    }
}
