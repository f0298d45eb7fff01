import Testing
import UplinkCore

@testable import UplinkSources

@Suite("registry and configs")
struct RegistryTests {
    @Test("every kind has its type name and a default config of its own kind")
    func kinds() {
        #expect(SourceKind.allCases.map(\.typeName) == ["cpu", "memory", "generator"])
        for kind in SourceKind.allCases {
            #expect(SourceKind(typeName: kind.typeName) == kind)
            #expect(kind.defaultConfig.kind == kind)
        }
        #expect(SourceKind(typeName: "disk") == nil)
    }

    @Test("makeSource builds the right type with the name and config")
    func factory() {
        let cpu = makeSource(name: "c", config: .cpu(CPUConfig(perCore: false)))
        #expect((cpu as? CPUSource)?.config.perCore == false)
        #expect(cpu.name == "c")
        let memory = makeSource(name: "m", config: .memory(MemoryConfig(procRoot: "/host/proc")))
        #expect((memory as? MemorySource)?.config.meminfoPath == "/host/proc/meminfo")
        let generator = makeSource(name: "g", config: .generator(GeneratorConfig(rate: 5, recordBytes: 10, count: 3)))
        #expect((generator as? GeneratorSource)?.config == GeneratorConfig(rate: 5, recordBytes: 10, count: 3))
    }

    @Test("documented defaults")
    func defaults() {
        let cpu = CPUConfig()
        #expect(cpu.interval == .seconds(10))
        #expect(cpu.perCore)
        #expect(cpu.procRoot == "/proc")
        #expect(cpu.statPath == "/proc/stat")
        #expect(CPUConfig(procRoot: "/host/proc/").statPath == "/host/proc/stat")
        let memory = MemoryConfig()
        #expect(memory.interval == .seconds(10))
        #expect(memory.meminfoPath == "/proc/meminfo")
        let generator = GeneratorConfig()
        #expect(generator.rate == 1000)
        #expect(generator.recordBytes == 200)
        #expect(generator.count == nil)
        #expect(generator.isPaced)
        #expect(!GeneratorConfig(rate: 0).isPaced)
        #expect(!GeneratorConfig(rate: -1).isPaced)
        #expect(!GeneratorConfig(rate: .infinity).isPaced)
    }
}
