import UplinkFuzzTargets

#if canImport(Glibc)
import Glibc
#elseif canImport(Musl)
import Musl
#elseif canImport(Darwin)
import Darwin
#endif

#if UPLINK_LIBFUZZER
import CLibFuzzer
#endif

/// `uplink-fuzz`: runs a fuzz target (README, "Fuzzing").
///
/// - Built by `fuzz/run.sh` (`-sanitize=fuzzer,address -D UPLINK_LIBFUZZER`), it is a libFuzzer binary:
///   `UPLINK_FUZZ_TARGET=<target> uplink-fuzz [libFuzzer flags] [corpus directories]`.
/// - In a normal build it runs seeded mutations: `uplink-fuzz <target> [runs] [seed]`.
/// - Either way, `uplink-fuzz --seeds <target> <directory>` writes the target's seed inputs as files and
///   `uplink-fuzz --dictionary <target> <file>` its tokens as a libFuzzer dictionary.
@main
struct FuzzMain {
    static func main() {
        let arguments = CommandLine.arguments
        if arguments.count == 4, arguments[1] == "--seeds" || arguments[1] == "--dictionary" {
            guard let target = FuzzTarget(rawValue: arguments[2]) else { usage() }
            if arguments[1] == "--seeds" {
                for (index, seed) in target.seeds.enumerated() { writeFile(seed, to: arguments[3] + "/seed-\(index)") }
            } else {
                var text: [UInt8] = []
                for token in target.tokens {
                    text += Array("\"".utf8)
                    for byte in token { text += Array(String(format: byte).utf8) }
                    text += Array("\"\n".utf8)
                }
                writeFile(text, to: arguments[3])
            }
            exit(0)
        }
        #if UPLINK_LIBFUZZER
        guard let name = getenv("UPLINK_FUZZ_TARGET").map({ String(cString: $0) }), let target = FuzzTarget(rawValue: name)
        else { usage() }
        selected = target
        var argc = CommandLine.argc
        var argv: UnsafeMutablePointer<UnsafeMutablePointer<CChar>?>? = CommandLine.unsafeArgv
        exit(LLVMFuzzerRunDriver(&argc, &argv) { data, size in
            FuzzMain.selected.run(UnsafeRawBufferPointer(start: data, count: size))
            return 0
        })
        #else
        guard arguments.count >= 2, arguments.count <= 4, let target = FuzzTarget(rawValue: arguments[1]) else { usage() }
        let runs = arguments.count > 2 ? Int(arguments[2]) ?? 100_000 : 100_000
        let seed = arguments.count > 3 ? UInt64(arguments[3]) ?? 1 : 1
        var driver = FuzzDriver(target: target, seed: seed)
        driver.run(count: runs)
        print("\(target.rawValue): \(runs) inputs (seed \(seed)), no property violated")
        #endif
    }

    #if UPLINK_LIBFUZZER
    /// The target libFuzzer's callback runs (set once, before the driver starts).
    nonisolated(unsafe) static var selected = FuzzTarget.wireLine
    #endif

    static func usage() -> Never {
        let names = FuzzTarget.allCases.map(\.rawValue).joined(separator: ", ")
        let text = "usage: uplink-fuzz <target> [runs] [seed] | --seeds <target> <dir> | --dictionary <target> <file>\ntargets: \(names)\n"
        _ = text.withCString { write(2, $0, strlen($0)) }
        exit(64)
    }

    static func writeFile(_ bytes: [UInt8], to path: String) {
        let descriptor = open(path, O_WRONLY | O_CREAT | O_TRUNC, 0o644)
        guard descriptor >= 0 else {
            perror(path)
            exit(1)
        }
        _ = bytes.withUnsafeBytes { write(descriptor, $0.baseAddress, $0.count) }
        close(descriptor)
    }
}

extension String {
    /// A dictionary byte: printable ASCII as is (except `"` and `\`), anything else as `\xHH`.
    init(format byte: UInt8) {
        if byte >= 0x20 && byte < 0x7F && byte != UInt8(ascii: "\"") && byte != UInt8(ascii: "\\") {
            self = String(UnicodeScalar(byte))
        } else {
            let hex = String(byte, radix: 16, uppercase: true)
            self = "\\x" + (hex.count == 1 ? "0" : "") + hex
        }
    }
}
