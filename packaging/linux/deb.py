"""The Debian package of a built Linux bundle, made with the system's own dpkg-deb.

    python packaging/build.py --offline --deb      # builds the bundle, then this
    python packaging/linux/deb.py dist/trinity-workbench VERSION   # an already built one

Installs the bundle to /opt/trinity-workbench, the command /usr/bin/trinity-workbench (a
link), the menu entry /usr/share/applications/trinity-workbench.desktop and its icon;
``apt remove trinity-workbench`` takes all of it away again (dpkg owns every file; the
app writes nothing under /opt: workspace, model cache and log live in the user's folders).
Depends on the system libraries Qt loads from the system (OpenGL/EGL, the X11 xcb
helpers, fontconfig, D-Bus); recommends gnome-keyring (a keychain for API keys) and
bubblewrap (the code sandbox). Test it in a clean chroot: packaging/linux/test-deb.sh.
"""

from __future__ import annotations

import os
import platform
import shutil
import subprocess
import sys
import tempfile
from pathlib import Path

NAME = "trinity-workbench"
ROOT = Path(__file__).resolve().parents[2]
DEPENDS = [
    "libc6 (>= 2.28)",
    "libgl1",
    "libegl1",
    "libfontconfig1",
    "libfreetype6",
    "libdbus-1-3",
    "libglib2.0-0",
    "libxkbcommon0",
    "libxkbcommon-x11-0",
    "libx11-6",
    "libx11-xcb1",
    "libxcb1",
    "libxcb-cursor0",
    "libxcb-icccm4",
    "libxcb-image0",
    "libxcb-keysyms1",
    "libxcb-randr0",
    "libxcb-render-util0",
    "libxcb-shape0",
    "libxcb-xinerama0",
    "libxcb-xkb1",
]
RECOMMENDS = ["gnome-keyring | kwalletmanager", "bubblewrap", "dbus-user-session"]
ARCHITECTURES = {"x86_64": "amd64", "aarch64": "arm64"}


def build_deb(app: Path, version: str, out: Path) -> Path:
    if shutil.which("dpkg-deb") is None:
        raise SystemExit("deb: dpkg-deb is not installed (apt-get install dpkg)")
    arch = ARCHITECTURES.get(platform.machine(), platform.machine())
    deb = out / f"{NAME}_{version}_{arch}.deb"
    with tempfile.TemporaryDirectory(prefix="trinity-deb-", dir=out) as tmp:
        root = Path(tmp) / "root"
        opt = root / "opt" / NAME
        shutil.copytree(app, opt, symlinks=True)
        for loose in ("install.sh",):  # the tarball's per-user installer: dpkg installs here
            (opt / loose).unlink(missing_ok=True)
        (root / "usr" / "bin").mkdir(parents=True)
        os.symlink(f"/opt/{NAME}/{NAME}", root / "usr" / "bin" / NAME)
        applications = root / "usr" / "share" / "applications"
        applications.mkdir(parents=True)
        entry = (ROOT / "packaging" / "linux" / f"{NAME}.desktop").read_text()
        entry = "\n".join(
            f"Exec=/opt/{NAME}/{NAME}" if line.startswith("Exec=") else line
            for line in entry.splitlines()
        )
        (applications / f"{NAME}.desktop").write_text(entry + "\n")
        icons = root / "usr" / "share" / "icons" / "hicolor" / "256x256" / "apps"
        icons.mkdir(parents=True)
        shutil.copy(ROOT / "workbench" / "resources" / "icons" / f"{NAME}.png", icons)
        size_kib = (
            sum(p.stat().st_size for p in root.rglob("*") if p.is_file() and not p.is_symlink())
            // 1024
        )
        control = root / "DEBIAN"
        control.mkdir()
        (control / "control").write_text(
            f"Package: {NAME}\n"
            f"Version: {version}\n"
            f"Architecture: {arch}\n"
            "Maintainer: Trinity Workbench developers <trinity-workbench@users.noreply.github.com>\n"
            f"Installed-Size: {size_kib}\n"
            f"Depends: {', '.join(DEPENDS)}\n"
            f"Recommends: {', '.join(RECOMMENDS)}\n"
            "Section: science\n"
            "Priority: optional\n"
            "Description: Desktop workbench for evolved LLM coordinators (TRINITY)\n"
            " Train a tiny coordinator that makes several LLMs work as one team.\n"
            " The offline edition carries a small model and works with no network.\n"
        )
        # the menu and icon caches, where the desktop has them (not in a bare container)
        hook = (
            "#!/bin/sh\nset -e\n"
            "if command -v update-desktop-database >/dev/null 2>&1; then\n"
            "    update-desktop-database -q /usr/share/applications || true\nfi\n"
            "if command -v gtk-update-icon-cache >/dev/null 2>&1; then\n"
            "    gtk-update-icon-cache -q -t /usr/share/icons/hicolor || true\nfi\n"
        )
        for script in ("postinst", "postrm"):
            (control / script).write_text(hook)
            (control / script).chmod(0o755)
        subprocess.run(
            ["dpkg-deb", "--root-owner-group", "-Zgzip", "-z6", "--build", str(root), str(deb)],
            check=True,
            stdout=subprocess.DEVNULL,
        )
    return deb


if __name__ == "__main__":
    if len(sys.argv) != 3:
        raise SystemExit(__doc__)
    print(build_deb(Path(sys.argv[1]), sys.argv[2], Path(sys.argv[1]).parent))
