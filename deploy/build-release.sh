#!/usr/bin/env bash
# Builds the release binary for edge boxes: one stripped `uplink` with the Swift runtime linked in
# (--static-swift-stdlib), no Foundation/ICU libraries, at most 25 MB.
#
#   deploy/build-release.sh                 # -> .build/dist/uplink-<version>-<arch>
#   UPLINK_DIST_DIR=/tmp/out deploy/build-release.sh
#
# Environment:
#   UPLINK_DIST_DIR      where to put the binary (default: .build/dist, which git ignores)
#   UPLINK_MAX_BYTES     size limit (default: 25 MB = 25000000 bytes)
#   UPLINK_SCRATCH_PATH  SwiftPM build folder (default: .build-dist; the flags below differ from a plain
#                        `swift build -c release`, so sharing .build would rebuild everything each time either runs)
#   UPLINK_LINK_MAP      also write lld's link map to this file (deploy/idle-memory.sh --order-file needs it)
#   SWIFT_BUILD_FLAGS    extra flags for `swift build` (e.g. "--swift-sdk aarch64-swift-linux-musl", see docs/deploy.md)
#   STRIP                the strip program (default: strip; e.g. llvm-strip when cross-building)
#
# Prints the path of the binary as its last line. docs/deploy.md ("Size and memory") explains every flag.
set -euo pipefail
cd "$(dirname "$0")/.."

if ! command -v swift >/dev/null 2>&1 && [ -x /opt/swift/usr/bin/swift ]; then
    export PATH="/opt/swift/usr/bin:$PATH"
fi

dist_dir="${UPLINK_DIST_DIR:-.build/dist}"
max_bytes="${UPLINK_MAX_BYTES:-25000000}"
scratch_path="${UPLINK_SCRATCH_PATH:-.build-dist}"
strip_program="${STRIP:-strip}"
# shellcheck disable=SC2206  # word splitting of the extra flags is intended
extra_flags=(${SWIFT_BUILD_FLAGS:-})

fail() { echo "build-release: error: $*" >&2; exit 1; }

# Compiler flags (changing one recompiles everything in $scratch_path):
# - -Osize: about 1.3 MB smaller than -O. The send path (UplinkCore, UplinkWire) stays -O, see Package.swift;
# - no debug information: the binary is stripped anyway, and with -g every Swift function also gets an .eh_frame
#   unwind entry (0.9 MB in all); without it, only the functions that can unwind have one;
# - one section per function and per datum, so that --gc-sections drops unused ones and the linker can order them;
# - C++ (-Xcxx; here only BoringSSL, NIOSSL's TLS library) as BoringSSL's own build compiles it: no exceptions, no
#   RTTI; no unwind tables (nothing unwinds through it: Swift errors are return values; a backtrace can still walk
#   its frame pointers, which SwiftPM keeps with -fno-omit-frame-pointer) and -Os (its bulk ciphers are assembly; the C++ around them is about 1.4 % of the agent's CPU when it
#   streams over TLS, at -O2 and -Os alike). Together about 450 KB (docs/deploy.md). C code (-Xcc) keeps -O2: it
#   includes the HTTP parser;
# - lld (shipped with the toolchain) for --icf, -z pack-relative-relocs and --symbol-ordering-file;
# - no run-time exclusivity checks (-enforce-exclusivity=unchecked): every access to a class's stored `var` (ours,
#   NIO's channels and event loop) otherwise records itself in a per-thread access set, 15 % of the agent's
#   instructions per line at 100 lines/s. The compile-time checks stay, and debug builds (`swift build`, `swift
#   test`) keep the run-time ones, so the suite still traps on an overlapping access (docs/deploy.md).
build_flags=(
    -c release --product uplink --static-swift-stdlib --scratch-path "$scratch_path"
    -Xswiftc -Osize -debug-info-format none -Xswiftc -enforce-exclusivity=unchecked
    -Xswiftc -Xfrontend -Xswiftc -function-sections
    -Xcc -ffunction-sections -Xcc -fdata-sections -Xcxx -ffunction-sections -Xcxx -fdata-sections
    -Xcxx -fno-exceptions -Xcxx -fno-rtti -Xcxx -fno-asynchronous-unwind-tables -Xcxx -fno-unwind-tables -Xcxx -Os
    -Xswiftc -use-ld=lld
)
# Linker flags (a change only relinks):
# - uplink.exports exports nothing: swiftc links executables with --export-dynamic, which puts every public symbol
#   (33,000+) into .dynsym and keeps it alive through --gc-sections;
# - --icf=all folds functions whose code is identical (generic specializations, thunks);
# - -O2 lets lld merge string constants that end another (8 KB);
# - uplink.order puts the code and constants the idle agent uses next to each other, uplink-text.lds the unnamed code:
#   the kernel maps a 64 KB window around each page the agent touches (fault-around), so scattered hot code made
#   most of the binary resident (see docs/deploy.md; deploy/idle-memory.sh regenerates the order file);
# - uplink-no-unwind.lds and --no-eh-frame-hdr drop the DWARF unwind tables (2.7 MB) that nothing here uses (the
#   script says why);
# - no $ORIGIN rpath (--disable-local-rpath): the binary must not load libraries from the directory it is in.
link_flags=(
    --disable-local-rpath
    -Xlinker "--version-script=$PWD/deploy/uplink.exports"
    -Xlinker --icf=all
    -Xlinker -O2
    -Xlinker "--symbol-ordering-file=$PWD/deploy/uplink.order" -Xlinker --no-warn-symbol-ordering
    -Xlinker "$PWD/deploy/uplink-text.lds"
    -Xlinker "$PWD/deploy/uplink-no-unwind.lds" -Xlinker --no-eh-frame-hdr
)
# - RELR relative relocations (-z pack-relative-relocs): 2 MB of .rela.dyn become 16 KB, which ld.so no longer reads
#   at every start. Needs glibc >= 2.36 (Debian 12) on the box, so only where the build machine has it: the binary
#   needs the build machine's glibc anyway (build on the oldest release you deploy to, see docs/deploy.md).
glibc="$(getconf GNU_LIBC_VERSION 2>/dev/null | sed -n 's/^glibc //p')"
if [ -n "$glibc" ] && [ "$(printf '%s\n' 2.36 "$glibc" | sort -V | head -n 1)" = 2.36 ]; then
    link_flags+=(-Xlinker -z -Xlinker pack-relative-relocs)
else
    echo "build-release: glibc ${glibc:-unknown} < 2.36 here: no RELR relocations (binary about 2 MB larger)" >&2
fi
if [ -n "${UPLINK_LINK_MAP:-}" ]; then
    link_flags+=(-Xlinker "-Map=$(readlink -f "$(dirname "$UPLINK_LINK_MAP")")/$(basename "$UPLINK_LINK_MAP")")
fi

bin_dir="$(swift build "${build_flags[@]}" "${extra_flags[@]}" --show-bin-path)"
built="$bin_dir/uplink"
# SwiftPM does not know that the link reads uplink.order and the .lds scripts: without the old binary it relinks.
rm -f "$built"
echo "build-release: swift build ${build_flags[*]} ${link_flags[*]} ${extra_flags[*]}" >&2
swift build "${build_flags[@]}" "${link_flags[@]}" "${extra_flags[@]}" >&2
[ -x "$built" ] || fail "no binary at $built"

# The architecture the binary was built for, as ELF says (x86_64, aarch64, armv7), not the build machine's.
machine="$(LC_ALL=C readelf -h "$built" | sed -n 's/^ *Machine: *//p')"
case "$machine" in
    *X86-64*) arch=x86_64 ;;
    *AArch64*) arch=aarch64 ;;
    *ARM*) arch=armv7 ;;
    *) arch="$(uname -m)" ;;
esac

# The version as the binary reports it; a cross-built binary cannot run here, so fall back to the source.
if version="$("$built" --version 2>/dev/null)"; then
    :
else
    version="$(sed -n 's/.*static let current = "\(.*\)".*/\1/p' Sources/uplink/UplinkCommand.swift)"
fi
[ -n "$version" ] || fail "cannot determine the version"

mkdir -p "$dist_dir"
output="$dist_dir/uplink-$version-$arch"
cp "$built" "$output.tmp"
"$strip_program" --strip-all "$output.tmp"
mv -f "$output.tmp" "$output"

# No Foundation or ICU: neither as a shared library nor linked in statically (its symbols or data).
needed="$(LC_ALL=C readelf -d "$output" | sed -n 's/.*(NEEDED).*\[\(.*\)\]/\1/p')"
# grep reads to the end (no -q): with pipefail, an early exit would SIGPIPE the producer and turn a match into a miss.
if echo "$needed" | grep -E 'libFoundation|_FoundationICU|libicu|libswift' >/dev/null; then
    fail "$output needs $(echo "$needed" | grep -E 'libFoundation|_FoundationICU|libicu|libswift' | tr '\n' ' ')"
fi
if [ "$arch" = "$(uname -m)" ] && ldd "$output" 2>/dev/null | grep -E 'libFoundation|_FoundationICU|libicu|libswift' >/dev/null; then
    fail "ldd: $output loads $(ldd "$output" | grep -E 'libFoundation|_FoundationICU|libicu|libswift' | tr '\n' ' ')"
fi
# Linked in statically: look at the unstripped build's symbols for ICU's data (icudt<N>_dat, ~30 MB) and for
# FoundationInternationalization (what `import Foundation` brings in; use FoundationEssentials instead).
if LC_ALL=C nm "$built" 2>/dev/null | grep -E 'icudt[0-9]+|FoundationInternationalization' >/dev/null; then
    fail "$built links ICU or FoundationInternationalization statically: something imports Foundation"
fi

size="$(stat -c %s "$output")"
echo "build-release: $output: $size bytes ($(( (size + 524288) / 1048576 )) MiB), version $version, $arch" >&2
echo "build-release: shared libraries: $(echo "$needed" | tr '\n' ' ')" >&2
if [ "$size" -gt "$max_bytes" ]; then
    fail "$output is $size bytes, above the limit of $max_bytes bytes"
fi
echo "$output"
