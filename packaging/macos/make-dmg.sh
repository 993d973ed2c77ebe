#!/bin/sh
# Make the macOS disk image from the app bundle that `python packaging/build.py` built:
#   sh packaging/macos/make-dmg.sh [VERSION]
# Result: dist/trinity-workbench-VERSION-macos-ARCH.dmg (drag the app into Applications).
# Unsigned: for distribution outside your machine, sign and notarise the .app first
# (codesign --deep --options runtime, then xcrun notarytool).
set -eu
version=${1:-0.1.0}
app="dist/Trinity Workbench.app"
[ -d "$app" ] || { echo "make-dmg: $app not found: run python packaging/build.py first" >&2; exit 2; }
stage=$(mktemp -d)
cp -R "$app" "$stage/"
ln -s /Applications "$stage/Applications"
out="dist/trinity-workbench-$version-macos-$(uname -m).dmg"
rm -f "$out"
hdiutil create -volname "Trinity Workbench" -srcfolder "$stage" -ov -format UDZO "$out"
rm -rf "$stage"
echo "disk image: $out"
