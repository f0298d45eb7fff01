#!/usr/bin/env bash
# The agent's memory while it drains a large backlog (bounded memory): a real agent process tails a file
# many times larger than its ring to a collector in another process; reports the agent's peak RSS (VmHWM) against
# the ring's capacity, its peak anonymous and file-backed parts (sampled every 50 ms), and how long the drain took.
#
#   deploy/backlog-memory.sh                                  # builds the release binary (deploy/build-release.sh)
#   deploy/backlog-memory.sh BINARY [RING_MIB] [FILE_MIB]     # default 64 MiB ring, 512 MiB file
set -euo pipefail
cd "$(dirname "$0")/.."

binary="${1:-}"
ring_mib="${2:-64}"
file_mib="${3:-512}"
if [ -z "$binary" ]; then
    binary="$(UPLINK_DIST_DIR=.build/dist deploy/build-release.sh | tail -n 1)"
fi
binary="$(readlink -f "$binary")"

work="$(mktemp -d /tmp/uplink-backlog-XXXXXX)"
pids=()
cleanup() {
    for pid in "${pids[@]}"; do kill "$pid" 2>/dev/null || true; done
    for pid in "${pids[@]}"; do wait "$pid" 2>/dev/null || true; done
    rm -rf "$work"
}
trap cleanup EXIT

# 200-byte lines, numbered.
python3 - "$work/backlog.log" "$file_mib" <<'PY'
import sys
path, mib = sys.argv[1], int(sys.argv[2])
filler = "x" * 180
with open(path, "w", buffering=1 << 20) as f:
    for i in range(mib * 1024 * 1024 // 200):
        f.write(f"{i:012d} backlog {filler}\n")
PY
lines=$(wc -l <"$work/backlog.log")
size=$(stat -c %s "$work/backlog.log")

port="$(python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1",0)); print(s.getsockname()[1]); s.close()')"
"$binary" collector --host 127.0.0.1 --port "$port" --data-dir "$work/collector" --no-stdout --no-jsonl \
    >"$work/collector.log" 2>&1 &
pids+=($!)
for _ in $(seq 1 100); do curl -sf "http://127.0.0.1:$port/healthz" >/dev/null 2>&1 && break; sleep 0.1; done

cat >"$work/agent.yaml" <<YAML
agent: { id: backlog, state_dir: $work/state }
uplink: { url: "http://127.0.0.1:$port" }
buffer: { max_bytes: ${ring_mib}MiB }
sources:
  - { name: backlog, type: tail, paths: [$work/backlog.log], start_at: beginning }
YAML
started=$(date +%s.%N)
"$binary" run --config "$work/agent.yaml" --log-level info >"$work/agent.log" 2>&1 &
agent=$!
pids+=($agent)

peak_anon=0
peak_file=0
done_at=""
for _ in $(seq 1 12000); do  # at most 10 minutes
    status="$(cat /proc/$agent/status 2>/dev/null)" || break
    anon=$(awk '/^RssAnon:/ {print $2}' <<<"$status")
    file=$(awk '/^RssFile:/ {print $2}' <<<"$status")
    [ "${anon:-0}" -gt "$peak_anon" ] && peak_anon=$anon
    [ "${file:-0}" -gt "$peak_file" ] && peak_file=$file
    # Drained: the tail checkpoint (`... <origin> <offset> <path>`) has the acknowledged offset at the file's end.
    if awk -v size="$size" '$6 == size { found = 1 } END { exit !found }' "$work"/state/tail/*.checkpoints 2>/dev/null; then
        done_at=$(date +%s.%N)
        break
    fi
    sleep 0.05
done
hwm=$(awk '/^VmHWM:/ {print $2}' /proc/$agent/status)
# Stopping runs code that never ran before: follow the peak until the process is gone.
kill -TERM "$agent"
hwm_stopping=$hwm
while status="$(cat /proc/$agent/status 2>/dev/null)"; do
    value=$(awk '/^VmHWM:/ {print $2}' <<<"$status")
    [ -z "$value" ] && break
    hwm_stopping=$value
    sleep 0.01
done
wait "$agent" || true

ring_kib=$((ring_mib * 1024))
echo "backlog: $file_mib MiB file ($lines lines of 200 bytes), ring ${ring_mib} MiB, binary $(basename "$binary")"
if [ -n "$done_at" ]; then
    echo "drained in $(python3 -c "print(round($done_at - $started, 1))") s"
else
    echo "NOT drained within 10 minutes"
fi
echo "agent VmHWM $(awk -v k="$hwm" 'BEGIN { printf "%.1f", k / 1024 }') MiB = ring + $(awk -v k="$hwm" -v r="$ring_kib" 'BEGIN { printf "%.1f", (k - r) / 1024 }') MiB (target: ring + 16 MiB)"
echo "agent VmHWM including its shutdown $(awk -v k="$hwm_stopping" -v r="$ring_kib" 'BEGIN { printf "%.1f MiB = ring + %.1f", k / 1024, (k - r) / 1024 }') MiB"
echo "peak RssAnon (sampled) $((peak_anon / 1024)) MiB, peak RssFile $((peak_file / 1024)) MiB"
