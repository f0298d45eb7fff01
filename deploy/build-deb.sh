#!/usr/bin/env bash
# Builds uplink_<version>_<arch>.deb with dpkg-deb (no debhelper needed): the release binary, both systemd units,
# /etc/uplink/uplink.yaml and collector.yaml as conffiles, and maintainer scripts that create the `uplink` system
# user and enable uplink.service.
#
#   deploy/build-deb.sh                               # builds the release binary first (deploy/build-release.sh)
#   UPLINK_BINARY=.build/dist/uplink-0.1.0-x86_64 deploy/build-deb.sh
#
# Environment:
#   UPLINK_BINARY     the binary to package (default: build one with deploy/build-release.sh)
#   UPLINK_DIST_DIR   where to put the .deb (default: .build/dist)
#   UPLINK_DEB_ARCH   Debian architecture (default: from the binary's ELF header; amd64, arm64, armhf)
#   UPLINK_MAINTAINER the Maintainer field (default: uplink maintainers <uplink@example.invalid>)
#
# Prints the path of the .deb as its last line.
set -euo pipefail
cd "$(dirname "$0")/.."
deploy="$PWD/deploy"

fail() { echo "build-deb: error: $*" >&2; exit 1; }
command -v dpkg-deb >/dev/null 2>&1 || fail "dpkg-deb is missing (apt-get install dpkg)"

dist_dir="${UPLINK_DIST_DIR:-.build/dist}"
binary="${UPLINK_BINARY:-}"
if [ -z "$binary" ]; then
    binary="$(UPLINK_DIST_DIR="$dist_dir" "$deploy/build-release.sh" | tail -n 1)"
fi
[ -f "$binary" ] || fail "no binary at $binary"

machine="$(LC_ALL=C readelf -h "$binary" | sed -n 's/^ *Machine: *//p')"
case "$machine" in
    *X86-64*) elf_arch=amd64 ;;
    *AArch64*) elf_arch=arm64 ;;
    *ARM*) elf_arch=armhf ;;
    *) elf_arch="$(dpkg --print-architecture)" ;;
esac
arch="${UPLINK_DEB_ARCH:-$elf_arch}"

# The version: uplink --version, or (cross-built binary) the name build-release.sh gave it.
if ! version="$("$binary" --version 2>/dev/null)"; then
    version="$(basename "$binary" | sed -n 's/^uplink-\([0-9][^-]*\)-.*/\1/p')"
fi
[ -n "$version" ] || fail "cannot determine the version of $binary"

staging="$(mktemp -d "${TMPDIR:-/tmp}/uplink-deb.XXXXXX")"
trap 'rm -rf "$staging"' EXIT
root="$staging/root"
mkdir -p "$root/DEBIAN"

# The file layout is install.sh's, staged: /usr/bin/uplink, /usr/lib/systemd/system/*.service,
# /etc/uplink/*.yaml, /usr/share/doc/uplink/deploy.md.
DESTDIR="$root" PREFIX=/usr SYSCONFDIR=/etc UPLINK_BINARY="$binary" sh "$deploy/install.sh" --no-start >&2
rm -f "$root/etc/uplink/"*.dist

# Depends: the packages that own the shared libraries the binary needs (libyaml-0-2, libzstd1, libc6, libstdc++6, ...).
# Recommends: libsystemd0, which the journald source loads with dlopen when it first opens a journal (the binary does
# not link it, so readelf does not list it).
depends="libyaml-0-2"
if [ "$arch" = "$(dpkg --print-architecture)" ]; then
    for library in $(LC_ALL=C readelf -d "$binary" | sed -n 's/.*(NEEDED).*\[\(.*\)\]/\1/p'); do
        # awk reads to the end: an early exit would SIGPIPE ldconfig and, with pipefail, fail the script (exit 141).
        path="$(ldconfig -p | awk -v lib="$library" '$1 == lib && !found { print $NF; found = 1 }')"
        [ -n "$path" ] || continue
        owner="$(dpkg -S "$(readlink -f "$path")" 2>/dev/null | sed -n '1s/:.*//p')" \
            || owner="$(dpkg -S "$path" 2>/dev/null | sed -n '1s/:.*//p')" || true
        [ -n "$owner" ] || continue
        case ", $depends, " in *", $owner, "*) ;; *) depends="$depends, $owner" ;; esac
    done
else
    # Cross-built: the packages of the libraries a glibc build links (zlib and zstd: the stream's compression;
    # libsodium: signed remote configuration).
    depends="$depends, libc6, libstdc++6, libgcc-s1, zlib1g, libzstd1, libsodium23"
fi

installed_size="$(du -sk --exclude=DEBIAN "$root" | cut -f1)"
cat >"$root/DEBIAN/control" <<EOF
Package: uplink
Version: $version
Architecture: $arch
Maintainer: ${UPLINK_MAINTAINER:-uplink maintainers <uplink@example.invalid>}
Installed-Size: $installed_size
Depends: $depends
Recommends: libsystemd0
Section: net
Priority: optional
Description: telemetry agent for edge Linux boxes
 uplink samples sensors (cpu, memory, ...) and streams every reading, without
 loss, to a collector over one long-lived HTTP upload. The package contains the
 agent (uplink.service, enabled on install) and the collector
 (uplink-collector.service, installed but not enabled).
EOF

cat >"$root/DEBIAN/conffiles" <<'EOF'
/etc/uplink/uplink.yaml
/etc/uplink/collector.yaml
EOF

cat >"$root/DEBIAN/postinst" <<'EOF'
#!/bin/sh
set -e
if [ "$1" = configure ]; then
    if ! getent passwd uplink >/dev/null; then
        adduser --system --group --no-create-home --home /var/lib/uplink --shell /usr/sbin/nologin \
            --gecos "uplink telemetry agent" uplink >/dev/null
    fi
    if ! /usr/bin/uplink validate --config /etc/uplink/uplink.yaml >/dev/null 2>&1; then
        echo "uplink: /etc/uplink/uplink.yaml is not valid; check it with: uplink validate --config /etc/uplink/uplink.yaml" >&2
    fi
fi
if [ "$1" = configure ] || [ "$1" = abort-upgrade ] || [ "$1" = abort-deconfigure ] || [ "$1" = abort-remove ]; then
    if command -v deb-systemd-helper >/dev/null 2>&1; then
        deb-systemd-helper unmask uplink.service >/dev/null || true
        # was-enabled is true on a first installation, so new installations enable the unit; an admin's
        # `systemctl disable uplink` survives upgrades.
        if deb-systemd-helper --quiet was-enabled uplink.service; then
            deb-systemd-helper enable uplink.service >/dev/null || true
        else
            deb-systemd-helper update-state uplink.service >/dev/null || true
        fi
    elif command -v systemctl >/dev/null 2>&1; then
        systemctl enable uplink.service >/dev/null 2>&1 || true
    fi
    if [ -d /run/systemd/system ]; then
        systemctl --system daemon-reload >/dev/null || true
        # An upgrade ($2 is the old version) restarts, so the new binary runs.
        if [ -n "$2" ]; then action=restart; else action=start; fi
        if command -v deb-systemd-invoke >/dev/null 2>&1; then
            deb-systemd-invoke "$action" uplink.service >/dev/null || true
        else
            systemctl "$action" uplink.service >/dev/null || true
        fi
    fi
fi
exit 0
EOF

cat >"$root/DEBIAN/prerm" <<'EOF'
#!/bin/sh
set -e
# Stop on removal; an upgrade keeps it running until postinst restarts it with the new binary.
if [ -d /run/systemd/system ] && { [ "$1" = remove ] || [ "$1" = deconfigure ]; }; then
    if command -v deb-systemd-invoke >/dev/null 2>&1; then
        deb-systemd-invoke stop uplink.service uplink-collector.service >/dev/null || true
    else
        systemctl stop uplink.service uplink-collector.service >/dev/null 2>&1 || true
    fi
fi
exit 0
EOF

cat >"$root/DEBIAN/postrm" <<'EOF'
#!/bin/sh
set -e
if [ -d /run/systemd/system ]; then
    systemctl --system daemon-reload >/dev/null || true
fi
if [ "$1" = remove ] && command -v deb-systemd-helper >/dev/null 2>&1; then
    deb-systemd-helper mask uplink.service uplink-collector.service >/dev/null || true
fi
if [ "$1" = purge ]; then
    if command -v deb-systemd-helper >/dev/null 2>&1; then
        deb-systemd-helper purge uplink.service uplink-collector.service >/dev/null || true
        deb-systemd-helper unmask uplink.service uplink-collector.service >/dev/null || true
    fi
    # State (buffer, collector records and marks) and the user go; /etc/uplink goes once dpkg removed its
    # conffiles, unless an admin put other files there (tokens).
    rm -rf /var/lib/uplink /var/lib/uplink-collector
    rm -f /etc/uplink/uplink.yaml.dist /etc/uplink/collector.yaml.dist
    rmdir /etc/uplink 2>/dev/null || true
    if getent passwd uplink >/dev/null && command -v deluser >/dev/null 2>&1; then
        deluser --system --quiet uplink >/dev/null 2>&1 || true
    fi
    if getent group uplink >/dev/null && command -v delgroup >/dev/null 2>&1; then
        delgroup --system --quiet uplink >/dev/null 2>&1 || true
    fi
fi
exit 0
EOF
chmod 0755 "$root/DEBIAN/postinst" "$root/DEBIAN/prerm" "$root/DEBIAN/postrm"
chmod 0644 "$root/DEBIAN/control" "$root/DEBIAN/conffiles"

mkdir -p "$dist_dir"
deb="$dist_dir/uplink_${version}_${arch}.deb"
dpkg-deb --root-owner-group -Zxz --build "$root" "$deb" >&2
echo "build-deb: $deb: $(stat -c %s "$deb") bytes; Depends: $depends" >&2
echo "$deb"
