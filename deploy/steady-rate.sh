#!/usr/bin/env bash
# Steady log rates: a writer appends 200-byte lines to a file, one write(2) per line, at 100, 1,000 and
# 10,000 lines/s; each agent under test follows the file and delivers the lines over loopback TCP to a receiver in
# another process. Side by side in one run (the machine's noise hits all alike):
#
#   deploy/steady-rate.sh BINARY [BINARY...]        # each: an uplink agent + an uplink collector (same binary)
#
# and, when rsyslogd is installed (Debian `rsyslog`), rsyslog 8 as a peer: imfile (inotify) → omfwd TCP to a line
# counter. For each rate and each system it prints the CPU of the agent and of the collector in % of one core and in
# µs per line, their context switches per line (all threads), and the latency from the write(2) to the line being
# stored: for uplink, appended to the collector's records.jsonl (a reader woken by inotify); for rsyslog, received by
# the counter. It also checks that every line arrived exactly once.
#
# Environment: UPLINK_STEADY_SECONDS (default 30) per run, UPLINK_STEADY_RATES (default "100 1000 10000");
# UPLINK_STEADY_FLOOR=PATH/uplink-bench adds rows for `uplink-bench one-loop-floor` (a release build of the same
# source): the agent's own encoder, ring and zstd on one NIO event loop without AsyncHTTPClient, streaming to the first
# BINARY's collector, once per entry of UPLINK_STEADY_FLOOR_STAGES (default "callback"; also "loop-tasks",
# "global-tasks" and "callback-ahc", which sends through AsyncHTTPClient as the agent did; see OneLoopFloor.swift).
# The gaps between the rows are what each kind of hand-off costs.
# UPLINK_STEADY_LINGER="1s" adds rows for the last BINARY (the build under test; older builds
# may lack the key) with `uplink.linger` set to each listed value. UPLINK_STEADY_COMPRESSION (zstd, gzip or none) sets
# every uplink agent's `uplink.compression` (default: the agent's default, zstd).
# UPLINK_STEADY_NEIGHBOUR=RATE has another writer append RATE lines/s to a file beside the followed one, in the same
# directory, that no system follows (an app's log beside syslog in /var/log): what each system pays for the neighbour.
# UPLINK_STEADY_TOGETHER=1 runs every system of a rate at once, all following the same file, and measures them over
# the same window: this box's load changes by tens of percent from one half-minute to the next, and systems measured
# one after another see different loads, systems measured together the same. Use it for ratios (uplink against
# rsyslog or the floor) at rates where the systems together leave cores idle (100 and 1,000 lines/s on two cores); at
# 10,000 lines/s they would compete for the cores.
set -euo pipefail

seconds="${UPLINK_STEADY_SECONDS:-30}"
rates="${UPLINK_STEADY_RATES:-100 1000 10000}"
[ $# -ge 1 ] || { sed -n '2,30p' "$0" >&2; exit 2; }
binaries=() labels=()
for binary in "$@"; do
    [ -x "$binary" ] || { echo "steady-rate: no executable at $binary" >&2; exit 1; }
    binaries+=("$(readlink -f "$binary")") labels+=("uplink $(basename "$binary")")
done
floor="${UPLINK_STEADY_FLOOR:-}"
if [ -n "$floor" ]; then
    [ -x "$floor" ] || { echo "steady-rate: no executable at UPLINK_STEADY_FLOOR=$floor" >&2; exit 1; }
    floor="$(readlink -f "$floor")"
fi
command -v cc >/dev/null || { echo "steady-rate: needs a C compiler (cc) for the writer" >&2; exit 1; }

. "$(dirname "$0")/bench-processes.sh"
bench_start steady

# The writer: C, so that pacing 10,000 writes a second costs the machine little. Each line starts with the
# CLOCK_REALTIME nanoseconds of its write and its sequence number, padded to 199 bytes + newline.
cat >"$work/writer.c" <<'C'
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>
int main(int argc, char **argv) {
    int fd = open(argv[1], O_WRONLY | O_APPEND | O_CREAT, 0644);
    long rate = atol(argv[2]), count = rate * atol(argv[3]);
    if (fd < 0 || rate <= 0) return 1;
    struct timespec start, due, now;
    clock_gettime(CLOCK_MONOTONIC, &start);
    char line[200];
    for (long i = 0; i < count; i++) {
        long long offset = (long long)i * 1000000000LL / rate;
        due.tv_sec = start.tv_sec + (start.tv_nsec + offset) / 1000000000LL;
        due.tv_nsec = (start.tv_nsec + offset) % 1000000000LL;
        clock_nanosleep(CLOCK_MONOTONIC, TIMER_ABSTIME, &due, NULL);
        clock_gettime(CLOCK_REALTIME, &now);
        int n = snprintf(line, sizeof line, "%lld seq=%ld steady ",
                         (long long)now.tv_sec * 1000000000LL + now.tv_nsec, i);
        memset(line + n, 'x', sizeof line - 1 - n);
        line[sizeof line - 1] = '\n';
        if (write(fd, line, sizeof line) != (ssize_t)sizeof line) return 2;
    }
    return 0;
}
C
cc -O2 -o "$work/writer" "$work/writer.c"

# Receivers: print "received DUPLICATES p50_ms p99_ms max_ms" for the lines of one run when they get SIGTERM.
cat >"$work/receive.py" <<'PY'
import ctypes, os, re, select, signal, socket, sys, time
pattern = re.compile(rb"(\d{19}) seq=(\d+) steady")
latencies, seen, duplicates = [], set(), 0
def note(chunk, now):
    global duplicates
    for m in pattern.finditer(chunk):
        seq = int(m.group(2))
        if seq in seen:
            duplicates += 1
            continue
        seen.add(seq)
        latencies.append((now - int(m.group(1))) / 1e6)
def report(*_):
    latencies.sort()
    q = lambda p: latencies[min(len(latencies) - 1, int(p * len(latencies)))] if latencies else float("nan")
    print(len(seen), duplicates, "%.3f" % q(0.5), "%.3f" % q(0.99), "%.3f" % (latencies[-1] if latencies else float("nan")), flush=True)
    sys.exit(0)
signal.signal(signal.SIGTERM, report)
mode, target = sys.argv[1], sys.argv[2]
pending = b""
if mode == "file":  # follow a growing file, woken by inotify (IN_MODIFY)
    libc = ctypes.CDLL(None, use_errno=True)
    while not os.path.exists(target):
        time.sleep(0.01)
    inotify = libc.inotify_init1(0)
    libc.inotify_add_watch(inotify, target.encode(), 0x2)
    fd = os.open(target, os.O_RDONLY)
    while True:
        data = os.read(fd, 1 << 20)
        if not data:
            os.read(inotify, 4096)
            continue
        now = time.time_ns()
        data, pending = pending + data, b""
        cut = data.rfind(b"\n") + 1
        pending = data[cut:]
        note(data[:cut], now)
else:  # a TCP server on 127.0.0.1:target, any number of connections
    server = socket.socket()
    server.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
    server.bind(("127.0.0.1", int(target)))
    server.listen(8)
    conns, partial = [server], {}
    while True:
        for s in select.select(conns, [], [])[0]:
            if s is server:
                c, _ = server.accept()
                conns.append(c)
                partial[c] = b""
                continue
            data = s.recv(1 << 20)
            now = time.time_ns()
            if not data:
                conns.remove(s)
                continue
            data = partial[s] + data
            cut = data.rfind(b"\n") + 1
            partial[s] = data[cut:]
            note(data[:cut], now)
PY


# The systems started for the next measurement, one entry each: its name, agent (or rsyslogd) pid, collector pid
# (- for none), receiver pid, the receiver's output file and the system's directory (removed after the measurement).
names=() agents=() collectors=() receivers=() received_files=() directories=()
add_system() { # NAME AGENT COLLECTOR RECEIVER RECEIVED_FILE DIRECTORY
    names+=("$1") agents+=("$2") collectors+=("$3") receivers+=("$4") received_files+=("$5") directories+=("$6")
}

# usage_of I: system I's CPU ticks and context switches, of its agent and of its collector (0 0 for none).
usage_of() {
    local i=$1 collector_usage="0 0"
    [ "${collectors[i]}" = - ] || collector_usage="$(cpu_ticks "${collectors[i]}") $(switches "${collectors[i]}")"
    echo "$(cpu_ticks "${agents[i]}") $(switches "${agents[i]}") $collector_usage"
}

# measure_systems RATE LOGFILE: runs the writer once into LOGFILE, which every started system follows, and prints
# one table row per system (its CPU over the same window); then stops them all.
measure_systems() {
    local rate=$1 log=$2 i before=() after=() a0 as0 c0 cs0 a1 as1 c1 cs1
    sleep 2
    for i in "${!names[@]}"; do before[i]=$(usage_of "$i"); done
    local neighbour_writer=
    if [ -n "$neighbour" ]; then
        "$work/writer" "$work/neighbour.log" "$neighbour" "$seconds" & neighbour_writer=$!
    fi
    "$work/writer" "$log" "$rate" "$seconds"
    [ -z "$neighbour_writer" ] || wait "$neighbour_writer"
    rm -f "$work/neighbour.log"
    sleep 1
    for i in "${!names[@]}"; do after[i]=$(usage_of "$i"); done
    for i in "${!names[@]}"; do
        kill -TERM "${receivers[i]}"
        wait "${receivers[i]}" || true
        read -r a0 as0 c0 cs0 <<<"${before[i]}"
        read -r a1 as1 c1 cs1 <<<"${after[i]}"
        python3 - "${names[i]}" "$rate" "$seconds" "$ticks_per_second" $((a1 - a0)) $((as1 - as0)) \
            $((c1 - c0)) $((cs1 - cs0)) "${collectors[i]}" $(cat "${received_files[i]}") <<'PY'
import sys
name, rate, seconds, hz, a, asw, c, csw, collector = sys.argv[1:10]
got, dup, p50, p99, worst = sys.argv[10:15] if len(sys.argv) >= 15 else ("?", "?", "?", "?", "?")
rate, seconds, hz = int(rate), int(seconds), int(hz)
lines, window = rate * seconds, seconds + 1
a, c = int(a) / hz, int(c) / hz
col = lambda cpu, sw: f"{100 * cpu / window:6.2f} % {1e6 * cpu / lines:6.1f} µs {int(sw) / lines:5.2f} cs"
collector_part = col(c, csw) if collector != "-" else f"{'(none: a line counter)':>30}"
print(f"{name:<24} {rate:>6} | {col(a, asw)} | {collector_part} | {p50:>7} {p99:>7} {worst:>8} ms | {got}/{lines} dup {dup}")
PY
    done
    stop_all
    rm -rf "${directories[@]}"
    names=() agents=() collectors=() receivers=() received_files=() directories=()
}

start_uplink() { # BINARY LABEL LOGFILE [FLOOR STAGES [LINGER]]: an uplink agent, or `FLOOR one-loop-floor … STAGES`, to BINARY's collector
    local binary=$1 label=$2 log=$3 floor_binary=${4:-} floor_stages=${5:-} linger=${6:-} dir="$work/run-$RANDOM"
    mkdir -p "$dir/collector"
    local port; port=$(free_port)
    printf 'collector: { listen: 127.0.0.1:%s, data_dir: %s/collector, stdout: false }\n' "$port" "$dir" >"$dir/collector.yaml"
    "$binary" collector --config "$dir/collector.yaml" >"$dir/collector.log" 2>&1 &
    local collector=$!; pids+=($collector)
    wait_for_port "$port"
    cat >"$dir/agent.yaml" <<YAML
agent: { id: steady, state_dir: $dir/state }
uplink: { url: "http://127.0.0.1:$port"${linger:+, linger: $linger}${UPLINK_STEADY_COMPRESSION:+, compression: $UPLINK_STEADY_COMPRESSION} }
sources:
  - { name: app, type: tail, paths: [$log] }
YAML
    if [ -n "$floor_binary" ]; then
        "$floor_binary" one-loop-floor "$port" "$log" "$floor_stages" >"$dir/agent.log" 2>&1 &
    else
        "$binary" run --config "$dir/agent.yaml" >"$dir/agent.log" 2>&1 &
    fi
    local agent=$!; pids+=($agent)
    python3 "$work/receive.py" file "$dir/collector/records.jsonl" >"$dir/received" &
    local receiver=$!; pids+=($receiver)
    add_system "$label" "$agent" "$collector" "$receiver" "$dir/received" "$dir"
}

start_rsyslog() { # LOGFILE
    local log=$1 dir="$work/rsyslog-$RANDOM"
    mkdir -p "$dir/work"
    local port; port=$(free_port)
    python3 "$work/receive.py" tcp "$port" >"$dir/received" &
    local receiver=$!; pids+=($receiver)
    wait_for_port "$port"
    cat >"$dir/rsyslog.conf" <<CONF
global(workDirectory="$dir/work")
module(load="imfile" mode="inotify")
input(type="imfile" file="$log" tag="steady" ruleset="forward")
ruleset(name="forward") {
    action(type="omfwd" target="127.0.0.1" port="$port" protocol="tcp" template="RSYSLOG_FileFormat")
}
CONF
    rsyslogd -n -f "$dir/rsyslog.conf" -i "$dir/rsyslog.pid" >"$dir/rsyslog.log" 2>&1 &
    local rsyslog=$!; pids+=($rsyslog)
    add_system "rsyslog $(rsyslogd -v | awk 'NR == 1 {print $2}')" "$rsyslog" - "$receiver" "$dir/received" "$dir"
}

new_log() { local log="$work/app-$RANDOM.log"; : >"$log"; echo "$log"; }
# Called after each system is started: measures it at once, unless all are measured together.
started() { [ "$together" = 1 ] || { measure_systems "$rate" "$log"; rm -f "$log"; log=$(new_log); }; }

together="${UPLINK_STEADY_TOGETHER:-0}"
neighbour="${UPLINK_STEADY_NEIGHBOUR:-}"
echo "steady rates: ${seconds} s per run, 200-byte lines, one write(2) per line; CPU over the run + 1 s; cs = context switches"
[ "$together" != 1 ] || echo "together: at each rate every system follows the same file at the same time, measured over the same window"
[ -z "$neighbour" ] || echo "neighbour: $neighbour lines/s to a file beside the followed one that no system follows"
printf '%-24s %6s | %-30s | %-30s | %-28s | %s\n' system lines/s "agent: cpu, per line" "collector: cpu, per line" \
    "latency p50 p99 max" delivered
for rate in $rates; do
    log=$(new_log)
    for index in "${!binaries[@]}"; do start_uplink "${binaries[$index]}" "${labels[$index]}" "$log"; started; done
    last=$((${#binaries[@]} - 1))
    for linger in ${UPLINK_STEADY_LINGER:-}; do
        start_uplink "${binaries[$last]}" "${labels[$last]} linger $linger" "$log" "" "" "$linger"; started
    done
    if [ -n "$floor" ]; then
        for stages in ${UPLINK_STEADY_FLOOR_STAGES:-callback}; do
            start_uplink "${binaries[0]}" "floor $stages" "$log" "$floor" "$stages"; started
        done
    fi
    if command -v rsyslogd >/dev/null; then start_rsyslog "$log"; started; else echo "rsyslog: not installed (apt-get install rsyslog)"; fi
    [ "$together" != 1 ] || measure_systems "$rate" "$log"
    rm -f "$log"
done
