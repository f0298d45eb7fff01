import UplinkCollector

#if canImport(Glibc)
import Glibc
#endif

/// One benchmark's report.
struct BenchmarkResult {
    let name: String
    let lines: [String]

    func print() {
        Swift.print("== \(name)")
        for line in lines { Swift.print("   \(line)") }
        // Each result as soon as it is known, also when stdout is a file or a pipe (fully buffered otherwise).
        fflush(nil)
    }
}

/// CPU time and peak memory of this process (getrusage).
struct ResourceUsage {
    let cpuSeconds: Double
    let maxResidentBytes: Int

    static func now() -> ResourceUsage {
        var usage = rusage()
        getrusage(RUSAGE_SELF.rawValue, &usage)
        let cpu = Double(usage.ru_utime.tv_sec) + Double(usage.ru_utime.tv_usec) / 1e6
            + Double(usage.ru_stime.tv_sec) + Double(usage.ru_stime.tv_usec) / 1e6
        return ResourceUsage(cpuSeconds: cpu, maxResidentBytes: Int(usage.ru_maxrss) * 1024)
    }
}

/// Current resident set size, from /proc/self/statm.
func residentBytes() -> Int {
    guard let file = fopen("/proc/self/statm", "r") else { return 0 }
    defer { fclose(file) }
    var buffer = [CChar](repeating: 0, count: 128)
    guard fgets(&buffer, Int32(buffer.count), file) != nil else { return 0 }
    let text = String(decoding: buffer.prefix { $0 != 0 }.map { UInt8(bitPattern: $0) }, as: UTF8.self)
    let fields = text.split(separator: " ")
    guard fields.count >= 2, let pages = Int(fields[1]) else { return 0 }
    return pages * Int(sysconf(Int32(_SC_PAGESIZE)))
}

/// Two decimals.
func format(_ value: Double) -> String {
    let scaled = (value * 100).rounded() / 100
    return "\(scaled)"
}

/// The p-th percentile (0...100) of sorted values.
func percentile(_ sorted: [Double], _ p: Double) -> Double {
    guard !sorted.isEmpty else { return .nan }
    let index = min(sorted.count - 1, max(0, Int((p / 100 * Double(sorted.count)).rounded(.up)) - 1))
    return sorted[index]
}

/// A new directory under /tmp for one benchmark run.
func temporaryDirectory(prefix: String = "uplink-bench") throws -> String {
    var template = Array("/tmp/\(prefix)-XXXXXX".utf8CString)
    guard let directory = mkdtemp(&template) else { throw CollectorError(code: "bench", message: "mkdtemp failed") }
    return String(cString: directory)
}

/// `write_bytes` of `/proc/self/io`: bytes this process caused to be written to storage (0 on tmpfs).
func storageWriteBytes() -> Int {
    let fd = open("/proc/self/io", O_RDONLY)
    guard fd >= 0 else { return 0 }
    defer { close(fd) }
    var buffer = [UInt8](repeating: 0, count: 1024)
    let count = read(fd, &buffer, buffer.count)
    guard count > 0 else { return 0 }
    let text = String(decoding: buffer[0..<count], as: UTF8.self)
    for line in text.split(separator: "\n") where line.hasPrefix("write_bytes:") {
        return Int(line.split(separator: " ").last ?? "") ?? 0
    }
    return 0
}
