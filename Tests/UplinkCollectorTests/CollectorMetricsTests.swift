import AsyncHTTPClient
import Foundation
import NIOCore
import Testing
import UplinkCore
import UplinkObservability
import UplinkTestSupport
import UplinkWire

@testable import UplinkCollector

@Suite("Collector /metrics and /readyz", .serialized, .timeLimit(.minutes(2)))
struct CollectorMetricsTests {
    private func get(_ client: HTTPClient, port: Int, _ path: String, authorization: String? = nil) async throws
        -> (status: UInt, body: String)
    {
        var request = HTTPClientRequest(url: "http://127.0.0.1:\(port)\(path)")
        if let authorization { request.headers.add(name: "Authorization", value: authorization) }
        let response = try await client.execute(request, timeout: peerRequestTimeout)
        let body = try await response.body.collect(upTo: 4 << 20)
        return (response.status.code, String(buffer: body))
    }

    @Test("per-agent series follow a stream; readiness turns 503 at max_streams")
    func perAgentSeriesAndReadiness() async throws {
        try await withTemporaryDirectory { directory in
            var configuration = testConfiguration(directory)
            configuration.maxStreams = 1
            try await withCollector(configuration) { _, port in
                try await withClient { client in
                    #expect(try await get(client, port: port, "/readyz").status == 200)
                    let connection = try await AgentConnection.open(client, port: port, agent: "box-9", epoch: 3)
                    #expect(try await connection.nextAck() == .resume(0))
                    connection.send(body(1...3))
                    var acked: AckLine? = nil
                    for _ in 0..<4 where acked != .ack(3) { acked = try await connection.nextAck() }
                    #expect(acked == .ack(3))

                    let metrics = try await get(client, port: port, "/metrics")
                    #expect(metrics.status == 200)
                    #expect(metrics.body.contains(#"uplink_collector_agent_records_stored_total{agent="box-9"} 3"#))
                    // The collector-wide counts come from the same snapshot as `/v1/status`.
                    #expect(metrics.body.contains("uplink_collector_records_stored_total 3"))
                    #expect(metrics.body.contains("uplink_collector_streams_total 1"))
                    #expect(metrics.body.contains("uplink_collector_active_streams 1"))
                    #expect(metrics.body.contains(#"uplink_collector_agent_connected{agent="box-9"} 1"#))
                    #expect(metrics.body.contains("uplink_collector_agents_connected 1"))
                    #expect(metrics.body.contains("uplink_collector_max_streams 1"))
                    // Every line is a comment or `name{labels} value`: what a Prometheus parser needs at least.
                    for line in metrics.body.split(separator: "\n") where !line.hasPrefix("#") {
                        #expect(line.split(separator: " ").count == 2, "\(line)")
                    }

                    let full = try await get(client, port: port, "/readyz")
                    #expect(full.status == 503)
                    #expect(full.body.contains("max_streams"))
                    connection.finishUpload()
                    _ = try await connection.readText()
                    #expect(try await eventually { try await get(client, port: port, "/readyz").status == 200 })
                }
            }
        }
    }

    @Test("with a token, /metrics wants it and /readyz stays open")
    func metricsBehindTheToken() async throws {
        try await withTemporaryDirectory { directory in
            try await withCollector(testConfiguration(directory, token: "scrape-me")) { _, port in
                try await withClient { client in
                    let refused = try await get(client, port: port, "/metrics")
                    let scraped = try await get(client, port: port, "/metrics", authorization: "Bearer scrape-me")
                    let ready = try await get(client, port: port, "/readyz")
                    #expect(refused.status == 401)
                    #expect(scraped.status == 200)
                    #expect(ready.status == 200)
                }
            }
        }
    }

    @Test("a ScrapedCounter adds what a count grew by and takes a drop as a reset; one per series")
    func scrapedCounter() {
        let exposition = MetricsExposition()
        let counter = exposition.counter("uplink_collector_agents_evicted_total")
        counter.update(to: 5)
        counter.update(to: 7)
        #expect(String(decoding: exposition.render(), as: UTF8.self).contains("uplink_collector_agents_evicted_total 7"))
        counter.update(to: 2)
        #expect(String(decoding: exposition.render(), as: UTF8.self).contains("uplink_collector_agents_evicted_total 9"))
        // A hook registered again (an endpoint restarted) gets the same counter: the count is not added twice.
        exposition.counter("uplink_collector_agents_evicted_total").update(to: 3)
        #expect(String(decoding: exposition.render(), as: UTF8.self).contains("uplink_collector_agents_evicted_total 10"))
        let labelled = exposition.counter("uplink_collector_sink_retries_total", labels: [("sink", "a")])
        #expect(labelled !== exposition.counter("uplink_collector_sink_retries_total", labels: [("sink", "b")]))
        #expect(labelled === exposition.counter("uplink_collector_sink_retries_total", labels: [("sink", "a")]))
    }
}
