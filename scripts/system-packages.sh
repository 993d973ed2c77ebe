#!/usr/bin/env bash
# The system packages the pip install needs on Debian and Ubuntu (the packaged installers
# carry their own): Qt's runtime libraries and fonts for the desktop app, a virtual display
# (xvfb) for headless use and the GUI tests, a Secret Service keyring (gnome-keyring on
# dbus) for API keys, bubblewrap for the code sandbox, tesseract-ocr for the screenshot
# tests, binutils and dpkg for building the installers (PyInstaller reads libraries with
# objdump, the build strips them, dpkg-deb packs the .deb), and for the AppImage gcc, the
# static libraries its runtime links (squashfuse, libfuse3 and squashfuse's compressors),
# squashfs-tools (mksquashfs) and fuse3 (fusermount3, to mount it as a user). .ci/run
# calls this script; docs/getting-started.md shows it to users.
#   sudo bash scripts/system-packages.sh
set -euo pipefail
export DEBIAN_FRONTEND=noninteractive
apt-get update -qq
apt-get install -y -qq --no-install-recommends \
    libegl1 libgl1 libxkbcommon-x11-0 libxcb-cursor0 libxcb-icccm4 libxcb-keysyms1 \
    libxcb-image0 libxcb-render-util0 libxcb-shape0 libxcb-xinerama0 libfontconfig1 \
    libdbus-1-3 fonts-dejavu-core dbus gnome-keyring xvfb bubblewrap tesseract-ocr \
    binutils dpkg \
    gcc libc6-dev squashfs-tools libsquashfuse-dev libfuse3-dev libzstd-dev zlib1g-dev \
    liblzma-dev liblz4-dev liblzo2-dev fuse3 >/dev/null
