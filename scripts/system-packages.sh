#!/usr/bin/env bash
# The system packages the pip install needs on Debian and Ubuntu (the packaged installers
# carry their own): Qt's runtime libraries and fonts for the desktop app, a virtual display
# (xvfb) for headless use and the GUI tests, a Secret Service keyring (gnome-keyring on
# dbus) for API keys, bubblewrap for the code sandbox, tesseract-ocr for the screenshot
# tests, binutils and dpkg for building the installers (PyInstaller reads libraries with
# objdump, the build strips them, dpkg-deb packs the .deb). .ci/run calls this script;
# docs/getting-started.md shows it to users.
#   sudo bash scripts/system-packages.sh
set -euo pipefail
export DEBIAN_FRONTEND=noninteractive
apt-get update -qq
apt-get install -y -qq --no-install-recommends \
    libegl1 libgl1 libxkbcommon-x11-0 libxcb-cursor0 libxcb-icccm4 libxcb-keysyms1 \
    libxcb-image0 libxcb-render-util0 libxcb-shape0 libxcb-xinerama0 libfontconfig1 \
    libdbus-1-3 fonts-dejavu-core dbus gnome-keyring xvfb bubblewrap tesseract-ocr \
    binutils dpkg >/dev/null
