#!/bin/sh
# Runs one fuzz target under libFuzzer (README, "Fuzzing").
#
#   fuzz/run.sh TARGET [RUNS] [libFuzzer flags...]
#
# TARGET: wire-line, line-splitter, stream-processor, ack-line, stream-headers, decompress, config, remote-document,
# config-line or signed-config. RUNS: inputs to run (default 1000000; 0 runs until a crash or Ctrl-C). Builds uplink-fuzz with -sanitize=fuzzer,address into
# .build-fuzz (a release build of its dependencies the first time: several minutes), keeps the corpus in
# fuzz/corpus/TARGET (seeded from the target's seeds) and writes crashing inputs to fuzz/crashes/TARGET.
# Linking needs lld (the toolchain's ld.lld; gold fails on the sanitizer runtimes): set LLD to use another.
set -eu
cd "$(dirname "$0")/.."
target=${1:?usage: fuzz/run.sh TARGET [RUNS] [libFuzzer flags...]}
runs=${2:-1000000}
[ $# -ge 2 ] && shift 2 || shift 1
# libFuzzer's -runs=0 runs no new input at all (only the corpus); -1 is its "until a crash".
[ "$runs" = 0 ] && runs=-1

lld=${LLD:-$(dirname "$(command -v swiftc)")/ld.lld}
[ -x "$lld" ] || lld=$(command -v ld.lld) || { echo "fuzz/run.sh: ld.lld not found; set LLD" >&2; exit 1; }
toolset=.build-fuzz/toolset.json
mkdir -p .build-fuzz
printf '{"schemaVersion": "1.0", "linker": {"path": "%s"}}\n' "$lld" > "$toolset"

swift build -c release --build-path .build-fuzz --product uplink-fuzz --toolset "$toolset" \
    -Xswiftc -sanitize=fuzzer,address -Xswiftc -DUPLINK_LIBFUZZER >&2
binary=.build-fuzz/release/uplink-fuzz

corpus=fuzz/corpus/$target
crashes=fuzz/crashes/$target
mkdir -p "$corpus" "$crashes"
"$binary" --seeds "$target" "$corpus"
"$binary" --dictionary "$target" .build-fuzz/"$target".dict

UPLINK_FUZZ_TARGET=$target exec "$binary" -runs="$runs" -dict=.build-fuzz/"$target".dict \
    -max_len=16384 -rss_limit_mb=2048 -print_final_stats=1 -artifact_prefix="$crashes/" "$@" "$corpus"
