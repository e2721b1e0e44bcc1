#!/bin/sh
# Run the localllm daemon in the background at login (a LaunchAgent), and put the `localllm`
# command on the PATH. For the current user; no administrator password.
#
#   install-agent.sh [--app PATH] [--uninstall]
#
# --app: the localllm.app to use (default: /Applications/localllm.app, else ~/Applications).
# Writes ~/Library/LaunchAgents/io.localllm.daemon.plist (LOCALLLM_HOST and LOCALLLM_MODELS,
# when set here, go into it), loads it, and links ~/.local/bin/localllm to the app's command.
# --uninstall unloads and removes both; models, chats and settings stay.
set -eu

usage() { awk 'NR > 1 && /^#/ { sub(/^# ?/, ""); print; next } NR > 1 { exit }' "$0"; }
die() { echo "install-agent.sh: $*" >&2; exit 1; }

LABEL=io.localllm.daemon
PLIST="$HOME/Library/LaunchAgents/$LABEL.plist"
LINK="$HOME/.local/bin/localllm"
DOMAIN="gui/$(id -u)"
APP=""
UNINSTALL=0
while [ $# -gt 0 ]; do
    case "$1" in
        --app) [ $# -ge 2 ] || die "--app needs a path"; APP="$2"; shift 2 ;;
        --uninstall) UNINSTALL=1; shift ;;
        -h|--help) usage; exit 0 ;;
        *) die "unknown option $1 (see --help)" ;;
    esac
done

stop_agent() { launchctl bootout "$DOMAIN/$LABEL" >/dev/null 2>&1 || true; }
if [ "$UNINSTALL" = 1 ]; then
    stop_agent
    rm -f "$PLIST"
    if [ -L "$LINK" ]; then rm -f "$LINK"; fi
    echo "removed the localllm background service and $LINK"
    exit 0
fi

if [ -z "$APP" ]; then
    for place in /Applications/localllm.app "$HOME/Applications/localllm.app"; do
        if [ -d "$place" ]; then APP="$place"; break; fi
    done
fi
[ -n "$APP" ] || die "drag localllm.app to Applications first (or pass --app PATH)"
PROGRAM="$APP/Contents/MacOS/localllm"
[ -x "$PROGRAM" ] || die "$APP has no Contents/MacOS/localllm"

# Values go into XML: refuse the characters that would need escaping there.
xml_safe() {
    case "$1" in *[\<\>\&\"]*) die "$2 may not contain <, >, & or \"" ;; esac
}
LOGS="${LOCALLLM_LOGS:-$HOME/Library/Application Support/localllm/logs}"
xml_safe "$PROGRAM" "the app's path"
xml_safe "$LOGS" LOCALLLM_LOGS
ENVIRONMENT=""
for name in LOCALLLM_HOST LOCALLLM_MODELS; do
    eval "value=\${$name:-}"
    xml_safe "$value" "$name"
    [ -z "$value" ] || ENVIRONMENT="$ENVIRONMENT<key>$name</key><string>$value</string>"
done
if [ -n "$ENVIRONMENT" ]; then
    ENVIRONMENT="<key>EnvironmentVariables</key><dict>$ENVIRONMENT</dict>"
fi

mkdir -p "$LOGS" "$(dirname "$PLIST")" "$(dirname "$LINK")"
cat > "$PLIST" <<EOF
<?xml version="1.0" encoding="UTF-8"?>
<!DOCTYPE plist PUBLIC "-//Apple//DTD PLIST 1.0//EN" "http://www.apple.com/DTDs/PropertyList-1.0.dtd">
<plist version="1.0">
<dict>
    <key>Label</key><string>$LABEL</string>
    <key>ProgramArguments</key><array><string>$PROGRAM</string><string>serve</string></array>
    <key>RunAtLoad</key><true/>
    <key>KeepAlive</key><dict><key>SuccessfulExit</key><false/></dict>
    <key>ThrottleInterval</key><integer>5</integer>
    <key>ProcessType</key><string>Interactive</string>
    <key>StandardOutPath</key><string>$LOGS/daemon.log</string>
    <key>StandardErrorPath</key><string>$LOGS/daemon.log</string>
    $ENVIRONMENT
</dict>
</plist>
EOF
plutil -lint "$PLIST" >/dev/null

stop_agent  # the one running now, if any: it may be an older version
launchctl bootstrap "$DOMAIN" "$PLIST"
ln -sfn "$PROGRAM" "$LINK"
echo "the localllm daemon now runs in the background (log: $LOGS/daemon.log)"
echo "the command is $LINK"
case ":$PATH:" in
    *":$HOME/.local/bin:"*) ;;
    *) echo "note: add ~/.local/bin to your PATH: echo 'export PATH=\"\$HOME/.local/bin:\$PATH\"' >> ~/.zprofile" ;;
esac
