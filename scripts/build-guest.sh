#!/usr/bin/env bash
# Build the tiny test guest for the kvm2 real-host tests: a qcow2 disk whose GPT holds one
# FAT EFI system partition with systemd-boot, a Debian kernel and a busybox initramfs that
# runs qemu-guest-agent. Nothing is installed into the guest from the network: the kernel
# and the agent come out of Debian packages fetched with `apt-get download` and unpacked.
#
# What the guest does at boot (/init in the initramfs):
#   - loads the virtio, SATA/CD-ROM and ISO 9660 modules;
#   - finds the NoCloud seed (the volume labelled cidata that kvm2 attaches as a SATA
#     CD-ROM), copies its files to /run/seed/ and takes
#       hostname  <- meta-data  "local-hostname: NAME"
#       IPv4      <- user-data  "# test-address: A.B.C.D/NN" (optional "# test-gateway: G")
#     with no test-address line, a fallback in 192.0.2.100-249 derived from the hostname;
#   - brings the first NIC up with that address (no DHCP: the test bridge has no server);
#   - writes /run/seed-status and /run/seed-user-data.sha256 and starts qemu-ga on the
#     virtio port org.qemu.guest_agent.0, so the host reads the address through the agent.
# Boots only with UEFI and secure boot off (systemd-boot and the kernel are not signed for
# the enrolled keys), e.g. <os firmware='efi'> with the secure-boot feature disabled.
#
# Usage: scripts/build-guest.sh [--force]
#   Output in $GUEST_DIR (default <repo>/target/libvirt-host/guest): guest.qcow2,
#   guest.qcow2.sha256, build.log. A rebuild happens only when this script changes (the
#   cache key is its own sha256) or with --force.
# Environment:
#   GUEST_DIR          output directory
#   GUEST_NO_INSTALL   set to 1 to fail instead of installing the build packages
#
# Needs root for apt-get (only when a build package is missing).
set -Eeuo pipefail

REPO=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
SELF="$REPO/scripts/build-guest.sh"
OUT=$(realpath -m "${GUEST_DIR:-$REPO/target/libvirt-host/guest}")
WORK=$OUT/work
LOG=$OUT/build.log
KEY=$(sha256sum "$SELF" | cut -d' ' -f1)

# Packages the build itself runs (not the guest's contents).
BUILD_PACKAGES=(busybox-static systemd-boot-efi dosfstools mtools fdisk cpio binutils qemu-utils python3 xz-utils)

# Kernel modules, each after the modules it depends on (checked below against the
# depends= field of every .ko): virtio transport and devices, then SATA CD-ROM and ISO 9660.
MODULES=(
  virtio_ring virtio virtio_pci_legacy_dev virtio_pci_modern_dev virtio_pci
  failover net_failover virtio_net virtio_console virtio_blk
  scsi_common scsi_mod libata libahci ahci cdrom sr_mod isofs
)

STEP=init
say() { printf 'build-guest: %s\n' "$*" >&2; }
fail() { say "error: $*"; exit 1; }
on_error() {
  local rc=$? line=$1
  trap - ERR
  say "failed at step '$STEP' (line $line, exit $rc)"
  if [ -s "$LOG" ]; then
    say "last 25 lines of $LOG:"
    tail -n 25 "$LOG" | sed 's/^/    /' >&2
  fi
  exit "$rc"
}
trap 'on_error $LINENO' ERR

mkdir -p "$OUT"
if [ "${1:-}" != --force ] && [ -f "$OUT/guest.qcow2" ] && [ -f "$OUT/guest.qcow2.sha256" ] \
  && [ "$(cat "$OUT/cache-key" 2>/dev/null)" = "$KEY" ]; then
  say "up to date: $OUT/guest.qcow2 (cache key ${KEY:0:12})"
  exit 0
fi
started=$SECONDS
: >"$LOG"

is_installed() {
  [ "$(dpkg-query -W -f='${Status}' "$1" 2>/dev/null || true)" = "install ok installed" ]
}

apt_install() {
  local missing=() p
  for p in "$@"; do is_installed "$p" || missing+=("$p"); done
  [ ${#missing[@]} -eq 0 ] && return 0
  [ "${GUEST_NO_INSTALL:-0}" = 1 ] && fail "missing packages: ${missing[*]} (GUEST_NO_INSTALL=1)"
  [ "$(id -u)" = 0 ] || fail "missing packages: ${missing[*]}; run as root or install them"
  say "installing: ${missing[*]}"
  export DEBIAN_FRONTEND=noninteractive
  if ! apt-get install -y -q --no-install-recommends "${missing[@]}" >>"$LOG" 2>&1; then
    apt-get update -q >>"$LOG" 2>&1
    apt-get install -y -q --no-install-recommends "${missing[@]}" >>"$LOG" 2>&1
  fi
}

STEP="install build packages"
apt_install "${BUILD_PACKAGES[@]}"

STEP="download the kernel and qemu-guest-agent packages"
rm -rf "$WORK"
mkdir -p "$WORK/debs" "$WORK/kernel" "$WORK/agent"
kernel_pkg=$(apt-cache depends linux-image-amd64 2>>"$LOG" | sed -n 's/^ *Depends: \(linux-image-[0-9][^ ]*\)$/\1/p' | head -n1)
if [ -z "$kernel_pkg" ]; then
  apt-get update -q >>"$LOG" 2>&1
  kernel_pkg=$(apt-cache depends linux-image-amd64 | sed -n 's/^ *Depends: \(linux-image-[0-9][^ ]*\)$/\1/p' | head -n1)
fi
[ -n "$kernel_pkg" ] || fail "cannot tell which kernel package linux-image-amd64 points to"
kver=${kernel_pkg#linux-image-}
(cd "$WORK/debs" && apt-get download -q "$kernel_pkg" qemu-guest-agent) >>"$LOG" 2>&1 || {
  apt-get update -q >>"$LOG" 2>&1
  (cd "$WORK/debs" && apt-get download -q "$kernel_pkg" qemu-guest-agent) >>"$LOG" 2>&1
}
dpkg-deb -x "$WORK"/debs/"$kernel_pkg"_*.deb "$WORK/kernel"
dpkg-deb -x "$WORK"/debs/qemu-guest-agent_*.deb "$WORK/agent"

STEP="install the agent's shared libraries on the build host"
# The agent's libraries are copied from this machine (the same Debian release), so the
# packages it depends on must be installed here; they are small libraries.
agent_deps=$(dpkg-deb -f "$WORK"/debs/qemu-guest-agent_*.deb Depends \
  | tr ',' '\n' | sed -e 's/|.*//' -e 's/(.*)//' -e 's/:any//' -e 's/[[:space:]]//g' | grep -v '^$' || true)
# shellcheck disable=SC2086
apt_install $agent_deps

STEP="assemble the initramfs"
root=$WORK/root
mkdir -p "$root"/{bin,sbin,usr/bin,usr/sbin,dev,proc,sys,run,tmp,mnt/seed,etc,var,lib/modules}
ln -s ../run "$root/var/run"
cp /bin/busybox "$root/bin/busybox"
for applet in $("$root/bin/busybox" --list); do
  [ -e "$root/bin/$applet" ] || ln -s busybox "$root/bin/$applet"
done
cp "$WORK/agent/usr/sbin/qemu-ga" "$root/usr/sbin/qemu-ga"
if ldd "$root/usr/sbin/qemu-ga" | grep -q 'not found'; then
  ldd "$root/usr/sbin/qemu-ga" >>"$LOG" 2>&1
  fail "qemu-ga needs libraries this machine lacks (see $LOG)"
fi
for lib in $(ldd "$root/usr/sbin/qemu-ga" | grep -o '/[^ ]*'); do
  mkdir -p "$root$(dirname "$lib")"
  cp -L "$lib" "$root$lib"
done
moddir=$WORK/kernel/lib/modules/$kver
declare -A placed=()
for m in "${MODULES[@]}"; do
  f=$(find "$moddir" \( -name "$m.ko" -o -name "$m.ko.xz" \) | head -n1)
  [ -n "$f" ] || fail "module $m is not in $kernel_pkg"
  case $f in
    *.xz) xz -dc "$f" >"$root/lib/modules/$m.ko" ;;
    *) cp "$f" "$root/lib/modules/$m.ko" ;;
  esac
  deps=$(strings -a "$root/lib/modules/$m.ko" | sed -n 's/^depends=//p' | head -n1)
  for d in ${deps//,/ }; do
    [ -n "${placed[$d]:-}" ] || fail "module $m depends on $d, which is not loaded before it"
  done
  placed[$m]=1
done
printf '%s\n' "${MODULES[@]}" >"$root/etc/modules.order"
printf 'root:x:0:0:root:/:/bin/sh\n' >"$root/etc/passwd"
printf 'root:x:0:\n' >"$root/etc/group"
printf 'tiny-guest\n' >"$root/etc/hostname"
# qemu-ga's guest-shutdown runs /sbin/shutdown; busybox has no such applet.
cat >"$root/sbin/shutdown" <<'EOF'
#!/bin/sh
for a in "$@"; do [ "$a" = -r ] && exec reboot -f; done
exec poweroff -f
EOF
cat >"$root/init" <<'EOF'
#!/bin/sh
# PID 1 of the tiny test guest (see scripts/build-guest.sh in the kvm2 repository).
export PATH=/bin:/sbin:/usr/bin:/usr/sbin
mount -t proc proc /proc
mount -t sysfs sysfs /sys
mount -t devtmpfs devtmpfs /dev
mkdir -p /dev/pts
mount -t devpts devpts /dev/pts
mount -t tmpfs tmpfs /run
mount -t tmpfs tmpfs /tmp
uptime_s() { cut -d' ' -f1 /proc/uptime; }
say() { echo "tiny-guest: $* (uptime $(uptime_s))" >/dev/console; }
hostname -F /etc/hostname

while read -r m; do
  insmod "/lib/modules/$m.ko" || say "insmod $m failed"
done </etc/modules.order
say "modules loaded"

# The ISO 9660 volume identifier: bytes 40..71 of the primary volume descriptor (sector 16).
volume_id() {
  dd if="$1" bs=2048 skip=16 count=1 2>/dev/null | dd bs=1 skip=40 count=32 2>/dev/null | tr -d ' \000'
}
find_seed() {
  findfs LABEL=cidata 2>/dev/null && return 0
  findfs LABEL=CIDATA 2>/dev/null && return 0
  for dev in /dev/sr* /dev/sd? /dev/vd?; do
    [ -b "$dev" ] || continue
    case "$(volume_id "$dev")" in cidata | CIDATA) echo "$dev"; return 0 ;; esac
  done
  return 1
}
# The SATA scan runs in the background; wait for the CD-ROM a few seconds of guest time.
seed=
give_up=$(($(cut -d. -f1 /proc/uptime) + 6))
while [ -z "$seed" ]; do
  seed=$(find_seed) && break
  seed=
  [ "$(cut -d. -f1 /proc/uptime)" -ge "$give_up" ] && break
  sleep 0.2
done

address=
gateway=
mkdir -p /run/seed
if [ -n "$seed" ] && mount -t iso9660 -o ro "$seed" /mnt/seed; then
  for f in meta-data user-data vendor-data network-config; do
    [ -f "/mnt/seed/$f" ] && cp "/mnt/seed/$f" "/run/seed/$f"
  done
  umount /mnt/seed
else
  say "no seed found (${seed:-no cidata volume})"
fi
if [ -f /run/seed/meta-data ]; then
  name=$(sed -n 's/^local-hostname:[[:space:]]*//p' /run/seed/meta-data | head -n1 | tr -d "\"' \r\t")
  if [ -n "$name" ]; then
    hostname "$name"
    echo "$name" >/etc/hostname
  fi
fi
if [ -f /run/seed/user-data ]; then
  sha256sum /run/seed/user-data | cut -d' ' -f1 >/run/seed-user-data.sha256
  address=$(sed -n 's/^#[[:space:]]*test-address:[[:space:]]*//p' /run/seed/user-data | head -n1 | tr -d " \r\t")
  gateway=$(sed -n 's/^#[[:space:]]*test-gateway:[[:space:]]*//p' /run/seed/user-data | head -n1 | tr -d " \r\t")
fi
source=seed
if [ -z "$address" ]; then
  # No address asked for: one derived from the hostname, so instances still differ.
  sum=$(hostname | cksum | cut -d' ' -f1)
  address=192.0.2.$((100 + sum % 150))/24
  source=fallback
fi

ip link set lo up
nic=
for n in /sys/class/net/*; do
  [ "${n##*/}" = lo ] && continue
  nic=${n##*/}
  break
done
if [ -n "$nic" ]; then
  ip link set "$nic" up
  ip addr add "$address" dev "$nic" || say "cannot set $address on $nic"
  [ -n "$gateway" ] && ip route add default via "$gateway" dev "$nic"
fi
echo "seed=${seed:-none} hostname=$(hostname) nic=${nic:-none} address=$address source=$source" >/run/seed-status
say "$(cat /run/seed-status)"

port=
tries=0
while [ -z "$port" ] && [ "$tries" -lt 50 ]; do
  for p in /sys/class/virtio-ports/*; do
    [ "$(cat "$p/name" 2>/dev/null)" = org.qemu.guest_agent.0 ] && port=/dev/${p##*/}
  done
  [ -n "$port" ] && [ -e "$port" ] && break
  port=
  tries=$((tries + 1))
  sleep 0.1
done
if [ -n "$port" ]; then
  say "guest agent on $port"
  (while :; do qemu-ga -m virtio-serial -p "$port" -t /run -f /run/qemu-ga.pid; sleep 1; done) &
else
  say "no org.qemu.guest_agent.0 port; the host will not see an address"
fi
# A root shell on the serial console for debugging (virsh console).
setsid sh -c 'exec sh </dev/ttyS0 >/dev/ttyS0 2>&1' &
# PID 1 reaps orphans forever.
while :; do
  wait
  sleep 1
done
EOF
chmod 755 "$root/init" "$root/sbin/shutdown"
(cd "$root" && find . | sort | cpio -o -H newc --quiet | gzip -9n) >"$WORK/initrd.img"

STEP="build the EFI system partition"
# systemd-boot as the removable-media loader, one entry with no menu delay.
esp=$WORK/esp.img
kernel=$WORK/kernel/boot/vmlinuz-$kver
payload=$(($(stat -c %s "$kernel") + $(stat -c %s "$WORK/initrd.img") + 1048576 * 2))
esp_mib=$((payload / 1048576 + 4))
[ "$esp_mib" -ge 34 ] || esp_mib=34 # FAT32 needs at least 65525 clusters of 512 bytes
truncate -s "${esp_mib}M" "$esp"
mkfs.vfat -F 32 -S 512 -s 1 -n TINYESP "$esp" >>"$LOG" 2>&1
mmd -i "$esp" ::/EFI ::/EFI/BOOT ::/loader ::/loader/entries
mcopy -i "$esp" /usr/lib/systemd/boot/efi/systemd-bootx64.efi ::/EFI/BOOT/BOOTX64.EFI
mcopy -i "$esp" "$kernel" ::/vmlinuz
mcopy -i "$esp" "$WORK/initrd.img" ::/initrd.img
printf 'default tiny.conf\ntimeout 0\neditor no\n' >"$WORK/loader.conf"
printf 'title tiny test guest\nlinux /vmlinuz\ninitrd /initrd.img\noptions console=ttyS0,115200 loglevel=4 panic=5\n' \
  >"$WORK/tiny.conf"
mcopy -i "$esp" "$WORK/loader.conf" ::/loader/loader.conf
mcopy -i "$esp" "$WORK/tiny.conf" ::/loader/entries/tiny.conf

STEP="partition the disk and convert it to qcow2"
disk=$WORK/disk.raw
truncate -s $((esp_mib + 2))M "$disk"
printf 'label: gpt\nstart=2048, size=%d, type=uefi, name="ESP"\n' $((esp_mib * 2048)) | sfdisk -q "$disk" >>"$LOG" 2>&1
dd if="$esp" of="$disk" bs=1M seek=1 conv=notrunc status=none
rm -f "$OUT/guest.qcow2.tmp"
qemu-img convert -c -f raw -O qcow2 "$disk" "$OUT/guest.qcow2.tmp" >>"$LOG" 2>&1
mv "$OUT/guest.qcow2.tmp" "$OUT/guest.qcow2"
(cd "$OUT" && sha256sum guest.qcow2 >guest.qcow2.sha256)
echo "$KEY" >"$OUT/cache-key"
echo "$kernel_pkg" >"$OUT/kernel"
rm -rf "$WORK"
say "built $OUT/guest.qcow2 ($(stat -c %s "$OUT/guest.qcow2") bytes, $kernel_pkg) in $((SECONDS - started)) s"
