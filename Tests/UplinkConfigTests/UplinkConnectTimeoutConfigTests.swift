import Testing
import UplinkAgent
import UplinkConfig
import UplinkTransport

/// `uplink.connect_timeout`: decoded, bounded, reported at its position, and carried into the uplink's settings.
@Suite("uplink.connect_timeout")
struct UplinkConnectTimeoutConfigTests {
    @Test func defaultIsFiveSeconds() throws {
        let file = try decode("""
            uplink: { url: "http://collector.example:4318" }
            sources: [{ name: cpu, type: cpu }]
            """).get()
        #expect(file.uplink.connectTimeout == .seconds(5))
        #expect(file.agentConfiguration(embedded: nil).uplink.connectTimeout == .seconds(5))
    }

    @Test func setValueReachesTheUplink() throws {
        let file = try decode("""
            uplink:
              url: http://collector.example:4318
              connect_timeout: 1500ms
            sources: [{ name: cpu, type: cpu }]
            """).get()
        #expect(file.uplink.connectTimeout == .milliseconds(1500))
        let uplink = file.agentConfiguration(embedded: nil).uplink
        #expect(uplink.connectTimeout == .milliseconds(1500))
        #expect(Uplink.clientConfiguration(uplink).timeout.connect == .milliseconds(1500))
    }

    @Test func outOfRangeAndMistypedValuesNameFileLineColumnAndKey() {
        #expect(issues("""
            uplink:
              url: embedded
              connect_timeout: 0s
            sources: [{ name: cpu, type: cpu }]
            """) == ["test.yaml:3:20: uplink.connect_timeout: '0s' is too small: it must be greater than 0s"])
        #expect(issues("""
            uplink:
              url: embedded
              connect_timeout: 10m
            sources: [{ name: cpu, type: cpu }]
            """) == ["test.yaml:3:20: uplink.connect_timeout: '10m' is too large: the maximum is 5m"])
        let mistyped = issues("""
            uplink:
              url: embedded
              connect_timeout: soon
            sources: [{ name: cpu, type: cpu }]
            """)
        #expect(mistyped.count == 1)
        #expect(mistyped.first?.hasPrefix("test.yaml:3:20: uplink.connect_timeout: ") == true, "\(mistyped)")
    }
}
