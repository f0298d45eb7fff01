# Shared by the side-by-side benchmark scripts (steady-rate.sh, sensor-rate.sh): sourced, not run.
# Makes a work directory `$work` (removed at exit), keeps the processes a script starts in `pids` (stop_all ends them,
# and so does the exit), and gives the helpers that read a process's CPU and wait for a listener.
# Call `bench_start NAME` first.

bench_start() { # NAME: the work directory's prefix
    work="$(mktemp -d "${TMPDIR:-/tmp}/uplink-$1.XXXXXX")"
    pids=()
    trap 'stop_all; rm -rf "$work"' EXIT
}

stop_all() {
    for pid in "${pids[@]}"; do kill -TERM "$pid" 2>/dev/null || true; done
    for pid in "${pids[@]}"; do wait "$pid" 2>/dev/null || true; done
    pids=()
}

free_port() { python3 -c 'import socket; s = socket.socket(); s.bind(("127.0.0.1", 0)); print(s.getsockname()[1])'; }
wait_for_port() { for _ in $(seq 1 100); do (exec 3<>/dev/tcp/127.0.0.1/"$1") 2>/dev/null && return 0; sleep 0.1; done; return 1; }
# User + system CPU of a process, in clock ticks (`ticks_per_second` per second).
cpu_ticks() { awk '{print $14 + $15}' "/proc/$1/stat"; }
# Context switches of every thread of a process.
switches() { cat /proc/"$1"/task/*/status 2>/dev/null | awk '/ctxt_switches/ {n += $2} END {print n + 0}'; }
ticks_per_second=$(getconf CLK_TCK)
