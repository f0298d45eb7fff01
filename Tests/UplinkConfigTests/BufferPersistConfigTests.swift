import Testing
import UplinkAgent
import UplinkConfig
import UplinkCore

/// `buffer.persist`: absent by default, `persist:` alone takes the defaults, every key decoded and carried into the
/// agent's settings, problems reported at file:line:col with the key path.
@Suite("buffer.persist")
struct BufferPersistConfigTests {
    @Test func absentByDefault() throws {
        let file = try decode("""
            uplink: { url: "http://collector.example:4318" }
            sources: [{ name: cpu, type: cpu }]
            """).get()
        #expect(file.buffer.persist == nil)
        #expect(file.agentConfiguration(embedded: nil).persistence == nil)
    }

    @Test func emptyMappingTakesTheDefaultsUnderTheStateDirectory() throws {
        let file = try decode("""
            agent: { state_dir: /srv/uplink/ }
            buffer:
              persist:
            uplink: { url: "http://collector.example:4318" }
            sources: [{ name: cpu, type: cpu }]
            """).get()
        #expect(file.buffer.persist == UplinkFile.BufferSection.PersistSection())
        let settings = try #require(file.agentConfiguration(embedded: nil).persistence)
        #expect(settings == PersistentBufferSettings(
            directory: "/srv/uplink/buffer", maxBytes: 256 << 20, mode: .spill, syncInterval: .seconds(1),
            spillAfter: .seconds(10), overflow: .dropOldest))
    }

    @Test func everyKeyReachesTheSettings() throws {
        let file = try decode("""
            buffer:
              max_bytes: 8MiB
              overflow: drop_newest
              persist:
                dir: /data/uplink-buffer
                max_bytes: 2GiB
                mode: always
                sync_interval: 250ms
                spill_after: 3s
            uplink: { url: "http://collector.example:4318" }
            sources: [{ name: cpu, type: cpu }]
            """).get()
        let settings = try #require(file.agentConfiguration(embedded: nil).persistence)
        #expect(settings == PersistentBufferSettings(
            directory: "/data/uplink-buffer", maxBytes: 2 << 30, mode: .always, syncInterval: .milliseconds(250),
            spillAfter: .seconds(3), overflow: .dropNewest))
    }

    @Test func problemsNameFileLineColumnAndKey() {
        #expect(issues("""
            buffer:
              max_bytes: 64MiB
              persist:
                max_bytes: 16MiB
            uplink: { url: embedded }
            sources: [{ name: cpu, type: cpu }]
            """) == [
                "test.yaml:4:16: buffer.persist.max_bytes: the disk budget (16MiB) is smaller than the memory buffer, buffer.max_bytes (64MiB) (hint: the disk must be able to hold everything the memory buffer holds; raise buffer.persist.max_bytes)"
            ])
        let problems = issues("""
            buffer:
              persist:
                mode: sometimes
                max_bytes: 512KiB
                sync_interval: 0s
                spill-after: 1s
            uplink: { url: embedded }
            sources: [{ name: cpu, type: cpu }]
            """)
        #expect(problems.count == 4, "\(problems)")
        #expect(problems.first?.hasPrefix("test.yaml:3:11: buffer.persist.mode: invalid value 'sometimes'") == true, "\(problems)")
        #expect(problems.contains { $0.hasPrefix("test.yaml:4:16: buffer.persist.max_bytes: '512KiB' is too small") }, "\(problems)")
        #expect(problems.contains { $0.hasPrefix("test.yaml:5:20: buffer.persist.sync_interval: '0s' is too small") }, "\(problems)")
        #expect(problems.contains { $0.hasPrefix("test.yaml:6:5: buffer.persist.spill-after: unknown key") }, "\(problems)")
    }
}
