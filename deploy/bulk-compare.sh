#!/usr/bin/env bash
# Bulk throughput of several builds side by side: `uplink-bench tail-processes` (a 1 GiB file of 200-byte lines
# tailed from the beginning by an agent process to a collector process) of each build in turn, ROUNDS times, then
# each build's medians. Alternating the builds spreads this box's changing load over all of them alike; one round
# of one build is not a measurement (rounds of the same build spread by ±10 % here).
#
#   deploy/bulk-compare.sh ROUNDS DIR [DIR...]
#
# Each DIR holds a release `uplink-bench` with its `uplink` beside it (`swift build -c release`, or
# deploy/build-release.sh plus `uplink-bench` built with the same flags). Prints one line per run (build, MiB/s of
# file, agent and collector CPU-s per GiB of file), then per build the medians and the range of MiB/s.
set -euo pipefail

[ $# -ge 2 ] || { echo "usage: $0 ROUNDS DIR [DIR...]" >&2; exit 2; }
rounds="$1"
shift
for dir in "$@"; do
    [ -x "$dir/uplink-bench" ] && [ -x "$dir/uplink" ] || { echo "bulk-compare: $dir lacks uplink-bench or uplink" >&2; exit 2; }
done

results="$(mktemp)"
trap 'rm -f "$results"' EXIT
for _ in $(seq 1 "$rounds"); do
    for dir in "$@"; do
        out="$("$dir/uplink-bench" tail-processes 2>&1)"
        rate="$(sed -n 's/.*throughput: \([0-9.]*\) MiB.*/\1/p' <<<"$out")"
        agent="$(sed -n 's/.*agent: \([0-9.]*\) cpu-s =.*/\1/p' <<<"$out")"
        collector="$(sed -n 's/.*collector: \([0-9.]*\) cpu-s =.*/\1/p' <<<"$out")"
        [ -n "$rate" ] || { echo "bulk-compare: $dir/uplink-bench tail-processes printed no throughput:" >&2; echo "$out" >&2; exit 1; }
        echo "$dir $rate $agent $collector" | tee -a "$results"
    done
done
echo
python3 - "$results" <<'PY'
import collections, statistics, sys
runs = collections.OrderedDict()
for line in open(sys.argv[1]):
    name, rate, agent, collector = line.split()
    runs.setdefault(name, []).append((float(rate), float(agent), float(collector)))
for name, values in runs.items():
    rate, agent, collector = (statistics.median(v[i] for v in values) for i in range(3))
    low, high = min(v[0] for v in values), max(v[0] for v in values)
    print(f"{name}: {len(values)} rounds, median {rate:.1f} MiB/s ({low:.1f}-{high:.1f}), "
          f"agent {agent:.2f} and collector {collector:.2f} CPU-s per GiB")
PY
