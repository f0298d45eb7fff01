import Testing
import UplinkTestSupport

@testable import UplinkTransport

/// The bound on what a stream carries unacknowledged.
@Suite("InFlightWindow")
struct InFlightWindowTests {
    @Test func theLimitIsSixteenStreamBuffersAndAtLeastOneMebibyte() {
        #expect(InFlightWindow(streamBufferBytes: 64 << 10).limit == 1 << 20)
        #expect(InFlightWindow(streamBufferBytes: 1 << 20).limit == 16 << 20)
        #expect(InFlightWindow(streamBufferBytes: 1024).limit == 1 << 20)
    }

    @Test func fillsAreReleasedByTheAcknowledgementOfTheirLastSequence() {
        var window = InFlightWindow(streamBufferBytes: 64 << 10)
        window.took(400_000, through: 10)
        window.took(400_000, through: 20)
        window.took(248_576, through: 30)
        #expect(window.bytes == 1 << 20)
        #expect(window.room == 0)
        window.acknowledged(through: 15)  // inside the second fill: only the first is released
        #expect(window.bytes == 648_576)
        window.acknowledged(through: 9)  // an older ack changes nothing
        #expect(window.bytes == 648_576)
        window.acknowledged(through: 30)
        #expect(window.bytes == 0 && window.room == 1 << 20)
        window.took(100, through: 31)
        window.reset()
        #expect(window.bytes == 0)
        window.acknowledged(through: 31)  // an ack for the old stream after a reset
        #expect(window.bytes == 0)
    }

    @Test(.computeBound) func manyFillsStayCompact() {
        var window = InFlightWindow(streamBufferBytes: 64 << 10)
        for sequence in 1...100_000 as ClosedRange<UInt64> {
            window.took(10, through: sequence)
            if sequence % 7 == 0 { window.acknowledged(through: sequence - 3) }
        }
        window.acknowledged(through: 100_000)
        #expect(window.bytes == 0)
    }
}
