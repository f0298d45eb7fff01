import Testing
import UplinkProcess

@Suite("Open file limit")
struct FileDescriptorLimitTests {
    @Test("the soft limit is raised to the hard one (at most OPEN_MAX on Darwin); a second call changes nothing")
    func raisesToTheHardLimit() {
        let first = FileDescriptorLimit.raiseSoftLimit()
        #expect(first.failure == nil)
        #expect(first.current >= first.previous && first.current <= first.hard)
        let second = FileDescriptorLimit.raiseSoftLimit()
        #expect(second.previous == first.current && second.current == first.current)
        #expect(second.hard == first.hard && second.failure == nil)
    }
}
