#!/usr/bin/env bash
# Forwarding benchmark of the collector's sinks (docs/deploy.md, "Forwarding to VictoriaMetrics and ClickHouse"):
# starts VictoriaMetrics and ClickHouse (Debian packages victoria-metrics, clickhouse-server) in a temporary directory
# on free loopback ports, runs `uplink-bench sinks` against them, and stops them.
#
#   deploy/bench-sinks.sh                        # builds uplink-bench in release mode (--scratch-path .build-rel)
#   UPLINK_BENCH=/path/to/uplink-bench deploy/bench-sinks.sh
#
# Environment passed on to uplink-bench: UPLINK_BENCH_SINK_RECORDS (500000), UPLINK_BENCH_LAG_SECONDS (20),
# UPLINK_BENCH_LINGER_MS (100).
set -euo pipefail
cd "$(dirname "$0")/.."

bench="${UPLINK_BENCH:-}"
if [ -z "$bench" ]; then
    swift build -c release --scratch-path .build-rel --product uplink-bench >&2
    bench=.build-rel/release/uplink-bench
fi

work="$(mktemp -d /tmp/uplink-bench-stores-XXXXXX)"
pids=()
cleanup() {
    for pid in "${pids[@]}"; do kill "$pid" 2>/dev/null || true; done
    for pid in "${pids[@]}"; do wait "$pid" 2>/dev/null || true; done
    rm -rf "$work"
}
trap cleanup EXIT

free_port() { python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1",0)); print(s.getsockname()[1]); s.close()'; }
wait_http() { for _ in $(seq 1 300); do curl -sf "$1" >/dev/null 2>&1 && return 0; sleep 0.2; done; echo "no answer from $1" >&2; return 1; }

vm_port="$(free_port)"
/usr/bin/victoria-metrics -storageDataPath "$work/vm" -httpListenAddr "127.0.0.1:$vm_port" \
    -dedup.minScrapeInterval=1ms -retentionPeriod=100y -search.latencyOffset=0s -search.disableCache \
    -loggerLevel=ERROR >"$work/vm.log" 2>&1 &
pids+=($!)

ch_port="$(free_port)"
ch_tcp_port="$(free_port)"
password=bench
mkdir -p "$work/ch/tmp"
cat >"$work/config.xml" <<XML
<?xml version="1.0"?>
<yandex>
    <logger><level>warning</level><console>1</console></logger>
    <http_port>$ch_port</http_port>
    <tcp_port>$ch_tcp_port</tcp_port>
    <listen_host>127.0.0.1</listen_host>
    <path>$work/ch/</path>
    <tmp_path>$work/ch/tmp/</tmp_path>
    <users_config>$work/users.xml</users_config>
    <default_profile>default</default_profile>
    <default_database>default</default_database>
    <mark_cache_size>5368709</mark_cache_size>
</yandex>
XML
cat >"$work/users.xml" <<XML
<?xml version="1.0"?>
<yandex>
    <profiles><default></default></profiles>
    <users><default><password>$password</password><networks><ip>127.0.0.1</ip></networks>
        <profile>default</profile><quota>default</quota></default></users>
    <quotas><default></default></quotas>
</yandex>
XML
/usr/sbin/clickhouse-server --config-file="$work/config.xml" >"$work/ch.log" 2>&1 &
pids+=($!)

wait_http "http://127.0.0.1:$vm_port/health"
wait_http "http://127.0.0.1:$ch_port/ping"

UPLINK_BENCH_VM_URL="http://127.0.0.1:$vm_port" \
UPLINK_BENCH_CLICKHOUSE_URL="http://127.0.0.1:$ch_port" \
UPLINK_BENCH_CLICKHOUSE_PASSWORD="$password" \
    "$bench" sinks
