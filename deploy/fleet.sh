#!/usr/bin/env bash
# A fleet against one collector: many agents, each sending a few lines a second, streaming to one
# collector process; what the collector costs per record. Side by side in one run (the machine's noise hits all alike):
#
#   deploy/fleet.sh COLLECTOR_BINARY [COLLECTOR_BINARY...]     # each: an `uplink` executable, run as `uplink collector`
#
# For each shape (UPLINK_FLEET_SHAPES, default "1000x1 100x100": 1,000 agents × 1 line/s and 100 agents × 100 lines/s)
# and each binary it starts `BINARY collector` on 127.0.0.1 in a temporary directory (records.jsonl, stdout off,
# max_streams at least the agent count) and runs the load generator, `uplink-bench fleet` (a release build:
# UPLINK_FLEET_BENCH, default .build-rel/release/uplink-bench beside this checkout; see
# Sources/uplink-bench/FleetBenchmark.swift). It simulates the agents in one process: one HTTP/1.1 stream each, 200-byte
# log lines framed as the agent frames tailed lines, one chunk per line, the agents' start phases spread so the
# lines arrive evenly. Once every stream is open it sends for UPLINK_FLEET_WARMUP (default 5) s, then for the measured
# window of UPLINK_FLEET_SECONDS (default 20) s, then ends every stream and waits for every record's ack.
#
# Over the window only, it prints the collector's CPU (utime + stime of /proc/PID/stat: % of one core and µs per
# record), its context switches per record (voluntary + involuntary, summed over all its threads), and its resident
# memory at the window's end; over the whole run, whether every record sent was acknowledged and stored exactly once
# in records.jsonl (lines, and distinct agent + sequence), and how far behind its schedule the generator wrote (writes
# more than 10 ms late, and the worst: many late writes mean the generator did not keep up and the collector saw
# bursts). UPLINK_FLEET_COMPRESSION=zstd (or gzip) makes the generator compress each stream as agents do by default
# (default none); UPLINK_FLEET_THREADS (default 1) sets the generator's event loops. Needs python3.
set -euo pipefail

seconds="${UPLINK_FLEET_SECONDS:-20}"
warmup="${UPLINK_FLEET_WARMUP:-5}"
shapes="${UPLINK_FLEET_SHAPES:-1000x1 100x100}"
compression="${UPLINK_FLEET_COMPRESSION:-none}"
threads="${UPLINK_FLEET_THREADS:-1}"
bench="${UPLINK_FLEET_BENCH:-$(dirname "$0")/../.build-rel/release/uplink-bench}"
[ $# -ge 1 ] || { sed -n '2,23p' "$0" >&2; exit 2; }
binaries=() labels=()
for binary in "$@"; do
    [ -x "$binary" ] || { echo "fleet: no executable at $binary" >&2; exit 1; }
    binaries+=("$(readlink -f "$binary")") labels+=("$binary")
done
[ -x "$bench" ] || {
    echo "fleet: no load generator at $bench (swift build -c release --product uplink-bench --scratch-path .build-rel, or set UPLINK_FLEET_BENCH)" >&2
    exit 1
}
bench="$(readlink -f "$bench")"
command -v python3 >/dev/null || { echo "fleet: needs python3" >&2; exit 1; }

# One descriptor per stream on each side: both processes raise their soft limit to the hard one themselves; this
# raises it for the script's children too, and says so early when the hard limit is too low.
ulimit -n "$(ulimit -Hn)" 2>/dev/null || true
most=0
for shape in $shapes; do
    [[ $shape =~ ^[0-9]+x[0-9]+$ ]] || { echo "fleet: a shape is AGENTSxLINES_PER_SECOND, not '$shape'" >&2; exit 2; }
    agents=${shape%x*}
    [ "$agents" -le "$most" ] || most=$agents
done
if [ "$(ulimit -n)" != unlimited ] && [ "$(ulimit -n)" -lt $((most + 100)) ]; then
    echo "fleet: the open file limit ($(ulimit -n)) is below $((most + 100)) for $most agents; raise the hard limit" >&2
    exit 1
fi

. "$(dirname "$0")/bench-processes.sh"
bench_start fleet

resident_kib() { awk '/^VmRSS:/ {print $2}' "/proc/$1/status"; }
field() { sed -n "s/.* $1=\([^ ]*\).*/\1/p" <<<"$2"; } # NAME LINE: the value of NAME=VALUE in a generator line

run_fleet() { # BINARY LABEL AGENTS RATE: one table row
    local binary=$1 label=$2 agents=$3 rate=$4 dir="$work/run-$RANDOM"
    mkdir -p "$dir/collector"
    local port; port=$(free_port)
    local streams=$((agents + 16 > 1024 ? agents + 16 : 1024))
    printf 'collector: { listen: 127.0.0.1:%s, data_dir: %s/collector, stdout: false, max_streams: %s }\n' \
        "$port" "$dir" "$streams" >"$dir/collector.yaml"
    "$binary" collector --config "$dir/collector.yaml" >"$dir/collector.log" 2>&1 &
    local collector=$!; pids+=($collector)
    wait_for_port "$port" || { echo "fleet: $label did not listen on 127.0.0.1:$port" >&2; cat "$dir/collector.log" >&2; return 1; }

    mkfifo "$dir/events"
    "$bench" fleet --port "$port" --agents "$agents" --rate "$rate" --seconds "$seconds" --warmup "$warmup" \
        --compression "$compression" --threads "$threads" >"$dir/events" 2>"$dir/bench.log" &
    local generator=$!; pids+=($generator)
    local events c0= s0= c1= s1= rss= records= window_ms= result=
    exec {events}<"$dir/events"
    # Each event comes within the opening time (at most 120 s), the window, or the drain (at most 30 s).
    while IFS= read -r -t $((warmup + seconds + 150)) -u "$events" line; do
        case $line in
            "fleet window-start"*) c0=$(cpu_ticks "$collector"); s0=$(switches "$collector") ;;
            "fleet window-end"*)
                c1=$(cpu_ticks "$collector"); s1=$(switches "$collector"); rss=$(resident_kib "$collector")
                records=$(field records "$line"); window_ms=$(field ms "$line") ;;
            "fleet result"*) result=$line ;;
        esac
    done
    exec {events}<&-
    local status=0
    wait "$generator" || status=$?
    if [ -z "$result" ] || [ -z "$c1" ]; then
        echo "fleet: the generator failed for $label, $agents agents × $rate lines/s (exit $status):" >&2
        sed 's/^/  /' "$dir/bench.log" >&2
        stop_all
        rm -rf "$dir"
        return 0
    fi
    [ "$status" -eq 0 ] || sed 's/^/  /' "$dir/bench.log" >&2
    python3 - "$label" "$agents" "$rate" "$ticks_per_second" $((c1 - c0)) $((s1 - s0)) "$rss" "$records" "$window_ms" \
        "$(field sent "$result")" "$(field acked "$result")" "$(field complete "$result")" \
        "$(field late_10ms "$result")" "$(field late_max_ms "$result")" "$dir/collector" <<'PY'
import os, re, sys
label, agents, rate, hz, ticks, switches, rss, records, window_ms, sent, acked, complete, late, late_max, data = sys.argv[1:16]
agents, records, sent, acked = int(agents), int(records), int(sent), int(acked)
cpu, seconds = int(ticks) / int(hz), int(window_ms) / 1000
# records.jsonl: {"agent":"fleet-7","epoch":E,"seq":N,... per stored record.
key = re.compile(rb'^\{"agent":"([^"]*)","epoch":(\d+),"seq":(\d+),')
lines, distinct = 0, set()
with open(os.path.join(data, "records.jsonl"), "rb") as stored:
    for line in stored:
        lines += 1
        match = key.match(line)
        if match:
            distinct.add(match.groups())
rejects_path = os.path.join(data, "rejects.jsonl")
rejects = sum(1 for _ in open(rejects_path, "rb")) if os.path.exists(rejects_path) else 0
once = lines == sent and len(distinct) == sent and acked == sent and int(complete) == agents and rejects == 0
verdict = "yes" if once else f"NO (acked {acked}, {len(distinct)} distinct, {int(complete)}/{agents} agents, {rejects} rejected)"
print(f"{label:<28} {agents:>6} {rate:>5} | {records / seconds:7.0f} | {100 * cpu / seconds:6.2f} % {1e6 * cpu / records:7.1f} µs "
      f"{int(switches) / records:5.2f} cs | {int(rss) / 1024:7.1f} MiB | {lines:>8}/{sent:<8} {verdict} | {late:>6} {late_max:>5} ms")
if int(late) > sent / 100:
    print(f"  note: the generator wrote {late} of {sent} lines more than 10 ms late (worst {late_max} ms): the collector saw"
          " bursts; another load on the machine, or a generator that needs UPLINK_FLEET_THREADS=2")
PY
    stop_all
    rm -rf "$dir"
}

echo "fleet: one collector process, ${warmup} s warm-up then ${seconds} s measured per run, 200-byte lines, one chunk per line," \
    "compression $compression; collector CPU and context switches (cs, all threads) over the measured window"
printf '%-28s %6s %5s | %7s | %-32s | %11s | %-23s | %s\n' binary agents l/s rec/s "collector: cpu, per record" \
    "RSS" "stored/sent exactly once" "late>10ms max"
for shape in $shapes; do
    for index in "${!binaries[@]}"; do run_fleet "${binaries[$index]}" "${labels[$index]}" "${shape%x*}" "${shape#*x}"; done
done
