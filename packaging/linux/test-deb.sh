#!/bin/sh
# Test the .deb as a user's machine would get it: install it with apt into a clean Debian
# chroot (which fetches its Depends and Recommends), check the command, menu entry and icon,
# run the self-test from the installed path, remove it with purge, and check nothing of it
# is left. Needs root and debootstrap; the base system is made once and reused (copied
# fresh for every run).
#
#   sudo packaging/linux/test-deb.sh dist/trinity-workbench_0.1.0_amd64.deb [BASE_DIR]
#
# In a chroot, user namespaces are refused (unshare(CLONE_NEWUSER) fails with EPERM), so
# the code sandbox (bubblewrap) cannot isolate there and its self-test line is a WARN;
# on a real installation it is a PASS.
set -eu
deb=$(realpath "$1")
base=${2:-/var/tmp/trinity-deb-test-base}
name=trinity-workbench
if [ ! -x "$base/bin/sh" ]; then
    echo "== a clean Debian base system in $base (debootstrap, once)"
    debootstrap --variant=minbase bookworm "$base" >/dev/null
fi
root=$(mktemp -d /var/tmp/trinity-deb-test.XXXXXX)
cleanup() {
    for m in dev/pts dev proc sys; do umount "$root/$m" 2>/dev/null || true; done
    rm -rf --one-file-system "$root"
}
trap cleanup EXIT
cp -a "$base/." "$root/"
mount -t proc proc "$root/proc"
mount -t sysfs sys "$root/sys"
mount --bind /dev "$root/dev"
mount --bind /dev/pts "$root/dev/pts"
cp "$deb" "$root/tmp/"
cp /etc/resolv.conf "$root/etc/resolv.conf"
in_root() { chroot "$root" env -i PATH=/usr/sbin:/usr/bin:/sbin:/bin HOME=/root LANG=C.UTF-8 "$@"; }

echo "== install $(basename "$deb") with apt (and what it depends on)"
in_root apt-get update -qq
in_root env DEBIAN_FRONTEND=noninteractive apt-get install -y -qq "/tmp/$(basename "$deb")" >/dev/null
in_root test -x "/opt/$name/$name"
in_root test "$(in_root readlink /usr/bin/$name)" = "/opt/$name/$name"
in_root grep -q "^Exec=/opt/$name/$name" "/usr/share/applications/$name.desktop"
in_root test -f "/usr/share/icons/hicolor/256x256/apps/$name.png"
echo "installed: /opt/$name, /usr/bin/$name, the menu entry and its icon"

echo "== the self-test from the installed path"
started=$(date +%s)
in_root sh -c "cd /tmp && /usr/bin/$name --self-test"
echo "self-test took $(( $(date +%s) - started )) s"

echo "== remove it (purge) and check that nothing of it is left"
in_root env DEBIAN_FRONTEND=noninteractive apt-get remove --purge -y -qq "$name" >/dev/null
for path in "/opt/$name" "/usr/bin/$name" "/usr/share/applications/$name.desktop" \
        "/usr/share/icons/hicolor/256x256/apps/$name.png"; do
    if [ -e "$root$path" ] || [ -L "$root$path" ]; then
        echo "left behind after removal: $path" >&2
        exit 1
    fi
done
if in_root dpkg -s "$name" >/dev/null 2>&1; then
    echo "dpkg still knows $name after purge" >&2
    exit 1
fi
echo "removed cleanly: nothing of $name is left"
