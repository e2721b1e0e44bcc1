#!/bin/sh
# Install the localllm bundle for the current user (no root needed).
#
#   linux/install.sh [--prefix DIR] [--bundle DIR] [--no-enable]
#
# Puts, under the prefix (default ~/.local):
#   lib/localllm/                                  the bundle (replaced on upgrade)
#   bin/localllm                                   a link to lib/localllm/localllm
#   share/applications/localllm.desktop            the menu entry ("localllm app")
#   share/icons/hicolor/scalable/apps/localllm.svg its icon
# and ~/.config/systemd/user/localllm.service, the daemon as a user service, which it enables
# and starts when `systemctl --user` works (--no-enable: install it, leave it off).
# LOCALLLM_HOST and LOCALLLM_MODELS, when set here, are written into the unit.
# Run from the bundle (dist/localllm/linux/install.sh), or pass --bundle.
set -eu

usage() { awk 'NR > 1 && /^#/ { sub(/^# ?/, ""); print; next } NR > 1 { exit }' "$0"; }
die() { echo "install.sh: $*" >&2; exit 1; }

PREFIX="$HOME/.local"
BUNDLE=""
ENABLE=1
while [ $# -gt 0 ]; do
    case "$1" in
        --prefix) [ $# -ge 2 ] || die "--prefix needs a directory"; PREFIX="$2"; shift 2 ;;
        --bundle) [ $# -ge 2 ] || die "--bundle needs a directory"; BUNDLE="$2"; shift 2 ;;
        --no-enable) ENABLE=0; shift ;;
        -h|--help) usage; exit 0 ;;
        *) die "unknown option $1 (see --help)" ;;
    esac
done

HERE=$(cd "$(dirname "$0")" && pwd)
BUNDLE=$(cd "${BUNDLE:-$HERE/..}" && pwd) || die "no such directory: $BUNDLE"
if [ ! -x "$BUNDLE/localllm" ] || [ ! -d "$BUNDLE/_internal" ]; then
    die "no localllm bundle in $BUNDLE (build one: python installers/build_bundle.py)"
fi
mkdir -p "$PREFIX"
PREFIX=$(cd "$PREFIX" && pwd)
case "$PREFIX" in
    *[[:space:]\"\\\$\`%]*) die "the prefix may not contain spaces, quotes, \\, \$, \` or %: $PREFIX" ;;
esac

LIB="$PREFIX/lib/localllm"
BIN="$PREFIX/bin"
APPS="$PREFIX/share/applications"
ICONS="$PREFIX/share/icons/hicolor/scalable/apps"
UNITS="${XDG_CONFIG_HOME:-$HOME/.config}/systemd/user"
SYSTEMCTL="${SYSTEMCTL:-systemctl}"

user_systemd() { "$SYSTEMCTL" --user show-environment >/dev/null 2>&1; }

# The unit's Environment="KEY=value" lines, checked before anything is installed.
# % is systemd's escape character; quotes and backslashes would need more than that.
ENVIRONMENT=""
for name in LOCALLLM_HOST LOCALLLM_MODELS; do
    eval "value=\${$name:-}"
    case "$value" in *[\"\\]*) die "$name may not contain quotes or backslashes" ;; esac
    [ -z "$value" ] || ENVIRONMENT="${ENVIRONMENT}Environment=\"$name=$(printf '%s' "$value" | sed 's/%/%%/g')\"
"
done

# 1. The bundle. Stop a running service first: its files are about to be replaced.
if [ "$BUNDLE" != "$LIB" ]; then
    if [ -e "$BIN/localllm" ] && [ ! -L "$BIN/localllm" ]; then
        die "$BIN/localllm exists and is not ours (a pip install?); remove it or use --prefix"
    fi
    if user_systemd; then "$SYSTEMCTL" --user stop localllm.service >/dev/null 2>&1 || true; fi
    mkdir -p "$PREFIX/lib"
    rm -rf "$LIB.new"
    cp -a "$BUNDLE" "$LIB.new"
    rm -rf "$LIB"
    mv "$LIB.new" "$LIB"
fi
mkdir -p "$BIN"
ln -sfn "$LIB/localllm" "$BIN/localllm"

# 2. The menu entry and its icon.
mkdir -p "$APPS" "$ICONS"
cp "$LIB/_internal/assets/app.svg" "$ICONS/localllm.svg"
cat > "$APPS/localllm.desktop" <<EOF
[Desktop Entry]
Type=Application
Name=localllm
GenericName=Local AI models
Comment=Chat with open models that run on this computer
Exec="$LIB/localllm" app
TryExec=$LIB/localllm
Icon=localllm
Terminal=false
Categories=Utility;
Keywords=llm;ai;chat;llama;gguf;
StartupWMClass=localllm
EOF
if command -v update-desktop-database >/dev/null 2>&1; then
    update-desktop-database "$APPS" >/dev/null 2>&1 || true
fi

# 3. The daemon as a systemd user service.
mkdir -p "$UNITS"
cat > "$UNITS/localllm.service" <<EOF
[Unit]
Description=localllm daemon: local models behind an OpenAI- and Ollama-compatible API
After=network.target

[Service]
Type=simple
ExecStart="$LIB/localllm" serve
Restart=on-failure
RestartSec=3
${ENVIRONMENT}
[Install]
WantedBy=default.target
EOF

echo "installed localllm in $LIB; the command is $BIN/localllm"
case ":$PATH:" in *":$BIN:"*) ;; *) echo "note: $BIN is not on your PATH" ;; esac
if [ "$ENABLE" = 0 ]; then
    echo "the daemon's service is installed but off: systemctl --user enable --now localllm"
elif user_systemd; then
    "$SYSTEMCTL" --user daemon-reload
    "$SYSTEMCTL" --user enable localllm.service >/dev/null 2>&1
    "$SYSTEMCTL" --user restart localllm.service
    echo "the daemon runs as a user service: systemctl --user status localllm"
else
    echo "systemd user services are not available here: start the daemon with \`localllm serve\`"
    echo "(or let any localllm command start it when needed)"
fi
