import Testing
import UplinkCore

@testable import UplinkSources

@Suite("registry and configs")
struct RegistryTests {
    @Test("every kind has its type name and a default config of its own kind")
    func kinds() {
        #expect(SourceKind.allCases.map(\.typeName) == [
            "cpu", "memory", "generator", "load", "uptime", "network", "diskio", "disk", "thermal", "hwmon", "power",
            "sysfs", "exec", "tail", "journald",
        ])
        for kind in SourceKind.allCases {
            #expect(SourceKind(typeName: kind.typeName) == kind)
            #expect(kind.defaultConfig.kind == kind)
        }
        #expect(SourceKind(typeName: "disks") == nil)
    }

    @Test("makeSource builds the right type with the name and config")
    func factory() {
        let cpu = makeSource(name: "c", config: SourceConfig(CPUConfig(perCore: false)))
        #expect((cpu as? CPUSource)?.config.perCore == false)
        #expect(cpu.name == "c")
        let memory = makeSource(name: "m", config: SourceConfig(MemoryConfig(procRoot: "/host/proc")))
        #expect((memory as? MemorySource)?.config.meminfoPath == "/host/proc/meminfo")
        let generator = makeSource(name: "g", config: SourceConfig(GeneratorConfig(rate: 5, recordBytes: 10, count: 3)))
        #expect((generator as? GeneratorSource)?.config == GeneratorConfig(rate: 5, recordBytes: 10, count: 3))
        #expect(makeSource(name: "l", config: SourceConfig(LoadConfig())) is LoadSource)
        #expect(makeSource(name: "u", config: SourceConfig(UptimeConfig())) is UptimeSource)
        #expect((makeSource(name: "n", config: SourceConfig(NetworkConfig(include: ["eth*"]))) as? NetworkSource)?.config.include == ["eth*"])
        #expect(makeSource(name: "d", config: SourceConfig(DiskIOConfig())) is DiskIOSource)
        #expect(makeSource(name: "d", config: SourceConfig(DiskConfig())) is DiskSource)
        #expect(makeSource(name: "t", config: SourceConfig(ThermalConfig())) is ThermalSource)
        #expect(makeSource(name: "h", config: SourceConfig(HwmonConfig())) is HwmonSource)
        #expect(makeSource(name: "p", config: SourceConfig(PowerConfig())) is PowerSource)
        #expect((makeSource(name: "s", config: SourceConfig(SysfsConfig(path: "/x"))) as? SysfsSource)?.config.path == "/x")
        #expect(makeSource(name: "e", config: SourceConfig(ExecConfig(command: ["true"]))).name == "e")
    }

    @Test("documented defaults of the sensor kinds")
    func sensorDefaults() {
        #expect(LoadConfig() == LoadConfig(interval: .seconds(10), jitter: .zero, tags: [], procRoot: "/proc"))
        #expect(LoadConfig().loadavgPath == "/proc/loadavg")
        #expect(UptimeConfig().uptimePath == "/proc/uptime")
        #expect(NetworkConfig().netDevPath == "/proc/net/dev")
        #expect(NetworkConfig().include == [])
        #expect(NetworkConfig().exclude == ["lo"])
        #expect(DiskIOConfig().diskstatsPath == "/proc/diskstats")
        #expect(DiskIOConfig().devices == [])
        #expect(DiskConfig().mountPoints == ["/"])
        #expect(ThermalConfig().thermalPath == "/sys/class/thermal")
        #expect(HwmonConfig(sysRoot: "/host/sys/").hwmonPath == "/host/sys/class/hwmon")
        #expect(PowerConfig().powerSupplyPath == "/sys/class/power_supply")
        let sysfs = SysfsConfig()
        #expect(sysfs.scale == 1 && sysfs.offset == 0 && sysfs.metric == "sysfs.value" && sysfs.unit == "")
        let exec = ExecConfig()
        #expect(exec.timeout == .seconds(5) && exec.format == .number && exec.metric == "exec.value" && exec.prefix == "exec")
        #expect(ExecConfig(interval: .seconds(2)).effectiveTimeout == .seconds(2))
        for kind in SourceKind.allCases where kind != GeneratorConfig.kind && kind != CPUConfig.kind && kind != MemoryConfig.kind {
            #expect(kind.defaultConfig.kind == kind)
        }
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
