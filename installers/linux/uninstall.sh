#!/bin/sh
# Remove what install.sh installed for the current user.
#
#   uninstall.sh [--prefix DIR] [--purge]
#
# Stops and removes the user service, then removes lib/localllm, the bin/localllm link, the
# menu entry and the icon under the prefix (default: the one this copy was installed under,
# else ~/.local). Models, chats, settings and logs stay, unless --purge: then the data folder
# (with the default model store and logs) and the config folder go too. A model store moved
# elsewhere with LOCALLLM_MODELS is never deleted; the script names it.
set -eu

usage() { awk 'NR > 1 && /^#/ { sub(/^# ?/, ""); print; next } NR > 1 { exit }' "$0"; }
die() { echo "uninstall.sh: $*" >&2; exit 1; }

HERE=$(cd "$(dirname "$0")" && pwd)
case "$HERE" in
    */lib/localllm/linux) PREFIX="${HERE%/lib/localllm/linux}" ;;  # the installed copy
    *) PREFIX="$HOME/.local" ;;
esac
PURGE=0
while [ $# -gt 0 ]; do
    case "$1" in
        --prefix) [ $# -ge 2 ] || die "--prefix needs a directory"; PREFIX="$2"; shift 2 ;;
        --purge) PURGE=1; shift ;;
        -h|--help) usage; exit 0 ;;
        *) die "unknown option $1 (see --help)" ;;
    esac
done

LIB="$PREFIX/lib/localllm"
BIN="$PREFIX/bin"
UNITS="${XDG_CONFIG_HOME:-$HOME/.config}/systemd/user"
UNIT="$UNITS/localllm.service"
SYSTEMCTL="${SYSTEMCTL:-systemctl}"

# The store the service was pointed at, read before its unit goes.
MOVED_STORE=""
if [ -f "$UNIT" ]; then
    MOVED_STORE=$(sed -n 's/^Environment="LOCALLLM_MODELS=\(.*\)"$/\1/p' "$UNIT" | sed 's/%%/%/g')
fi
MOVED_STORE="${MOVED_STORE:-${LOCALLLM_MODELS:-}}"

if "$SYSTEMCTL" --user show-environment >/dev/null 2>&1; then
    "$SYSTEMCTL" --user disable --now localllm.service >/dev/null 2>&1 || true
fi
rm -f "$UNIT" "$UNITS/default.target.wants/localllm.service"
if "$SYSTEMCTL" --user show-environment >/dev/null 2>&1; then
    "$SYSTEMCTL" --user daemon-reload || true
fi

if [ -L "$BIN/localllm" ] && [ "$(readlink "$BIN/localllm")" = "$LIB/localllm" ]; then
    rm -f "$BIN/localllm"
fi
rm -f "$PREFIX/share/applications/localllm.desktop"
rm -f "$PREFIX/share/icons/hicolor/scalable/apps/localllm.svg"
if [ -d "$LIB" ]; then
    [ -d "$LIB/_internal" ] || die "$LIB does not look like a localllm bundle; left it alone"
    rm -rf "$LIB"
fi
echo "removed localllm from $PREFIX"

DATA="${LOCALLLM_DATA:-${XDG_DATA_HOME:-$HOME/.local/share}/localllm}"
CONFIG="${LOCALLLM_CONFIG:-${XDG_CONFIG_HOME:-$HOME/.config}/localllm}"
if [ "$PURGE" = 1 ]; then
    rm -rf "$DATA" "$CONFIG"
    echo "removed your models, chats, settings and logs ($DATA, $CONFIG)"
else
    echo "kept your models, chats, settings and logs ($DATA, $CONFIG); --purge removes them"
fi
if [ -n "$MOVED_STORE" ] && [ -d "$MOVED_STORE" ]; then
    echo "kept the model store in $MOVED_STORE (set by LOCALLLM_MODELS); delete it yourself"
fi
