#!/usr/bin/env bash
# The log tailer following many files, an old and a new build side by side in one run (the machine's noise hits
# both alike):
#
#   deploy/tail-scale.sh [BASE_REF]
#
# BASE_REF must be 5872214 or later: the copied benchmark files construct `SourceConfig(tail)`, which older trees lack.
# Builds `uplink-bench` in release twice: from BASE_REF (default: main) with this checkout's benchmark files copied
# in (so both run the same benchmark, only the agent differs), into /tmp/uplink-tailscale-base/.build-base, and from
# this checkout into .build-rel. Then runs `uplink-bench tailscale` of old and new, alternating, UPLINK_TAIL_ROUNDS
# times (default 1). Each run: `paths: [app.log*]` matching UPLINK_BENCH_TAIL_FILES files (default "1,10000": app.log
# alone, then app.log and 9,999 rotated files), after 20 s of start-up idle for UPLINK_BENCH_TAIL_SECONDS (default 20),
# then 1,000 lines/s appended to app.log for as long. Printed per run: CPU share of one core idle and writing
# (getrusage of the benchmark process: agent, in-process collector and writer), latency append → collector (p50,
# p99, max), open descriptors and inotify watches of the process, bytes written to storage while writing (checkpoints).
set -euo pipefail

repo="$(cd "$(dirname "$0")/.." && pwd)"
base_ref="${1:-main}"
rounds="${UPLINK_TAIL_ROUNDS:-1}"
base=/tmp/uplink-tailscale-base

rm -rf "$base/src"
mkdir -p "$base/src"
git -C "$repo" archive "$base_ref" | tar -x -C "$base/src"
cp "$repo/Sources/uplink-bench/TailScaleBenchmark.swift" "$repo/Sources/uplink-bench/main.swift" \
    "$repo/Sources/uplink-bench/BenchmarkSupport.swift" "$base/src/Sources/uplink-bench/"
(cd "$base/src" && swift build -c release --product uplink-bench --build-path "$base/.build-base")
(cd "$repo" && swift build -c release --product uplink-bench --build-path "$repo/.build-rel")

for round in $(seq 1 "$rounds"); do
    echo "### round $round: old ($base_ref, $(git -C "$repo" rev-parse --short "$base_ref"))"
    "$base/.build-base/release/uplink-bench" tailscale
    echo "### round $round: new ($(git -C "$repo" rev-parse --short HEAD)$(git -C "$repo" diff --quiet || echo ', with local changes'))"
    "$repo/.build-rel/release/uplink-bench" tailscale
done
