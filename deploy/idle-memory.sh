#!/usr/bin/env bash
# Measures the idle agent's memory (docs/deploy.md, "Size and memory": every default sensor, streaming), and (as
# root) derives the linker's symbol ordering file deploy/uplink.order from the same run.
#
#   deploy/idle-memory.sh BINARY                  # VmRSS, RssAnon, RssFile of an idle agent after 60 s
#   sudo deploy/idle-memory.sh --order-file deploy/uplink.order \
#       --unstripped .build-dist/release/uplink --map /tmp/uplink.map BINARY
#
# The run: `BINARY collector` in one process, `BINARY run` in another with every sensor that works with its defaults
# (cpu, memory, load, uptime, network, diskio, disk, thermal, hwmon, power) sampling every 10 s and streaming to that
# collector over loopback, for UPLINK_IDLE_SECONDS (default 60) seconds. Then it prints the agent's VmRSS, RssAnon and
# RssFile (/proc/PID/status) and the resident size of each of its mappings, and stops both processes.
#
# --order-file: the same run, but the agent runs a copy of BINARY on a small ext4 image mounted from a loop device
# with read-ahead off and an empty page cache, so a page of the copy is resident only if the agent touched it (the
# kernel's fault-around maps only pages that are already cached). The touched pages of .text and .rodata, with the
# unstripped binary's symbols and the link map (UPLINK_LINK_MAP of build-release.sh), give the functions and constants
# the agent uses at start and when idle; their names, one per line and sorted, go to the order file. Needs root
# (losetup, mount), mkfs.ext4, readelf, nm, dd and od. BINARY must be the stripped twin of --unstripped, linked with
# the map given.
set -euo pipefail

seconds="${UPLINK_IDLE_SECONDS:-60}"
order_file="" unstripped="" map=""
while [ $# -gt 1 ]; do
    case "$1" in
        --order-file) order_file="$2"; shift 2 ;;
        --unstripped) unstripped="$2"; shift 2 ;;
        --map) map="$2"; shift 2 ;;
        *) break ;;
    esac
done
[ $# -eq 1 ] || { sed -n '2,9p' "$0" >&2; exit 2; }
binary="$(readlink -f "$1")"
[ -x "$binary" ] || { echo "idle-memory: no executable at $1" >&2; exit 1; }
if [ -n "$order_file" ]; then
    if [ -z "$unstripped" ] || [ -z "$map" ]; then
        echo "idle-memory: --order-file needs --unstripped and --map" >&2
        exit 2
    fi
    [ "$(id -u)" -eq 0 ] || { echo "idle-memory: --order-file needs root (loop device, mount)" >&2; exit 1; }
fi

work="$(mktemp -d "${TMPDIR:-/tmp}/uplink-idle.XXXXXX")"
collector_pid="" agent_pid="" loop="" mounted=""
cleanup() {
    [ -n "$agent_pid" ] && kill -TERM "$agent_pid" 2>/dev/null && wait "$agent_pid" 2>/dev/null
    [ -n "$collector_pid" ] && kill -TERM "$collector_pid" 2>/dev/null && wait "$collector_pid" 2>/dev/null
    [ -n "$mounted" ] && umount "$work/mnt"
    [ -n "$loop" ] && losetup -d "$loop"
    rm -rf "$work"
}
trap cleanup EXIT

agent_binary="$binary"
if [ -n "$order_file" ]; then
    truncate -s "$(( $(stat -c %s "$binary") / 1048576 + 32 ))M" "$work/image"
    mkfs.ext4 -q -F "$work/image"
    loop="$(losetup --find --show "$work/image")"
    blockdev --setra 0 "$loop"
    mkdir "$work/mnt"
    mount "$loop" "$work/mnt" && mounted=1
    cp "$binary" "$work/mnt/uplink"
    # Remount: the copy's pages leave the page cache, so the agent starts from a cold file.
    umount "$work/mnt" && mounted=""
    mount "$loop" "$work/mnt" && mounted=1
    agent_binary="$work/mnt/uplink"
fi

port=$(( 20000 + RANDOM % 20000 ))
mkdir -p "$work/collector" "$work/state"
cat >"$work/collector.yaml" <<EOF
collector:
  listen: 127.0.0.1:$port
  data_dir: $work/collector
  stdout: false
  jsonl: true
EOF
cat >"$work/agent.yaml" <<EOF
agent:
  id: idle-memory
  state_dir: $work/state
buffer:
  max_bytes: 16MiB
uplink:
  url: http://127.0.0.1:$port
sources:
EOF
for kind in cpu memory load uptime network diskio disk thermal hwmon power; do
    printf '  - { name: %s, type: %s, interval: 10s }\n' "$kind" "$kind" >>"$work/agent.yaml"
done

"$binary" collector --config "$work/collector.yaml" >"$work/collector.log" 2>&1 &
collector_pid=$!
sleep 2
"$agent_binary" run --config "$work/agent.yaml" >"$work/agent.log" 2>&1 &
agent_pid=$!
sleep "$seconds"
kill -0 "$agent_pid" 2>/dev/null || { echo "idle-memory: the agent exited:" >&2; cat "$work/agent.log" >&2; exit 1; }

echo "idle agent after $seconds s ($(wc -l <"$work/collector/records.jsonl" 2>/dev/null || echo 0) records stored): $(
    grep -E '^(VmRSS|RssAnon|RssFile):' "/proc/$agent_pid/status" | tr -s ' \t' ' ' | tr '\n' ' ')"
echo "resident per mapping (kB):"
awk '/^[0-9a-f]+-[0-9a-f]+ / { name = ($6 == "" ? "[anon]" : $6) " " $2 } /^Rss:/ && $2 > 0 { rss[name] += $2 }
     END { for (n in rss) printf "  %7d  %s\n", rss[n], n }' "/proc/$agent_pid/smaps" | sort -rn | head -n 12

if [ -n "$order_file" ]; then
    # Resident pages of the copy, as file page numbers.
    while read -r range perms offset _ _ path; do
        [ "$path" = "$agent_binary" ] || continue
        start=$(( 16#${range%-*} )) end=$(( 16#${range#*-} ))
        dd if="/proc/$agent_pid/pagemap" bs=65536 iflag=skip_bytes,count_bytes status=none \
            skip=$(( start / 4096 * 8 )) count=$(( (end - start) / 4096 * 8 )) |
            od -An -v -t x8 | tr -s ' ' '\n' | grep -v '^$' |
            awk -v first=$(( 16#$offset / 4096 )) '{ if (substr($1, 1, 1) ~ /[89a-f]/) print first + NR - 1 }'
    done <"/proc/$agent_pid/maps" >"$work/pages"
    echo "idle-memory: $(wc -l <"$work/pages") pages of the binary touched"
    # Output sections to look at: name, address, file offset.
    LC_ALL=C readelf -SW "$unstripped" |
        sed -n 's/^ *\[ *[0-9]*\] \(\.text[^ ]*\|\.rodata\) .* \([0-9a-f]\{16\}\) \([0-9a-f]\{6,\}\) .*/\1 \2 \3/p' \
        >"$work/sections"
    LC_ALL=C nm -n --defined-only "$unstripped" >"$work/symbols"
    # For every input section of .text, .text.private and .rodata on a touched page, one symbol defined in it (a global
    # one, or a local one whose name is unique, so that naming it moves no other section). A section of three pages
    # or more counts only if a page entirely inside it was touched: a touched page at its edge may be a neighbour's.
    LC_ALL=C awk '
        function hex(s,    i, n) {
            n = 0; s = tolower(s)
            for (i = 1; i <= length(s); i++) n = n * 16 + index("0123456789abcdef", substr(s, i, 1)) - 1
            return n
        }
        FILENAME == ARGV[1] { touched[$1] = 1; next }
        FILENAME == ARGV[2] { delta[$1] = hex($2) - hex($3); next }
        FILENAME == ARGV[3] {
            if (NF >= 3) { n = ++nsym; saddr[n] = hex($1); stype[n] = $2; sname[n] = $3; count[$3]++ }
            next
        }
        FILENAME == ARGV[4] {
            if ($0 !~ /^ *[0-9a-f]+ +[0-9a-f]+ +[0-9a-f]+ +[0-9]+ /) next
            rest = $0; sub(/^ *[0-9a-f]+ +[0-9a-f]+ +[0-9a-f]+ +[0-9]+ /, "", rest)
            if (rest !~ /^ /) { out = rest; next }          # an output section
            if (rest !~ /^        [^ ]/ || !(out in delta)) next   # input sections of the sections above
            a = hex($1); s = hex($3); if (s == 0) next
            off = a - delta[out]; hot = 0
            if (s >= 3 * 4096) {
                for (p = int((off + 4095) / 4096); p < int((off + s) / 4096); p++) if (p in touched) hot = 1
            } else {
                for (p = int(off / 4096); p <= int((off + s - 1) / 4096); p++) if (p in touched) hot = 1
            }
            if (hot) { nhot++; hota[nhot] = a; hots[nhot] = s; hotbytes += s }
            next
        }
        END {
            # Sections and symbols are both in address order: walk them together.
            j = 1
            for (i = 1; i <= nhot; i++) {
                while (j <= nsym && saddr[j] < hota[i]) j++
                best = ""; fallback = ""
                for (k = j; k <= nsym && saddr[k] < hota[i] + hots[i]; k++) {
                    if (stype[k] ~ /^[A-Z]$/ || count[sname[k]] == 1) { best = sname[k]; break }
                    if (fallback == "") fallback = sname[k]
                }
                if (best == "") best = fallback
                if (best != "") print best
            }
            printf "idle-memory: %d sections (%.1f MB) touched\n", nhot, hotbytes / 1e6 > "/dev/stderr"
        }' "$work/pages" "$work/sections" "$work/symbols" "$map" | sort -u >"$order_file"
    echo "idle-memory: $(wc -l <"$order_file") symbols written to $order_file"
fi
