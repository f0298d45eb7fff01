#!/usr/bin/env bash
# Puts the code a running agent executes after start-up at the front of the linker's symbol ordering file, so that
# it lies together in the binary (bounded memory: fewer code pages resident).
#
#   deploy/order-steady-code.sh UNSTRIPPED_BINARY [ORDER_FILE]     # ORDER_FILE defaults to deploy/uplink.order
#
# Why: right before its services start, `uplink run` gives back the resident pages of code that start-up touched
# (StartupCodePages). What the agent executes afterwards is mapped again, but the kernel maps a 64 KiB window around
# every page touched (fault-around): 1 MiB of steady-state functions spread over 17 MiB of .text made 8 MiB of it
# resident again. Listed first in the order file, those functions are linked next to each other.
#
# How: the agent runs under valgrind's callgrind, which zeroes what it counted when StartupCodePages.release is
# entered; from there on it counts for UPLINK_ORDER_SECONDS (default 60 s) of typical work: every sensor that works with its defaults at
# 1 s, a tail of a 16 MiB backlog plus a line appended every 50 ms, to a collector process that is killed and
# restarted half-way (reconnect and resume). Every function of the binary that ran in that window goes to the front
# of ORDER_FILE (sorted); the entries already there follow, without those. The start-up and idle part of the file
# comes from `deploy/idle-memory.sh --order-file` (which writes the whole file anew): run this script after it.
#
# UNSTRIPPED_BINARY: the release binary before stripping, built with the flags of deploy/build-release.sh
# (.build-dist/release/uplink after a build). Needs valgrind, nm and python3. Relink afterwards: deploy/build-release.sh.
set -euo pipefail
cd "$(dirname "$0")/.."

[ $# -ge 1 ] || { sed -n '5p' "$0" >&2; exit 2; }
binary="$(readlink -f "$1")"
order_file="${2:-deploy/uplink.order}"
seconds="${UPLINK_ORDER_SECONDS:-60}"
[ -x "$binary" ] || { echo "order-steady-code: no executable at $1" >&2; exit 1; }
command -v valgrind >/dev/null || { echo "order-steady-code: needs valgrind (apt-get install valgrind)" >&2; exit 1; }

work="$(mktemp -d "${TMPDIR:-/tmp}/uplink-order.XXXXXX")"
agent="" collector="" writer=""
cleanup() {
    for pid in $writer $agent $collector; do kill "$pid" 2>/dev/null || true; done
    for pid in $writer $agent $collector; do wait "$pid" 2>/dev/null || true; done
    rm -rf "$work"
}
trap cleanup EXIT

port="$(python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1",0)); print(s.getsockname()[1]); s.close()')"
start_collector() {
    "$binary" collector --host 127.0.0.1 --port "$port" --data-dir "$work/collector" --no-stdout --no-jsonl \
        >>"$work/collector.log" 2>&1 &
    collector=$!
}
start_collector

python3 - "$work/app.log" <<'PY'
import sys
with open(sys.argv[1], "w", buffering=1 << 20) as f:
    for i in range(16 * 1024 * 1024 // 200):
        f.write(f"{i:012d} backlog {'x' * 180}\n")
PY
cat >"$work/agent.yaml" <<YAML
agent: { id: order-steady, state_dir: $work/state }
uplink: { url: "http://127.0.0.1:$port" }
sources:
  - { name: app, type: tail, paths: [$work/app.log], start_at: beginning }
YAML
for kind in cpu memory load uptime network diskio disk thermal hwmon power; do
    printf '  - { name: %s, type: %s, interval: 1s }\n' "$kind" "$kind" >>"$work/agent.yaml"
done

valgrind --tool=callgrind --demangle=no --dump-instr=no --callgrind-out-file="$work/callgrind.out" \
    --zero-before='$s13UplinkProcess16StartupCodePagesO7release6logger5after*' \
    "$binary" run --config "$work/agent.yaml" --log-level debug >"$work/agent.log" 2>&1 &
agent=$!
for _ in $(seq 1 600); do
    grep -q "gave back resident code pages" "$work/agent.log" && break
    kill -0 "$agent" 2>/dev/null || { echo "order-steady-code: the agent exited:" >&2; tail -20 "$work/agent.log" >&2; exit 1; }
    sleep 0.1
done
grep -q "gave back resident code pages" "$work/agent.log" ||
    { echo "order-steady-code: the agent did not give back its start-up pages within 60 s" >&2; exit 1; }

( while sleep 0.05; do printf '%s appended %s\n' "$(date +%s.%N)" "$(printf 'y%.0s' $(seq 1 150))"; done ) >>"$work/app.log" &
writer=$!
sleep "$((seconds / 2))"
kill -KILL "$collector"; wait "$collector" 2>/dev/null || true
sleep 3
start_collector
sleep "$((seconds - seconds / 2))"
callgrind_control --dump "$agent" >/dev/null 2>&1
kill -KILL "$agent"; wait "$agent" 2>/dev/null || true
agent=""

# (Killed, not stopped: the dump above ends the window, and shutdown code is not steady-state code.)
# Functions of the binary with cost in the window: `fn=(id) name` lines under `ob=` of the binary (callgrind names a
# function or an object in full once, then by its id).
python3 - "$binary" "$work"/callgrind.out* >"$work/steady" <<'PY'
import re, sys
binary, outputs = sys.argv[1], sys.argv[2:]
executed = set()
for path in outputs:
    objects, names, current = {}, {}, None
    for line in open(path, errors="replace"):
        match = re.match(r"^(c?ob|c?fn)=\((\d+)\)(?: (.*))?$", line.rstrip("\n"))
        if not match:
            continue
        kind, ident, name = match.groups()
        table = objects if kind.endswith("ob") else names
        if name:
            table[ident] = name
        if kind == "ob":
            current = objects.get(ident)
        elif kind == "fn" and current == binary and ident in names:
            executed.add(names[ident])
for name in sorted(executed):
    print(name)
PY
steady=$(wc -l <"$work/steady")
[ "$steady" -gt 100 ] || { echo "order-steady-code: only $steady functions ran; see $work/agent.log" >&2; exit 1; }
{
    cat "$work/steady"
    grep -vxF -f "$work/steady" "$order_file" || true
} >"$work/order"
mv "$work/order" "$order_file"
echo "order-steady-code: $steady functions ran after start-up; they now lead $order_file ($(wc -l <"$order_file") entries)"
