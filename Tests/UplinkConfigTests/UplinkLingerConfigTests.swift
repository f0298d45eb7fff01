import Testing
import UplinkAgent
import UplinkConfig
import UplinkTransport

/// `uplink.linger`: off by default, decoded, bounded, reported at its position, and carried into the uplink's and the
/// sources' settings.
@Suite("uplink.linger")
struct UplinkLingerConfigTests {
    @Test func defaultIsZero() throws {
        let file = try decode("""
            uplink: { url: "http://collector.example:4318" }
            sources: [{ name: cpu, type: cpu }]
            """).get()
        #expect(file.uplink.linger == .zero)
        #expect(file.agentConfiguration(embedded: nil).uplink.linger == .zero)
    }

    @Test func setValueReachesTheUplinkSettings() throws {
        let file = try decode("""
            uplink:
              url: http://collector.example:4318
              linger: 250ms
            sources: [{ name: cpu, type: cpu }]
            """).get()
        #expect(file.uplink.linger == .milliseconds(250))
        #expect(file.agentConfiguration(embedded: nil).uplink.linger == .milliseconds(250))
    }

    @Test func outOfRangeAndMistypedValuesNameFileLineColumnAndKey() {
        #expect(issues("""
            uplink:
              url: embedded
              linger: 2m
            sources: [{ name: cpu, type: cpu }]
            """) == ["test.yaml:3:11: uplink.linger: '2m' is out of range: it must be between 0s and 1m"])
        let negative = issues("""
            uplink:
              url: embedded
              linger: -1s
            sources: [{ name: cpu, type: cpu }]
            """)
        #expect(negative.count == 1)
        #expect(negative.first?.hasPrefix("test.yaml:3:11: uplink.linger: ") == true, "\(negative)")
        let mistyped = issues("""
            uplink:
              url: embedded
              linger: later
            sources: [{ name: cpu, type: cpu }]
            """)
        #expect(mistyped.count == 1)
        #expect(mistyped.first?.hasPrefix("test.yaml:3:11: uplink.linger: ") == true, "\(mistyped)")
    }
}
