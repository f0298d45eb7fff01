#!/usr/bin/env bash
# Idle CPU of agents side by side, in one run (the machine's noise hits all of them alike):
#
#   deploy/idle-cpu.sh OLD_BINARY NEW_BINARY
#
# One collector (NEW_BINARY) and three agents streaming to it over loopback, each with every sensor that works with
# its defaults (cpu, memory, load, uptime, network, diskio, disk, thermal, hwmon, power) sampling every 10 s:
#   old        OLD_BINARY, as it runs (no metrics endpoint)
#   new        NEW_BINARY without agent.metrics_listen
#   new+ep     NEW_BINARY with agent.metrics_listen (nothing scrapes it)
# After 15 s of start-up, each agent's CPU time is read over UPLINK_IDLE_SECONDS (default 60) seconds and printed as
# a share of one core. Each agent runs in a cgroup of its own when the cgroup-v1 cpuacct hierarchy is writable (root):
# cpuacct.usage counts nanoseconds, threads that ended included. Otherwise /proc/PID/stat's utime + stime, in 10 ms
# ticks: too coarse for 0.01 % over 60 s, so raise UPLINK_IDLE_SECONDS (600 s gives 0.0017 % per tick).
set -euo pipefail

seconds="${UPLINK_IDLE_SECONDS:-60}"
[ $# -eq 2 ] || { sed -n '2,14p' "$0" >&2; exit 2; }
old="$(readlink -f "$1")" new="$(readlink -f "$2")"
for binary in "$old" "$new"; do [ -x "$binary" ] || { echo "idle-cpu: no executable at $binary" >&2; exit 1; }; done

work="$(mktemp -d "${TMPDIR:-/tmp}/uplink-idle-cpu.XXXXXX")"
pids=() groups=() agents=()
cpuacct=/sys/fs/cgroup/cpuacct
[ -w "$cpuacct/cgroup.procs" ] || cpuacct=""
cleanup() {
    for pid in "${pids[@]}"; do kill -TERM "$pid" 2>/dev/null || true; done
    wait 2>/dev/null || true
    for group in "${groups[@]}"; do rmdir "$group" 2>/dev/null || true; done
    rm -rf "$work"
}
trap cleanup EXIT

free_port() { python3 -c 'import socket; s = socket.socket(); s.bind(("127.0.0.1", 0)); print(s.getsockname()[1])'; }
port="$(free_port)"
mkdir -p "$work/collector"
printf 'collector: { listen: 127.0.0.1:%s, data_dir: %s/collector, stdout: false }\n' "$port" "$work" >"$work/collector.yaml"
"$new" collector --config "$work/collector.yaml" >"$work/collector.log" 2>&1 &
pids+=($!)
sleep 2

agent_config() { # NAME [METRICS_LISTEN]: writes the agent's file, prints its path
    local file="$work/$1.yaml"
    printf 'agent: { id: %s, state_dir: %s/%s%s }\n' "$1" "$work" "$1" "${2:+, metrics_listen: $2}" >"$file"
    printf 'buffer: { max_bytes: 16MiB }\nuplink: { url: "http://127.0.0.1:%s" }\nsources:\n' "$port" >>"$file"
    for kind in cpu memory load uptime network diskio disk thermal hwmon power; do
        printf '  - { name: %s, type: %s, interval: 10s }\n' "$kind" "$kind" >>"$file"
    done
    echo "$file"
}
start_agent() { # BINARY CONFIG LOG: starts it, in a cgroup of its own when possible
    if [ -n "$cpuacct" ]; then
        local group="$cpuacct/uplink-idle-cpu-$$-${#agents[@]}"
        mkdir "$group" && groups+=("$group")
        sh -c 'echo $$ > "$1/cgroup.procs" && exec "$2" run --config "$3"' sh "$group" "$1" "$2" >"$3" 2>&1 &
    else
        "$1" run --config "$2" >"$3" 2>&1 &
    fi
    pids+=($!) agents+=($!)
}
names=(old new new+ep)
start_agent "$old" "$(agent_config old)" "$work/old.log"
start_agent "$new" "$(agent_config new)" "$work/new.log"
start_agent "$new" "$(agent_config new-ep "127.0.0.1:$(free_port)")" "$work/new-ep.log"
sleep 15

nanoseconds() { # INDEX
    if [ -n "$cpuacct" ]; then
        cat "${groups[$1]}/cpuacct.usage"
    else
        awk -v hz="$(getconf CLK_TCK)" '{ printf "%d\n", ($14 + $15) * 1000000000 / hz }' "/proc/${agents[$1]}/stat"
    fi
}
before=()
for index in 0 1 2; do before[index]="$(nanoseconds "$index")"; done
start="$(date +%s.%N)"
sleep "$seconds"
elapsed="$(echo "$(date +%s.%N) - $start" | bc -l)"
method="/proc/PID/stat ticks"
[ -n "$cpuacct" ] && method="cgroup cpuacct.usage"
echo "idle agents, 10 default sensors at 10 s each, over ${elapsed%.*} s ($method; share of one core):"
for index in 0 1 2; do
    pid="${agents[$index]}"
    kill -0 "$pid" 2>/dev/null || { echo "idle-cpu: agent ${names[$index]} exited" >&2; cat "$work"/*.log >&2; exit 1; }
    used=$(( $(nanoseconds "$index") - before[index] ))
    printf '  %-7s %8.1f ms = %.4f %% (VmRSS %s)\n' "${names[$index]}" "$(echo "$used / 1000000" | bc -l)" \
        "$(echo "$used / 10000000 / $elapsed" | bc -l)" "$(awk '/^VmRSS/ { print $2 " " $3 }' "/proc/$pid/status")"
done
