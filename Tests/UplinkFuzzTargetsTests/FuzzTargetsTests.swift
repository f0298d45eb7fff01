import Testing
import UplinkFuzzTargets
import UplinkTestSupport

/// A short bounded run of every fuzz target (the long runs are `fuzz/run.sh`): the seeds, then seeded mutations.
/// A violated property stops the test process, naming it.
@Suite struct FuzzTargetsTests {
    static let inputsPerTarget = 3_000

    @Test(.computeBound, arguments: FuzzTarget.allCases)
    func boundedRun(target: FuzzTarget) {
        var driver = FuzzDriver(target: target, seed: 20_261_123)
        #expect(driver.run(count: Self.inputsPerTarget, maximumLength: 2048) == Self.inputsPerTarget)
    }

    @Test(arguments: FuzzTarget.allCases)
    func seedsAndTokensExist(target: FuzzTarget) {
        #expect(!target.seeds.isEmpty)
        #expect(!target.tokens.isEmpty)
    }

    /// The mutator changes inputs (a driver that only replays its seeds would test nothing new).
    @Test func mutationsDiffer() {
        var driver = FuzzDriver(target: .wireLine, seed: 7)
        let seeds = Set(FuzzTarget.wireLine.seeds)
        let mutants = (0..<100).map { _ in driver.mutate(maximumLength: 4096) }
        #expect(mutants.filter { !seeds.contains($0) }.count > 50)
    }
}
