#!/bin/sh
# Installs (or uninstalls) uplink on a systemd machine: the binary, a default /etc/uplink/uplink.yaml (never
# overwriting one), the `uplink` system user, the systemd units; validates the configuration, then enables and
# starts uplink.service.
#
#   deploy/install.sh                              # binary from .build/dist (deploy/build-release.sh)
#   deploy/install.sh --binary ./uplink-0.1.0-aarch64
#   DESTDIR=/tmp/stage deploy/install.sh           # stage into a directory: no user, no systemctl
#   deploy/install.sh --no-start                   # install, but do not enable or start anything
#   deploy/install.sh --uninstall                  # remove binary and units; keep /etc/uplink and /var/lib/uplink
#
# Options (or environment variables):
#   --destdir DIR      DESTDIR     stage everything below DIR (packaging, tests); skips user creation and systemctl
#   --prefix DIR       PREFIX      default /usr: DIR/bin/uplink, DIR/lib/systemd/system, DIR/share/doc/uplink
#   --sysconfdir DIR   SYSCONFDIR  default /etc: DIR/uplink/uplink.yaml and collector.yaml
#   --binary FILE      UPLINK_BINARY  the uplink binary to install (default: the newest .build/dist/uplink-*-<arch>,
#                                     or an `uplink` file next to this script)
#   --no-start                     install only: no enable, no start
#   --uninstall                    remove what was installed, except configuration, state and the user
set -eu

here="$(cd "$(dirname "$0")" && pwd)"
DESTDIR="${DESTDIR:-}"
PREFIX="${PREFIX:-/usr}"
SYSCONFDIR="${SYSCONFDIR:-/etc}"
UPLINK_BINARY="${UPLINK_BINARY:-}"
start=yes
action=install

say() { echo "install: $*"; }
fail() { echo "install: error: $*" >&2; exit 1; }

while [ $# -gt 0 ]; do
    case "$1" in
        --destdir) [ $# -ge 2 ] || fail "$1 needs a value"; DESTDIR="$2"; shift 2 ;;
        --destdir=*) DESTDIR="${1#*=}"; shift ;;
        --prefix) [ $# -ge 2 ] || fail "$1 needs a value"; PREFIX="$2"; shift 2 ;;
        --prefix=*) PREFIX="${1#*=}"; shift ;;
        --sysconfdir) [ $# -ge 2 ] || fail "$1 needs a value"; SYSCONFDIR="$2"; shift 2 ;;
        --sysconfdir=*) SYSCONFDIR="${1#*=}"; shift ;;
        --binary) [ $# -ge 2 ] || fail "$1 needs a value"; UPLINK_BINARY="$2"; shift 2 ;;
        --binary=*) UPLINK_BINARY="${1#*=}"; shift ;;
        --no-start) start=no; shift ;;
        --uninstall) action=uninstall; shift ;;
        -h|--help) sed -n '2,/^set -eu/p' "$0" | sed -e '$d' -e 's/^# \{0,1\}//'; exit 0 ;;
        *) fail "unknown option '$1' (see --help)" ;;
    esac
done

case "$PREFIX" in /*) ;; *) fail "--prefix must be an absolute path, got '$PREFIX'" ;; esac
case "$SYSCONFDIR" in /*) ;; *) fail "--sysconfdir must be an absolute path, got '$SYSCONFDIR'" ;; esac
PREFIX="${PREFIX%/}"
SYSCONFDIR="${SYSCONFDIR%/}"

bindir="$PREFIX/bin"
unitdir="$PREFIX/lib/systemd/system"
docdir="$PREFIX/share/doc/uplink"
confdir="$SYSCONFDIR/uplink"
units="uplink.service uplink-collector.service"

# systemctl only for a real installation on a machine running systemd.
use_systemctl=no
if [ -z "$DESTDIR" ] && command -v systemctl >/dev/null 2>&1 && [ -d /run/systemd/system ]; then
    use_systemctl=yes
fi
if [ -z "$DESTDIR" ] && [ "$(id -u)" -ne 0 ]; then
    fail "installing into / needs root (or set DESTDIR to stage into a directory)"
fi

do_uninstall() {
    if [ "$use_systemctl" = yes ]; then
        for unit in $units; do
            systemctl disable --now "$unit" >/dev/null 2>&1 || true
        done
    fi
    for file in "$bindir/uplink" "$unitdir/uplink.service" "$unitdir/uplink-collector.service" "$docdir/deploy.md"; do
        if [ -e "$DESTDIR$file" ]; then
            rm -f "$DESTDIR$file"
            say "removed $DESTDIR$file"
        fi
    done
    rmdir "$DESTDIR$docdir" 2>/dev/null || true
    [ "$use_systemctl" = yes ] && systemctl daemon-reload
    say "kept $DESTDIR$confdir (configuration), /var/lib/uplink and /var/lib/uplink-collector (state) and the uplink user"
    say "remove them with: rm -r $confdir /var/lib/uplink /var/lib/uplink-collector; deluser --system uplink"
}

find_binary() {
    if [ -n "$UPLINK_BINARY" ]; then
        echo "$UPLINK_BINARY"
        return
    fi
    if [ -f "$here/uplink" ]; then
        echo "$here/uplink"
        return
    fi
    # The newest release build for this machine (deploy/build-release.sh).
    # shellcheck disable=SC2012  # names are ours: uplink-<version>-<arch>
    newest="$(ls -t "$here/../.build/dist/uplink-"*"-$(uname -m)" 2>/dev/null | head -n 1 || true)"
    [ -n "$newest" ] || fail "no binary given and none in .build/dist: run deploy/build-release.sh, or pass --binary FILE"
    echo "$newest"
}

# install_file MODE SOURCE TARGET: copies through a temporary file, so a running binary is replaced, not rewritten.
install_file() {
    mkdir -p "$(dirname "$3")"
    cp "$2" "$3.new"
    chmod "$1" "$3.new"
    mv -f "$3.new" "$3"
    say "installed $3"
}

install_config() {
    source_file="$1"
    target="$DESTDIR$confdir/$(basename "$source_file")"
    if [ -e "$target" ]; then
        say "kept the existing $target"
        cp "$source_file" "$target.dist"
        say "the default it would have been is in $target.dist"
    else
        install_file 0644 "$source_file" "$target"
    fi
}

create_user() {
    if [ -n "$DESTDIR" ]; then
        say "DESTDIR set: not creating the uplink user"
        return
    fi
    if id uplink >/dev/null 2>&1; then
        say "user uplink exists"
        return
    fi
    if command -v adduser >/dev/null 2>&1 && adduser --help 2>&1 | grep -q -- '--system'; then
        adduser --system --group --no-create-home --home /var/lib/uplink --shell /usr/sbin/nologin \
            --gecos "uplink telemetry agent" uplink >/dev/null
    else
        useradd --system --user-group --no-create-home --home-dir /var/lib/uplink --shell /usr/sbin/nologin \
            --comment "uplink telemetry agent" uplink
    fi
    say "created the system user uplink"
}

validate() {
    binary="$DESTDIR$bindir/uplink"
    config="$DESTDIR$confdir/uplink.yaml"
    if ! "$binary" --version >/dev/null 2>&1; then
        say "$binary does not run on this machine (another architecture?): not validating $config"
        return
    fi
    if ! "$binary" validate --config "$config"; then
        fail "$config is not valid (see above); fix it, then run: $bindir/uplink validate --config $confdir/uplink.yaml"
    fi
}

do_install() {
    binary="$(find_binary)"
    [ -f "$binary" ] || fail "no binary at $binary"
    install_file 0755 "$binary" "$DESTDIR$bindir/uplink"
    install_config "$here/uplink.yaml"
    install_config "$here/collector.yaml"
    for unit in $units; do
        mkdir -p "$DESTDIR$unitdir"
        sed -e "s|/usr/bin/uplink|$bindir/uplink|g" -e "s|/etc/uplink/|$confdir/|g" \
            -e "s|file:/usr/share/doc/uplink/|file:$docdir/|g" \
            "$here/systemd/$unit" >"$DESTDIR$unitdir/$unit.new"
        chmod 0644 "$DESTDIR$unitdir/$unit.new"
        mv -f "$DESTDIR$unitdir/$unit.new" "$DESTDIR$unitdir/$unit"
        say "installed $DESTDIR$unitdir/$unit"
    done
    if [ -f "$here/../docs/deploy.md" ]; then
        install_file 0644 "$here/../docs/deploy.md" "$DESTDIR$docdir/deploy.md"
    fi
    create_user
    validate

    if [ "$start" = no ]; then
        say "--no-start: not enabling or starting uplink.service"
    elif [ -n "$DESTDIR" ]; then
        say "DESTDIR set: not enabling or starting uplink.service"
    elif [ "$use_systemctl" = no ]; then
        say "systemd is not running here (or systemctl is missing): start it with $bindir/uplink run --config $confdir/uplink.yaml"
    else
        systemctl daemon-reload
        systemctl enable uplink.service
        # restart, not start: an upgrade must run the new binary.
        systemctl restart uplink.service
        say "uplink.service is $(systemctl is-active uplink.service)"
        say "the collector unit is installed but not enabled: systemctl enable --now uplink-collector"
    fi
}

"do_$action"
