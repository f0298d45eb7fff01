import Synchronization
import Testing
import UplinkFiles

@Suite("Blocking file work")
struct BlockingFileWorkTests {
    private struct Refused: Error, Equatable {}

    @Test("the body's value comes back, and its own error is thrown as it is, typed")
    func valueAndError() async {
        let value = await BlockingFileWork.run { 6 * 7 }
        #expect(value == 42)
        do throws(Refused) {
            _ = try await BlockingFileWork.run { () throws(Refused) -> Int in throw Refused() }
            Issue.record("the body's error was not thrown")
        } catch {
            #expect(error == Refused())
        }
    }

    @Test("work of a task cancelled before it began still runs, once (the pool refuses it; the caller does it)")
    func cancelledTaskStillRuns() async {
        let runs = Atomic(0)
        let task = Task {
            withUnsafeCurrentTask { $0?.cancel() }
            #expect(Task.isCancelled)
            return await BlockingFileWork.run {
                runs.add(1, ordering: .relaxed)
                return "written"
            }
        }
        #expect(await task.value == "written")
        #expect(runs.load(ordering: .relaxed) == 1)
    }
}
