// swift-tools-version:6.1
// Module boundaries, and who may import whom: docs/architecture.md, "Modules".

import PackageDescription

let strict: [SwiftSetting] = [
    .enableUpcomingFeature("ExistentialAny"),
]

// deploy/build-release.sh compiles everything for size (-Osize: the binary must stay small). The ring and the wire
// encoder are the send path, so these two modules are optimized for speed anyway: a frontend -O given last wins over
// the driver's -Osize. In a plain release build both are -O already; debug builds are unaffected.
let sendPath: [SwiftSetting] = strict + [
    .unsafeFlags(["-Xfrontend", "-O"], .when(configuration: .release)),
]

let package = Package(
    name: "uplink",
    platforms: [.macOS(.v15)],
    products: [
        .executable(name: "uplink", targets: ["uplink"]),
        .executable(name: "uplink-bench", targets: ["uplink-bench"]),
    ],
    dependencies: [
        .package(url: "https://github.com/apple/swift-nio", from: "2.101.2"),
        .package(url: "https://github.com/apple/swift-log", from: "1.16.2"),
        .package(url: "https://github.com/apple/swift-metrics", from: "2.13.0"),
        .package(url: "https://github.com/apple/swift-collections", from: "1.6.0"),
        .package(url: "https://github.com/apple/swift-system", from: "1.8.1"),
        .package(url: "https://github.com/apple/swift-argument-parser", from: "1.8.2"),
        .package(url: "https://github.com/swift-server/swift-service-lifecycle", from: "2.13.0"),
        .package(url: "https://github.com/swift-server/async-http-client", from: "1.37.0"),
        .package(url: "https://github.com/apple/swift-nio-ssl", from: "2.37.6"),
        .package(url: "https://github.com/apple/swift-nio-http2", from: "1.46.0"),
        .package(url: "https://github.com/apple/swift-nio-extras", from: "1.35.2"),
        .package(url: "https://github.com/hummingbird-project/hummingbird", from: "2.28.1", traits: []),
        .package(url: "https://github.com/swift-server/swift-prometheus", from: "2.4.1"),
    ],
    targets: [
        .systemLibrary(
            name: "CYAML",
            pkgConfig: "yaml-0.1",
            providers: [.apt(["libyaml-dev"])]
        ),
        // zlib: gzip request bodies of the collector's sinks (VictoriaMetrics' import accepts Content-Encoding: gzip),
        // and the stream's `Content-Encoding: gzip` (UplinkWire/Compression).
        .systemLibrary(
            name: "CZlib",
            pkgConfig: "zlib",
            providers: [.apt(["zlib1g-dev"])]
        ),
        // zstd: the agent→collector stream's default Content-Encoding (UplinkWire/Compression).
        .systemLibrary(
            name: "CZstd",
            pkgConfig: "libzstd",
            providers: [.apt(["libzstd-dev"])]
        ),
        // libsodium: SHA-256 and Ed25519 for signed remote configuration documents (UplinkRemoteConfig). Linked as
        // Debian's shared library, like libyaml and libzstd: the binary grows by our calls only (docs/remote-config.md).
        .systemLibrary(
            name: "CSodium",
            pkgConfig: "libsodium",
            providers: [.apt(["libsodium-dev"])]
        ),
        // libsystemd: the journald source reads the systemd journal through sd-journal (UplinkSources/Journald). Built
        // against Debian's libsystemd-dev headers, but loaded with dlopen when a journald source first opens a journal
        // (Sources/CSystemd/systemd.c), so agents without one and collectors do not load it and its dependencies.
        .target(name: "CSystemd"),
        // sync_file_range, which the collector's storage uses to keep the page cache its files occupy bounded, the
        // calling thread's voluntary context switches (getrusage RUSAGE_THREAD), which tell it a store slept,
        // glibc's mallopt for the collector's heap thresholds, and pipe2 and posix_spawn's closefrom for the exec
        // source's commands.
        .target(name: "CLinuxIO"),
        // The JSON string byte scan under the wire format's reader and writer (UplinkWire), 16 bytes at a time with
        // SSE2 where the target has it: Swift's SIMD types do not compile to vector instructions here.
        .target(name: "CJSONBytes"),
        // The one file layer: open, read, write all, fsync, atomic write, read whole, make and list directories, with
        // one error type (`FileError`). Plain system calls; no uplink module, no Foundation; NIOPosix for the thread
        // pool `BlockingFileWork` runs file work on.
        .target(
            name: "UplinkFiles",
            dependencies: [.product(name: "NIOPosix", package: "swift-nio")],
            swiftSettings: strict
        ),
        .target(
            name: "UplinkConfig",
            dependencies: ["UplinkCore", "UplinkFiles", "CYAML"],
            swiftSettings: strict
        ),
        // Signed remote configuration documents: content digests, Ed25519 keys and envelopes, their verification.
        .target(
            name: "UplinkRemoteConfig",
            dependencies: ["UplinkCore", "UplinkFiles", "CSodium"],
            swiftSettings: strict
        ),
        .target(
            name: "UplinkCore",
            dependencies: [
                .product(name: "NIOCore", package: "swift-nio"),
                .product(name: "Logging", package: "swift-log"),
                .product(name: "DequeModule", package: "swift-collections"),
            ],
            swiftSettings: sendPath
        ),
        // The ring's disk side (`buffer.persist`): segment files of checksummed frames and the state file, through the
        // file layer. The ring (Core) reaches it only through Core's `RecordRingDisk`. On the send path in `always`
        // mode, so optimized for speed like Core.
        .target(
            name: "UplinkPersistentBuffer",
            dependencies: [
                "UplinkCore",
                "UplinkFiles",
                .product(name: "Logging", package: "swift-log"),
            ],
            swiftSettings: sendPath
        ),
        // Process tuning at start: the open-file limit, giving back the code pages that starting touched, the
        // collector's malloc thresholds. For the executables (`uplink`, and `uplink-bench`, which cannot import
        // `uplink`'s files); no library imports it.
        .target(
            name: "UplinkProcess",
            dependencies: [
                // `WholeFile`, to read /proc/self/smaps.
                "UplinkFiles",
                // mallopt, for the collector's heap thresholds.
                "CLinuxIO",
                .product(name: "Logging", package: "swift-log"),
            ],
            swiftSettings: strict
        ),
        .target(
            name: "UplinkWire",
            dependencies: [
                "UplinkCore",
                "CJSONBytes",
                "CZstd",
                "CZlib",
                .product(name: "NIOCore", package: "swift-nio"),
            ],
            swiftSettings: sendPath
        ),
        .target(
            name: "UplinkSources",
            dependencies: [
                "UplinkCore",
                "UplinkFiles",
                // Each kind's folder decodes its own keys (`SourceKindConfig.decode`).
                "UplinkConfig",
                "CSystemd",
                // pipe2 and posix_spawn's closefrom, for the exec source's commands.
                "CLinuxIO",
                .product(name: "SystemPackage", package: "swift-system"),
                .product(name: "Logging", package: "swift-log"),
                // Checkpoint writes (`fsync`) run on NIO's blocking-I/O thread pool; the tailer's inotify descriptors are
                // channels on the send path's event loop.
                .product(name: "NIOCore", package: "swift-nio"),
                .product(name: "NIOPosix", package: "swift-nio"),
            ],
            swiftSettings: strict
        ),
        .target(
            name: "UplinkTransport",
            dependencies: [
                "UplinkCore",
                "UplinkFiles",
                "UplinkWire",
                "UplinkRemoteConfig",
                .product(name: "AsyncHTTPClient", package: "async-http-client"),
                .product(name: "NIOCore", package: "swift-nio"),
                .product(name: "NIOPosix", package: "swift-nio"),
                .product(name: "NIOHTTP1", package: "swift-nio"),
                .product(name: "NIOSSL", package: "swift-nio-ssl"),
                .product(name: "NIOTLS", package: "swift-nio"),
                .product(name: "NIOHTTP2", package: "swift-nio-http2"),
                .product(name: "NIOExtras", package: "swift-nio-extras"),
                .product(name: "ServiceLifecycle", package: "swift-service-lifecycle"),
                .product(name: "Logging", package: "swift-log"),
                .product(name: "Metrics", package: "swift-metrics"),
            ],
            swiftSettings: strict
        ),
        // The Prometheus exposition both ends serve (`/metrics`): swift-metrics' backend and values read at scrape time.
        .target(
            name: "UplinkObservability",
            dependencies: [
                .product(name: "Prometheus", package: "swift-prometheus"),
                .product(name: "Metrics", package: "swift-metrics"),
            ],
            swiftSettings: strict
        ),
        .target(
            name: "UplinkCollector",
            dependencies: [
                "UplinkCore",
                "UplinkFiles",
                "UplinkConfig",
                "UplinkWire",
                "UplinkObservability",
                "UplinkRemoteConfig",
                "CLinuxIO",
                .product(name: "Hummingbird", package: "hummingbird"),
                .product(name: "HummingbirdHTTP2", package: "hummingbird"),
                .product(name: "AsyncHTTPClient", package: "async-http-client"),
                .product(name: "NIOCore", package: "swift-nio"),
                .product(name: "NIOSSL", package: "swift-nio-ssl"),
                .product(name: "NIOPosix", package: "swift-nio"),
                .product(name: "ServiceLifecycle", package: "swift-service-lifecycle"),
                .product(name: "Logging", package: "swift-log"),
                .product(name: "Metrics", package: "swift-metrics"),
            ],
            swiftSettings: strict
        ),
        .target(
            name: "UplinkAgent",
            dependencies: [
                "UplinkCore",
                "UplinkFiles",
                "UplinkPersistentBuffer",
                "UplinkRemoteConfig",
                "UplinkConfig",
                "UplinkWire",
                "UplinkSources",
                "UplinkTransport",
                "UplinkObservability",
                .product(name: "HummingbirdCore", package: "hummingbird"),
                .product(name: "Metrics", package: "swift-metrics"),
                .product(name: "NIOCore", package: "swift-nio"),
                .product(name: "NIOPosix", package: "swift-nio"),
                .product(name: "NIOSSL", package: "swift-nio-ssl"),
                .product(name: "ServiceLifecycle", package: "swift-service-lifecycle"),
                .product(name: "UnixSignals", package: "swift-service-lifecycle"),
                .product(name: "Logging", package: "swift-log"),
            ],
            swiftSettings: strict
        ),
        .executableTarget(
            name: "uplink",
            dependencies: [
                "UplinkCore",
                "UplinkFiles",
                "UplinkConfig",
                "UplinkRemoteConfig",
                "UplinkSources",
                "UplinkAgent",
                "UplinkTransport",
                "UplinkCollector",
                "UplinkObservability",
                "UplinkProcess",
                .product(name: "ArgumentParser", package: "swift-argument-parser"),
                .product(name: "AsyncHTTPClient", package: "async-http-client"),
                .product(name: "ServiceLifecycle", package: "swift-service-lifecycle"),
                .product(name: "UnixSignals", package: "swift-service-lifecycle"),
                .product(name: "Logging", package: "swift-log"),
            ],
            swiftSettings: strict
        ),
        .executableTarget(
            name: "uplink-bench",
            dependencies: [
                "UplinkCore",
                "UplinkFiles",
                "UplinkPersistentBuffer",
                "UplinkWire",
                "UplinkSources",
                "UplinkTransport",
                "UplinkCollector",
                "UplinkAgent",
                "UplinkProcess",
                .product(name: "ServiceLifecycle", package: "swift-service-lifecycle"),
                .product(name: "Logging", package: "swift-log"),
                .product(name: "NIOCore", package: "swift-nio"),
                .product(name: "NIOPosix", package: "swift-nio"),
                .product(name: "NIOHTTP1", package: "swift-nio"),
                .product(name: "AsyncHTTPClient", package: "async-http-client"),
                .product(name: "NIOSSL", package: "swift-nio-ssl"),
            ],
            swiftSettings: strict
        ),
        // Fuzz targets (README, "Fuzzing"): the library the tests run briefly; uplink-fuzz is a seeded driver in a
        // normal build and a libFuzzer binary when fuzz/run.sh builds it with -sanitize=fuzzer.
        .target(
            name: "UplinkFuzzTargets",
            dependencies: [
                "UplinkCore", "UplinkWire", "UplinkConfig", "UplinkCollector", "UplinkAgent", "UplinkRemoteConfig",
                .product(name: "NIOCore", package: "swift-nio"),
            ],
            swiftSettings: strict
        ),
        .target(name: "CLibFuzzer"),
        .executableTarget(
            name: "uplink-fuzz",
            dependencies: ["UplinkFuzzTargets", "CLibFuzzer"],
            swiftSettings: strict
        ),
        .target(
            name: "UplinkTestSupport",
            dependencies: [
                "UplinkCore",
                "UplinkWire",
                // The in-process collector harness of the collector and end-to-end tests.
                "UplinkCollector",
                // posix_spawn's closefrom, for `ChildProcess`.
                "CLinuxIO",
                .product(name: "NIOCore", package: "swift-nio"),
                .product(name: "NIOPosix", package: "swift-nio"),
                .product(name: "NIOHTTP1", package: "swift-nio"),
                // ConditionLock, for `HeldEventLoops`.
                .product(name: "NIOConcurrencyHelpers", package: "swift-nio"),
                .product(name: "Logging", package: "swift-log"),
            ],
            path: "Tests/UplinkTestSupport",
            swiftSettings: strict
        ),
        .testTarget(
            name: "UplinkConfigTests",
            dependencies: [
                "UplinkConfig", "UplinkCore", "UplinkAgent", "UplinkCollector", "UplinkSources", "UplinkTransport",
                "UplinkRemoteConfig", "UplinkTestSupport", "UplinkObservability", "UplinkFiles",
            ],
            exclude: ["Fixtures"],
            swiftSettings: strict
        ),
        .testTarget(
            name: "UplinkRemoteConfigTests",
            dependencies: ["UplinkRemoteConfig", "UplinkCore", "UplinkFiles", "UplinkTestSupport"],
            swiftSettings: strict),
        // UplinkProcess: a ring test reads the ring's mapping from /proc/self/smaps with its parser.
        // UplinkPersistentBuffer: the ring's tests with its disk side (PersistentBufferTests).
        .testTarget(
            name: "UplinkCoreTests",
            dependencies: ["UplinkCore", "UplinkPersistentBuffer", "UplinkProcess", "UplinkTestSupport"],
            swiftSettings: strict),
        .testTarget(
            name: "UplinkFilesTests", dependencies: ["UplinkFiles", "UplinkTestSupport"], swiftSettings: strict),
        .testTarget(
            name: "UplinkProcessTests", dependencies: ["UplinkProcess", "UplinkTestSupport"], swiftSettings: strict),
        .testTarget(
            name: "UplinkFuzzTargetsTests", dependencies: ["UplinkFuzzTargets", "UplinkTestSupport"], swiftSettings: strict),
        .testTarget(
            name: "UplinkWireTests", dependencies: ["UplinkWire", "UplinkCore", "UplinkTestSupport"], swiftSettings: strict),
        .testTarget(
            name: "UplinkSourcesTests",
            dependencies: [
                "UplinkSources", "UplinkConfig", "UplinkCore", "UplinkTestSupport",
                .product(name: "Logging", package: "swift-log"),
                .product(name: "SystemPackage", package: "swift-system"),
                // A loop for the tailer's inotify channels and its task, as the agent runs it.
                .product(name: "NIOPosix", package: "swift-nio"),
            ],
            exclude: ["Fixtures"], swiftSettings: strict
        ),
        .testTarget(
            name: "UplinkTransportTests",
            dependencies: [
                "UplinkTransport", "UplinkCore", "UplinkWire", "UplinkRemoteConfig", "UplinkTestSupport",
                .product(name: "NIOSSL", package: "swift-nio-ssl"),
                .product(name: "NIOEmbedded", package: "swift-nio"),
                .product(name: "NIOPosix", package: "swift-nio"),
                .product(name: "NIOHTTP1", package: "swift-nio"),
                .product(name: "Logging", package: "swift-log"),
            ],
            swiftSettings: strict
        ),
        .testTarget(
            name: "UplinkCollectorTests",
            dependencies: [
                "UplinkCollector", "UplinkConfig", "UplinkCore", "UplinkWire", "UplinkTestSupport", "UplinkObservability",
                "UplinkRemoteConfig", "CLinuxIO",
                .product(name: "AsyncHTTPClient", package: "async-http-client"),
                .product(name: "NIOPosix", package: "swift-nio"),
                .product(name: "NIOSSL", package: "swift-nio-ssl"),
            ],
            swiftSettings: strict
        ),
        .testTarget(
            name: "UplinkIntegrationTests",
            dependencies: [
                "UplinkAgent", "UplinkCollector", "UplinkConfig", "UplinkTransport", "UplinkSources", "UplinkCore",
                "UplinkWire", "UplinkRemoteConfig", "UplinkTestSupport", "UplinkObservability",
                .product(name: "ServiceLifecycle", package: "swift-service-lifecycle"),
                .product(name: "AsyncHTTPClient", package: "async-http-client"),
                .product(name: "NIOSSL", package: "swift-nio-ssl"),
            ],
            swiftSettings: strict
        ),
    ],
    swiftLanguageModes: [.v6]
)
