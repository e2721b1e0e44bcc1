#!/bin/sh
# Pack dist/localllm.app into a disk image to drag into Applications.
#
#   installers/macos/make_dmg.sh [DIST]      (DIST: where build_bundle.py put the app; dist/)
#
# The image holds localllm.app, a link to /Applications, and "Install background service
# .command" (install-agent.sh: the daemon at login and the `localllm` command). Set
# CODESIGN_IDENTITY ("Developer ID Application: ...") to sign the app first; notarize the .dmg
# afterwards with `xcrun notarytool submit --wait` and `xcrun stapler staple` (see docs/install.md).
set -eu

HERE=$(cd "$(dirname "$0")" && pwd)
DIST=$(cd "${1:-$HERE/../../dist}" && pwd)
APP="$DIST/localllm.app"
[ -d "$APP" ] || { echo "make_dmg.sh: no $APP; run python installers/build_bundle.py" >&2; exit 1; }

VERSION=$(/usr/libexec/PlistBuddy -c "Print CFBundleShortVersionString" "$APP/Contents/Info.plist")
DMG="$DIST/localllm-$VERSION-macos-$(uname -m).dmg"

if [ -n "${CODESIGN_IDENTITY:-}" ]; then
    codesign --force --deep --options runtime --timestamp \
        --entitlements "$HERE/entitlements.plist" --sign "$CODESIGN_IDENTITY" "$APP"
    codesign --verify --strict --verbose=1 "$APP"
fi

STAGE=$(mktemp -d)
trap 'rm -rf "$STAGE"' EXIT
ditto "$APP" "$STAGE/localllm.app"
ln -s /Applications "$STAGE/Applications"
cp "$HERE/install-agent.sh" "$STAGE/Install background service.command"
chmod +x "$STAGE/Install background service.command"

rm -f "$DMG"
hdiutil create -volname "localllm $VERSION" -srcfolder "$STAGE" -fs HFS+ -format UDZO -ov "$DMG"
if [ -n "${CODESIGN_IDENTITY:-}" ]; then
    codesign --force --timestamp --sign "$CODESIGN_IDENTITY" "$DMG"
fi
echo "$DMG"
