#!/usr/bin/env bash
# Tests the deployment pieces end to end, without touching the machine: builds the release binary and the .deb into
# a temporary directory, checks the package's metadata, layout and conffiles with dpkg-deb --info/--contents, runs
# install.sh into a DESTDIR (install, keep an edited config, uninstall), and runs `systemd-analyze verify` on the
# units where systemd-analyze exists, and measures the idle agent's RSS and its peak while it drains a backlog.
# Prints the binary's size and its idle RSS.
#
#   deploy/test-packaging.sh
#   UPLINK_BINARY=.build/dist/uplink-0.1.0-x86_64 deploy/test-packaging.sh   # reuse a release binary
#   UPLINK_MAX_BYTES=26000000 deploy/test-packaging.sh                     # size limit (default 25 MB)
set -euo pipefail
cd "$(dirname "$0")/.."
repo="$PWD"

failures=0
pass() { echo "ok   - $*"; }
bad() { echo "FAIL - $*"; failures=$((failures + 1)); }
check() { # check DESCRIPTION COMMAND...
    local description="$1"
    shift
    if "$@"; then pass "$description"; else bad "$description"; fi
}
contains() { grep -Eq -- "$2" <<<"$1"; }

work="$(mktemp -d "${TMPDIR:-/tmp}/uplink-packaging.XXXXXX")"
trap 'rm -rf "$work"' EXIT
started=$SECONDS

# 1. The release binary: static Swift runtime, stripped, no Foundation/ICU, at most 25 MB.
if [ -n "${UPLINK_BINARY:-}" ]; then
    binary="$UPLINK_BINARY"
else
    binary="$(UPLINK_DIST_DIR="$work/dist" deploy/build-release.sh | tail -n 1)"
fi
check "release binary exists: $binary" test -x "$binary"
needed="$(LC_ALL=C readelf -d "$binary" | sed -n 's/.*(NEEDED).*\[\(.*\)\]/\1/p' | tr '\n' ' ')"
check "the binary needs no Swift, Foundation or ICU library (needs: $needed)" \
    bash -c '! grep -Eq "libswift|libFoundation|_FoundationICU|libicu|libdispatch" <<<"$1"' _ "$needed"
check "the binary runs without the Swift toolchain (ldd resolves everything outside /opt/swift)" \
    bash -c '! ldd "$1" | grep -Eq "not found|/opt/swift"' _ "$binary"
check "the binary is stripped" bash -c '! LC_ALL=C readelf -S "$1" | grep -q "\.symtab"' _ "$binary"
size=$(stat -c %s "$binary")
limit="${UPLINK_MAX_BYTES:-25000000}"
check "the binary is at most $limit bytes ($size bytes)" test "$size" -le "$limit"
if [ "$size" -gt 25000000 ]; then
    echo "WARN - the binary is $size bytes, above the 25 MB target (the limit here is UPLINK_MAX_BYTES=$limit)"
fi
version="$(env -i PATH=/usr/bin:/bin "$binary" --version)"
check "uplink --version prints a version ($version)" test -n "$version"

# 2. The .deb, built into a temporary directory.
deb="$(UPLINK_BINARY="$binary" UPLINK_DIST_DIR="$work/dist" deploy/build-deb.sh | tail -n 1)"
arch="$(dpkg --print-architecture)"
check "the package is named uplink_<version>_<arch>.deb" test "$(basename "$deb")" = "uplink_${version}_${arch}.deb"
info="$(dpkg-deb --info "$deb")"
check "control: Package: uplink" contains "$info" '^ *Package: uplink$'
check "control: Version: $version" contains "$info" "^ *Version: $version\$"
check "control: Architecture: $arch" contains "$info" "^ *Architecture: $arch\$"
check "control: Depends on libyaml-0-2" contains "$info" '^ *Depends: .*libyaml-0-2'
check "control: Recommends libsystemd0 (the journald source loads it)" contains "$info" '^ *Recommends: libsystemd0'
for file in control conffiles; do
    check "control archive has $file" contains "$info" "lines +$file( |\$)"
done
for script in postinst prerm postrm; do
    check "control archive has $script, executable" contains "$info" "lines +\\* +$script( |\$)"
done
conffiles="$(dpkg-deb --info "$deb" conffiles)"
check "conffiles lists /etc/uplink/uplink.yaml" contains "$conffiles" '^/etc/uplink/uplink\.yaml$'
check "conffiles lists /etc/uplink/collector.yaml" contains "$conffiles" '^/etc/uplink/collector\.yaml$'
postinst="$(dpkg-deb --info "$deb" postinst)"
check "postinst creates the system user" contains "$postinst" 'adduser --system --group --no-create-home'
check "postinst enables uplink.service" contains "$postinst" 'deb-systemd-helper enable uplink.service'
check "prerm stops the services" contains "$(dpkg-deb --info "$deb" prerm)" 'stop uplink.service'
postrm="$(dpkg-deb --info "$deb" postrm)"
check "postrm purge removes the state" contains "$postrm" 'rm -rf /var/lib/uplink /var/lib/uplink-collector'
check "postrm purge removes the user" contains "$postrm" 'deluser --system'
for script in postinst prerm postrm; do
    check "$script is valid sh" sh -n <(dpkg-deb --info "$deb" "$script")
done
contents="$(dpkg-deb --contents "$deb")"
check "contents: /usr/bin/uplink, 0755 root/root" contains "$contents" '^-rwxr-xr-x root/root .* \./usr/bin/uplink$'
for file in usr/lib/systemd/system/uplink.service usr/lib/systemd/system/uplink-collector.service \
    etc/uplink/uplink.yaml etc/uplink/collector.yaml usr/share/doc/uplink/deploy.md; do
    check "contents: /$file, 0644 root/root" contains "$contents" "^-rw-r--r-- root/root .* \\./$file\$"
done
files=$(grep -c '^-' <<<"$contents")
check "contents: exactly 6 files, nothing else (found $files)" test "$files" -eq 6
check "contents: nothing under /var (StateDirectory= creates it)" bash -c '! grep -q " \./var" <<<"$1"' _ "$contents"
mkdir "$work/extracted"
dpkg-deb --extract "$deb" "$work/extracted"
check "the packaged default configuration is valid" \
    "$work/extracted/usr/bin/uplink" validate --config "$work/extracted/etc/uplink/uplink.yaml"
check "the packaged collector configuration is valid" \
    "$work/extracted/usr/bin/uplink" validate --config "$work/extracted/etc/uplink/collector.yaml"
check "the packaged unit runs /usr/bin/uplink with /etc/uplink/uplink.yaml" \
    grep -q '^ExecStart=/usr/bin/uplink run --config /etc/uplink/uplink.yaml$' \
    "$work/extracted/usr/lib/systemd/system/uplink.service"

# 3. install.sh into a DESTDIR, with another prefix.
destdir="$work/destdir"
install_log="$(DESTDIR="$destdir" deploy/install.sh --prefix /usr/local --binary "$binary" 2>&1)" \
    && pass "install.sh into DESTDIR succeeds" || bad "install.sh into DESTDIR failed: $install_log"
check "install: binary at /usr/local/bin/uplink, executable" test -x "$destdir/usr/local/bin/uplink"
check "install: the installed binary is the release binary" cmp -s "$binary" "$destdir/usr/local/bin/uplink"
check "install: /etc/uplink/uplink.yaml" test -f "$destdir/etc/uplink/uplink.yaml"
check "install: /etc/uplink/uplink.yaml is the default" cmp -s deploy/uplink.yaml "$destdir/etc/uplink/uplink.yaml"
check "install: default points at http://collector.example:4318" grep -q 'http://collector.example:4318' "$destdir/etc/uplink/uplink.yaml"
for unit in uplink.service uplink-collector.service; do
    check "install: unit $unit in /usr/local/lib/systemd/system" test -f "$destdir/usr/local/lib/systemd/system/$unit"
done
check "install: units run the prefix's binary" grep -q '^ExecStart=/usr/local/bin/uplink run --config /etc/uplink/uplink.yaml$' \
    "$destdir/usr/local/lib/systemd/system/uplink.service"
check "install: validated the configuration" contains "$install_log" 'uplink.yaml: valid'
check "install: no user created under DESTDIR" contains "$install_log" 'not creating the uplink user'
check "install: nothing started under DESTDIR" contains "$install_log" 'not enabling or starting'
check "install: nothing outside DESTDIR's usr/local, etc" bash -c \
    'cd "$1" && test -z "$(find . -mindepth 1 -maxdepth 1 ! -name usr ! -name etc)" && test -z "$(find usr -mindepth 1 -maxdepth 1 ! -name local)"' _ "$destdir"

# An existing configuration is never overwritten, and an invalid one stops the installation.
echo "# edited by the operator" >>"$destdir/etc/uplink/uplink.yaml"
edited="$(cat "$destdir/etc/uplink/uplink.yaml")"
DESTDIR="$destdir" deploy/install.sh --prefix /usr/local --binary "$binary" >/dev/null 2>&1 \
    && pass "install.sh again (upgrade) succeeds" || bad "install.sh again (upgrade) failed"
check "upgrade: the edited configuration is kept" test "$(cat "$destdir/etc/uplink/uplink.yaml")" = "$edited"
check "upgrade: the new default is beside it as uplink.yaml.dist" cmp -s deploy/uplink.yaml "$destdir/etc/uplink/uplink.yaml.dist"
printf 'uplink:\n  url: ftp://nowhere\nsources: []\n' >"$destdir/etc/uplink/uplink.yaml"
if DESTDIR="$destdir" deploy/install.sh --prefix /usr/local --binary "$binary" >/dev/null 2>&1; then
    bad "install.sh with an invalid configuration should fail"
else
    pass "install.sh with an invalid configuration fails"
fi
check "invalid configuration: still not overwritten" grep -q 'ftp://nowhere' "$destdir/etc/uplink/uplink.yaml"

DESTDIR="$destdir" deploy/install.sh --prefix /usr/local --uninstall >/dev/null 2>&1 \
    && pass "install.sh --uninstall succeeds" || bad "install.sh --uninstall failed"
check "uninstall: binary removed" test ! -e "$destdir/usr/local/bin/uplink"
check "uninstall: units removed" test ! -e "$destdir/usr/local/lib/systemd/system/uplink.service" -a \
    ! -e "$destdir/usr/local/lib/systemd/system/uplink-collector.service"
check "uninstall: configuration kept" test -f "$destdir/etc/uplink/uplink.yaml"

# 4. systemd-analyze verify, against the packaged units pointing at the packaged binary.
if command -v systemd-analyze >/dev/null 2>&1; then
    mkdir "$work/units"
    for unit in uplink.service uplink-collector.service; do
        sed -e "s|/usr/bin/uplink|$work/extracted/usr/bin/uplink|g" \
            "$work/extracted/usr/lib/systemd/system/$unit" >"$work/units/$unit"
    done
    if verify="$(cd "$work/units" && SYSTEMD_LOG_COLOR=0 systemd-analyze verify ./uplink.service ./uplink-collector.service 2>&1)"; then
        if [ -n "$verify" ]; then
            bad "systemd-analyze verify: warnings: $verify"
        else
            pass "systemd-analyze verify uplink.service uplink-collector.service"
        fi
    else
        bad "systemd-analyze verify failed: $verify"
    fi
else
    echo "skip - systemd-analyze is not available here: units not verified"
fi

# 5. Idle memory: the agent with examples.yaml (embedded collector) for 25 s: long enough for the stream's zstd to
# go to its trickle level (after 10 s of a slow stream), which once sized its tables at 82 MiB.
mkdir "$work/run"
(cd "$work/run" && exec env -i PATH=/usr/bin:/bin "$binary" run --config "$repo/examples.yaml" >/dev/null 2>&1) &
agent=$!
sleep 25
rss="$(sed -n 's/^VmRSS:[[:space:]]*//p' "/proc/$agent/status" 2>/dev/null || true)"
kill -TERM "$agent" 2>/dev/null || true
if wait "$agent"; then pass "uplink run exits 0 on SIGTERM"; else bad "uplink run did not exit cleanly on SIGTERM"; fi
check "idle RSS measured ($rss)" test -n "$rss"
check "idle RSS of agent + embedded collector under 40 MiB ($rss)" test "${rss%% *}" -lt 40960

# 6. Bounded memory: the release binary tails a file ten times its ring (16 MiB) to a collector process;
# its peak RSS while it drains (VmHWM, code pages included) stays within the ring's capacity + 16 MiB.
backlog="$(deploy/backlog-memory.sh "$binary" 16 160 2>&1 || true)"
sed 's/^/     /' <<<"$backlog"
check "a backlog ten times the ring drained" contains "$backlog" "^drained in"
over="$(sed -n 's/^agent VmHWM .* = ring + \([0-9.]*\) MiB (target.*/\1/p' <<<"$backlog")"
check "VmHWM while draining it ≤ ring + 16 MiB (ring + ${over:-?} MiB)" \
    awk -v over="$over" 'BEGIN { exit !(over != "" && over + 0 <= 16) }'

echo "packaging: binary $size bytes ($(( (size + 524288) / 1048576 )) MiB), idle RSS ${rss:-unknown} (run --config examples.yaml, after 25 s)"
echo "packaging: $(basename "$deb") $(stat -c %s "$deb") bytes; $((SECONDS - started)) s"
if [ "$failures" -gt 0 ]; then
    echo "packaging: $failures check(s) failed"
    exit 1
fi
echo "packaging: all checks passed"
