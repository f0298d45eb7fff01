import Testing
import UplinkCore

@Suite("String trimming")
struct StringTrimmingTests {
    @Test("trimming drops the accepted characters at both ends only; all of them accepted leaves nothing")
    func trimming() {
        #expect(" \t a b\t ".trimmingSpacesAndTabs == "a b")
        #expect("\n x \n".trimmingSpacesAndTabs == "\n x \n", "line breaks are not spaces or tabs")
        #expect("\n x \r\n".trimming(while: \.isWhitespace) == "x")
        #expect(" \t ".trimmingSpacesAndTabs.isEmpty)
        #expect("".trimmingSpacesAndTabs.isEmpty)
        let part = "k= v ,w".split(separator: ",")[0]
        #expect(part.trimmingSpacesAndTabs == "k= v")
    }
}
