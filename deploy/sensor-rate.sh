#!/usr/bin/env bash
# Sensors side by side: every sensor of a box at a 1 s interval, what the agent costs per value
# against collectd 5 (Debian `collectd-core`) reading the same things:
#
#   deploy/sensor-rate.sh BINARY [BINARY...]        # each: an uplink agent + an uplink collector (same binary)
#
# Each uplink agent runs cpu (per core), memory, load, network, diskio and disk at `interval: 1s` (default zstd
# stream), streaming to its own collector on loopback; collectd runs cpu (per cpu), memory, load, interface, disk and df
# at `Interval 1` writing CSV files. After a warm-up it measures, over UPLINK_SENSOR_SECONDS (default 60): CPU in % of
# one core, values per second (uplink: records sent; collectd: CSV rows written) and CPU µs per value; for uplink also
# the stream's wire bytes per record (`uplink_bytes_sent_total / uplink_records_sent_total` from the agent's
# /metrics). UPLINK_SENSOR_COMPRESSION=none adds rows with `uplink.compression: none` for the last BINARY.
set -euo pipefail

seconds="${UPLINK_SENSOR_SECONDS:-60}"
[ $# -ge 1 ] || { sed -n '2,13p' "$0" >&2; exit 2; }
binaries=()
for binary in "$@"; do
    [ -x "$binary" ] || { echo "sensor-rate: no executable at $binary" >&2; exit 1; }
    binaries+=("$(readlink -f "$binary")")
done

. "$(dirname "$0")/bench-processes.sh"
bench_start sensors

# The value of one unlabelled counter from the agent's /metrics.
metric() {
    python3 - "$1" "$2" <<'PY'
import sys, urllib.request
port, name = sys.argv[1:3]
for line in urllib.request.urlopen(f"http://127.0.0.1:{port}/metrics", timeout=5).read().decode().splitlines():
    if line.startswith(name + " "):
        print(int(float(line.split()[1])))
        break
else:
    print(0)
PY
}
report() { # NAME CPU_TICKS VALUES [BYTES]
    python3 - "$1" "$2" "$3" "${4:-}" "$seconds" "$ticks_per_second" <<'PY'
import sys
name, ticks, values, wire, seconds, hz = sys.argv[1:7]
cpu = int(ticks) / int(hz)
values, seconds = int(values), int(seconds)
per_value = f"{1e6 * cpu / values:8.1f} µs" if values else "       - µs"
wire_part = f"{int(wire) / values:6.1f} B" if wire and values else "     -  "
print(f"{name:<28} | {100 * cpu / seconds:6.3f} % | {values / seconds:7.1f} | {per_value} | {wire_part}")
PY
}

run_uplink() { # BINARY LABEL [COMPRESSION]
    local binary=$1 label=$2 compression=${3:-} dir="$work/uplink-$RANDOM"
    mkdir -p "$dir/collector"
    local port metrics; port=$(free_port); metrics=$(free_port)
    printf 'collector: { listen: 127.0.0.1:%s, data_dir: %s/collector, stdout: false }\n' "$port" "$dir" >"$dir/collector.yaml"
    "$binary" collector --config "$dir/collector.yaml" >"$dir/collector.log" 2>&1 &
    pids+=($!)
    wait_for_port "$port"
    cat >"$dir/agent.yaml" <<YAML
agent: { id: sensors, state_dir: $dir/state, metrics_listen: "127.0.0.1:$metrics" }
uplink: { url: "http://127.0.0.1:$port"${compression:+, compression: $compression} }
sources:
  - { name: cpu, type: cpu, interval: 1s }
  - { name: memory, type: memory, interval: 1s }
  - { name: load, type: load, interval: 1s }
  - { name: network, type: network, interval: 1s }
  - { name: diskio, type: diskio, interval: 1s }
  - { name: disk, type: disk, interval: 1s }
YAML
    "$binary" run --config "$dir/agent.yaml" >"$dir/agent.log" 2>&1 &
    local agent=$!; pids+=($agent)
    wait_for_port "$metrics"
    sleep 5
    local t0 r0 b0 t1 r1 b1
    t0=$(cpu_ticks "$agent"); r0=$(metric "$metrics" uplink_records_sent_total); b0=$(metric "$metrics" uplink_bytes_sent_total)
    sleep "$seconds"
    t1=$(cpu_ticks "$agent"); r1=$(metric "$metrics" uplink_records_sent_total); b1=$(metric "$metrics" uplink_bytes_sent_total)
    report "$label" $((t1 - t0)) $((r1 - r0)) $((b1 - b0))
    stop_all
}

run_collectd() {
    local dir="$work/collectd"
    mkdir -p "$dir/csv"
    cat >"$dir/collectd.conf" <<CONF
Hostname "sensors"
FQDNLookup false
Interval 1
BaseDir "$dir"
PIDFile "$dir/collectd.pid"
PluginDir "/usr/lib/collectd"
TypesDB "/usr/share/collectd/types.db"
LoadPlugin cpu
LoadPlugin memory
LoadPlugin load
LoadPlugin interface
LoadPlugin disk
LoadPlugin df
LoadPlugin csv
<Plugin cpu>
  ReportByCpu true
  ValuesPercentage true
</Plugin>
<Plugin csv>
  DataDir "$dir/csv"
  StoreRates true
</Plugin>
CONF
    collectd -f -C "$dir/collectd.conf" >"$dir/collectd.log" 2>&1 &
    local collectd=$!; pids+=($collectd)
    sleep 5
    rows() { find "$dir/csv" -type f -exec cat {} + 2>/dev/null | wc -l; }
    local t0 n0 t1 n1
    t0=$(cpu_ticks "$collectd"); n0=$(rows)
    sleep "$seconds"
    t1=$(cpu_ticks "$collectd"); n1=$(rows)
    report "collectd $(collectd -h 2>&1 | awk '/^collectd/ {sub(/,$/, "", $2); print $2; exit}')" $((t1 - t0)) $((n1 - n0))
    stop_all
}

echo "sensors at 1 s: ${seconds} s per run after a 5 s warm-up; CPU of the agent process over the window"
printf '%-28s | %-8s | %-7s | %-11s | %s\n' system "cpu" "values/s" "cpu per value" "wire per value"
for binary in "${binaries[@]}"; do run_uplink "$binary" "uplink $(basename "$binary")"; done
if [ -n "${UPLINK_SENSOR_COMPRESSION:-}" ]; then
    last="${binaries[${#binaries[@]} - 1]}"
    run_uplink "$last" "uplink $(basename "$last") ${UPLINK_SENSOR_COMPRESSION}" "$UPLINK_SENSOR_COMPRESSION"
fi
if command -v collectd >/dev/null; then run_collectd; else echo "collectd: not installed (apt-get install collectd-core)"; fi
