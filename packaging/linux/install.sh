#!/bin/sh
# Install the unpacked Trinity Workbench for this user: a launcher in ~/.local/bin, the
# menu entry and its icon. Run from the unpacked folder: ./install.sh
set -eu
here=$(cd "$(dirname "$0")" && pwd)
mkdir -p "$HOME/.local/bin" "$HOME/.local/share/applications" "$HOME/.local/share/icons/hicolor/256x256/apps"
ln -sf "$here/trinity-workbench" "$HOME/.local/bin/trinity-workbench"
sed "s|^Exec=.*|Exec=$here/trinity-workbench|" "$here/trinity-workbench.desktop" \
  > "$HOME/.local/share/applications/trinity-workbench.desktop"
cp "$here/trinity-workbench.png" "$HOME/.local/share/icons/hicolor/256x256/apps/trinity-workbench.png"
echo "Trinity Workbench installed: find it in your applications menu, or run trinity-workbench"
