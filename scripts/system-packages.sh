#!/usr/bin/env bash
# The system packages on Debian and Ubuntu (the packaged installers carry their own).
#
#   sudo bash scripts/system-packages.sh           what the pip install needs to run: Qt's
#       runtime libraries and fonts for the desktop app, a virtual display (xvfb) for
#       headless use, a Secret Service keyring (gnome-keyring on dbus) for API keys,
#       bubblewrap for the code sandbox, tesseract-ocr (the screenshot tests read pages
#       back with it)
#   sudo bash scripts/system-packages.sh --build   also the tools that build the installers
#       (and that the test suite's packaging tests use): binutils and dpkg (PyInstaller
#       reads libraries with objdump, the build strips them, dpkg-deb packs the .deb)
#
# .ci/run and the installers workflow call it with --build; docs/getting-started.md shows
# users the first form, docs/testing.md developers the second.
set -euo pipefail
build=0
case "${1:-}" in
    "") ;;
    --build) build=1 ;;
    *) echo "usage: scripts/system-packages.sh [--build]" >&2; exit 2 ;;
esac
packages=(
    libegl1 libgl1 libxkbcommon-x11-0 libxcb-cursor0 libxcb-icccm4 libxcb-keysyms1
    libxcb-image0 libxcb-render-util0 libxcb-shape0 libxcb-xinerama0 libfontconfig1
    libdbus-1-3 fonts-dejavu-core dbus gnome-keyring xvfb bubblewrap tesseract-ocr
)
if [ "$build" = 1 ]; then
    packages+=(
        binutils dpkg
    )
fi
export DEBIAN_FRONTEND=noninteractive
apt-get update -qq
apt-get install -y -qq --no-install-recommends "${packages[@]}" >/dev/null
