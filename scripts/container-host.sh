#!/usr/bin/env bash
# The kvm2 test host (libvirtd + virtlogd + sshd, a dir pool and a bridge br0, QEMU in
# software emulation) inside a Docker container, for tests/container_host.rs, which starts
# it through testcontainers.
#
# No image registry is reachable from the test machines, so the image is built locally:
# a minimal Debian bookworm from debootstrap, `docker import`ed with an entrypoint that
# prepares libvirt the way scripts/libvirt-host.sh does on a plain host.
#
# Usage: scripts/container-host.sh engine|engine-stop|image|check|env|status
#
#   engine       install docker.io and debootstrap when missing, start dockerd by hand (no
#                systemd) with its own data root, wait until `docker info` answers; an engine
#                that already answers is used as it is (idempotent)
#   engine-stop  stop the dockerd that "engine" started (never another one)
#   image        build the image kvm2-libvirt-host:<first 12 hex digits of this script's
#                sha256>; nothing is rebuilt when that tag exists
#   check        start one container from the image the way the test does (loopback port,
#                generated keys), wait until it is ready, reach libvirt through the SSH-
#                forwarded socket, print the times and remove the container
#   env          print the variables tests/container_host.rs reads:
#                eval "$(scripts/container-host.sh env)"
#   status       show the engine and whether the image exists
#
# Environment:
#   CONTAINER_HOST_DATA     engine and build directory (default: /var/lib/kvm2-docker)
#   CONTAINER_HOST_SOCKET   the engine's socket (default: /var/run/docker.sock)
#   CONTAINER_HOST_BIP      address of the engine's bridge (default: 10.213.77.1/24)
#   CONTAINER_HOST_MIRROR   Debian mirror for debootstrap (default: the first bookworm
#                           "deb" source of /etc/apt/sources.list and sources.list.d)
#   CONTAINER_HOST_NO_INSTALL  set to 1 to fail instead of installing missing packages
#
# The container needs, and the test gives it: every capability but SYS_RESOURCE (which
# --privileged would ask for and the sandbox's bounding set lacks), seccomp=unconfined,
# /dev/net/tun, and an init as PID 1 (--init) that reaps the QEMU processes libvirtd
# daemonises (without it `virsh destroy` hangs on a zombie).
set -Eeuo pipefail

REPO=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
# shellcheck source=scripts/lib/host-common.sh
. "$REPO/scripts/lib/host-common.sh"
SELF="$REPO/scripts/container-host.sh"
DATA=$(realpath -m "${CONTAINER_HOST_DATA:-/var/lib/kvm2-docker}")
SOCK=${CONTAINER_HOST_SOCKET:-/var/run/docker.sock}
BIP=${CONTAINER_HOST_BIP:-10.213.77.1/24}
LOGS=$DATA/logs
SUITE=bookworm
REPOSITORY=kvm2-libvirt-host
TAG=$(sha256sum "$SELF" | cut -c1-12)
IMAGE=$REPOSITORY:$TAG

# The packages of the image. libvirt-daemon carries the monolithic libvirtd and the dir
# storage backend on bookworm (9.0); from libvirt 11 the storage driver is its own package.
IMAGE_PACKAGES=(
  libvirt-daemon
  libvirt-daemon-driver-qemu
  libvirt-clients
  qemu-system-x86
  qemu-utils
  ovmf
  openssh-server
  iproute2
)
HOST_PACKAGES=(docker.io debootstrap)

STEP=init
LOGFILE=
log() { printf 'container-host: %s\n' "$*" >&2; }
log_tail() {
  [ -n "$LOGFILE" ] || return 0
  log "log: $LOGFILE"
  if [ -f "$LOGFILE" ]; then
    log "last 30 lines of $LOGFILE:"
    tail -n 30 "$LOGFILE" | sed 's/^/    /' >&2
  fi
}
die() {
  trap - ERR
  if [ "$STEP" = init ]; then
    log "error: $*"
  else
    log "error at step '$STEP': $*"
    log_tail
  fi
  exit 1
}
on_error() {
  local rc=$? line=$1
  trap - ERR
  log "failed at step '$STEP' (line $line, exit $rc)"
  log_tail
  exit "$rc"
}
trap 'on_error $LINENO' ERR
# step NAME [LOG]: what runs now and the log whose tail an error prints.
step() { STEP=$1; LOGFILE=${2:-}; }

need_root() { [ "$(id -u)" = 0 ] || die "must run as root (dockerd and debootstrap need it)"; }

alive() { [ -f "$1" ] && alive_pid "$(cat "$1")"; }

docker_q() { docker -H "unix://$SOCK" "$@"; }
engine_up() { command -v docker >/dev/null && docker_q info >/dev/null 2>&1; }

install_host_packages() {
  step "install ${HOST_PACKAGES[*]}" "$LOGS/apt.log"
  local missing=() p
  for p in "${HOST_PACKAGES[@]}"; do installed "$p" || missing+=("$p"); done
  [ ${#missing[@]} -eq 0 ] && return 0
  [ "${CONTAINER_HOST_NO_INSTALL:-0}" = 1 ] && die "missing packages: ${missing[*]} (CONTAINER_HOST_NO_INSTALL=1)"
  log "installing: ${missing[*]}"
  local t=$SECONDS
  export DEBIAN_FRONTEND=noninteractive
  apt-get update -q >>"$LOGS/apt.log" 2>&1
  # docker.io's postinst would start the packaged service (default data root, iptables);
  # a policy-rc.d that denies every start keeps it down while the packages install.
  local policy=/usr/sbin/policy-rc.d own_policy=0
  if [ ! -e "$policy" ]; then
    printf '#!/bin/sh\nexit 101\n' >"$policy"
    chmod 755 "$policy"
    own_policy=1
  fi
  local rc=0
  apt-get install -y -q --no-install-recommends "${missing[@]}" >>"$LOGS/apt.log" 2>&1 || rc=$?
  [ "$own_policy" = 1 ] && rm -f "$policy"
  [ "$rc" = 0 ] || die "apt-get install failed (exit $rc)"
  log "installed in $((SECONDS - t)) s"
}

# --- engine ---------------------------------------------------------------------------

cmd_engine() {
  need_root
  mkdir -p "$DATA" "$LOGS"
  if engine_up; then
    if alive "$DATA/dockerd.pid"; then
      log "dockerd (pid $(cat "$DATA/dockerd.pid")) already answers on $SOCK"
    else
      log "an engine not started by this script already answers on $SOCK; using it"
    fi
    return 0
  fi
  install_host_packages
  command -v dockerd >/dev/null || die "dockerd not found after installing docker.io"
  step "start dockerd" "$LOGS/dockerd.log"
  [ -S "$SOCK" ] && ! alive "$DATA/dockerd.pid" && rm -f "$SOCK"
  local t0
  t0=$(date +%s%N)
  # No iptables, forwarding or masquerading: the containers need no network beyond the
  # published loopback ports, which the userland proxy serves. The bridge address is one
  # of our own so it cannot clash with the machine's networks.
  setsid dockerd \
    --data-root "$DATA/root" \
    --exec-root "$DATA/exec" \
    --pidfile "$DATA/dockerd.pid" \
    --host "unix://$SOCK" \
    --bip "$BIP" \
    --iptables=false --ip-forward=false --ip-masq=false --ip6tables=false \
    >>"$LOGS/dockerd.log" 2>&1 </dev/null &
  local _
  for _ in $(seq 1 300); do
    engine_up && break
    [ -f "$DATA/dockerd.pid" ] && ! alive "$DATA/dockerd.pid" && die "dockerd exited during start-up"
    sleep 0.1
  done
  engine_up || die "docker info does not answer on $SOCK within 30 s"
  log "engine ready in $((($(date +%s%N) - t0) / 1000000)) ms:" \
    "$(docker_q version -f 'server {{.Server.Version}}, storage '"$(docker_q info -f '{{.Driver}}')")"
}

cmd_engine_stop() {
  need_root
  trap - ERR
  local p _
  if ! alive "$DATA/dockerd.pid"; then
    log "no dockerd started by this script is running"
    return 0
  fi
  p=$(cat "$DATA/dockerd.pid")
  # Containers of the image go first, so nothing is left running under a dead engine.
  docker_q ps -q --filter "ancestor=$IMAGE" 2>/dev/null | xargs -r docker -H "unix://$SOCK" rm -f >/dev/null 2>&1 || true
  kill "$p"
  for _ in $(seq 1 150); do alive_pid "$p" || break; sleep 0.1; done
  if alive_pid "$p"; then
    log "dockerd (pid $p) ignored SIGTERM for 15 s; sending SIGKILL"
    kill -9 "$p" 2>/dev/null || true
  fi
  log "stopped dockerd (pid $p); its data stays in $DATA/root"
  return 0
}

# --- image ----------------------------------------------------------------------------

# The container's entrypoint, run by the init (--init) as PID 2.
write_entrypoint() {
  cat >"$1" <<'ENTRY'
#!/bin/bash
# kvm2 test host inside a container: virtlogd, libvirtd, a dir pool kvm2-test, a bridge
# br0 in the container's own network namespace, and sshd on port 22 (keys only).
#
#   KVM2_AUTHORIZED_KEY  the client public key (one authorized_keys line); or a file
#                        /etc/kvm2/authorized_keys
#   /etc/kvm2/host_ed25519  the SSH host key (generated when absent; its public half is
#                        printed as "host-key: ...")
# Prints "kvm2-libvirt-host: ready" when sshd answers, then waits on the daemons and exits
# when one of them does.
set -Eeuo pipefail
POOL=kvm2-test
BRIDGE=br0
URI=qemu:///system
L=/var/log/kvm2
mkdir -p $L
say() { printf 'kvm2-libvirt-host: %s\n' "$*"; }
fail() {
  say "error at step '$STEP': $*" >&2
  if [ -n "${LOG:-}" ] && [ -f "$LOG" ]; then tail -n 30 "$LOG" | sed 's/^/    /' >&2; fi
  exit 1
}
trap 'fail "exit $? at line $LINENO"' ERR
STEP=init LOG=

STEP="accounts, directories and qemu.conf"
# libvirt resolves its built-in QEMU user before reading qemu.conf, so it must exist.
getent group kvm >/dev/null || groupadd --system kvm
getent passwd libvirt-qemu >/dev/null \
  || useradd --system --no-create-home --home-dir /var/lib/libvirt --shell /usr/sbin/nologin -g kvm libvirt-qemu
getent group libvirt-qemu >/dev/null || groupadd --system libvirt-qemu
mkdir -p /var/log/libvirt /run/libvirt /var/lib/libvirt/images/$POOL /var/lib/libvirt/qemu/nvram \
  /var/cache/libvirt /run/sshd /etc/kvm2
# QEMU as root, no security driver, no ownership changes; no cgroup controllers (the
# container's cgroupfs is read-only).
cat >/etc/libvirt/qemu.conf <<'EOF'
user = "root"
group = "root"
dynamic_ownership = 0
remember_owner = 0
security_driver = "none"
cgroup_controllers = [ ]
EOF
echo "log_outputs = \"3:file:$L/virtlogd.log\"" >/etc/kvm2/virtlogd.conf
echo "log_outputs = \"3:file:$L/libvirtd.log\"" >/etc/kvm2/libvirtd.conf

STEP="bridge $BRIDGE" LOG=
ip link show $BRIDGE >/dev/null 2>&1 || ip link add $BRIDGE type bridge
sysctl -qw net.ipv6.conf.$BRIDGE.disable_ipv6=1 2>/dev/null || true
ip link set $BRIDGE up

STEP="start virtlogd" LOG=$L/virtlogd.log
/usr/sbin/virtlogd --config /etc/kvm2/virtlogd.conf &
PIDS=($!)

STEP="start libvirtd" LOG=$L/libvirtd.log
/usr/sbin/libvirtd --config /etc/kvm2/libvirtd.conf &
PIDS+=($!)
for _ in $(seq 1 600); do
  virsh -q -c $URI version >/dev/null 2>&1 && break
  kill -0 "${PIDS[1]}" 2>/dev/null || fail "libvirtd exited during start-up"
  sleep 0.1
done
virsh -q -c $URI version >/dev/null 2>&1 || fail "libvirtd did not answer within 60 s"

STEP="storage pool $POOL" LOG=$L/libvirtd.log
if ! virsh -q -c $URI pool-info $POOL >/dev/null 2>&1; then
  virsh -q -c $URI pool-define-as $POOL dir --target /var/lib/libvirt/images/$POOL >/dev/null
fi
virsh -q -c $URI pool-info $POOL | grep -Eq 'State:[[:space:]]*running' || virsh -q -c $URI pool-start $POOL >/dev/null
virsh -q -c $URI pool-refresh $POOL >/dev/null

STEP="sshd keys and config" LOG=
[ -f /etc/kvm2/host_ed25519 ] || ssh-keygen -q -t ed25519 -N '' -C kvm2-container-host -f /etc/kvm2/host_ed25519
chmod 600 /etc/kvm2/host_ed25519
[ -f /etc/kvm2/host_ed25519.pub ] || ssh-keygen -y -f /etc/kvm2/host_ed25519 >/etc/kvm2/host_ed25519.pub
if [ -n "${KVM2_AUTHORIZED_KEY:-}" ]; then
  printf '%s\n' "$KVM2_AUTHORIZED_KEY" >/etc/kvm2/authorized_keys
fi
[ -s /etc/kvm2/authorized_keys ] || fail "no client key: set KVM2_AUTHORIZED_KEY or provide /etc/kvm2/authorized_keys"
chmod 600 /etc/kvm2/authorized_keys
# A '!'-locked root refuses key logins with UsePAM no; '*' keeps passwords impossible.
usermod -p '*' root
cat >/etc/kvm2/sshd_config <<'EOF'
Port 22
HostKey /etc/kvm2/host_ed25519
PidFile /run/sshd.pid
AuthorizedKeysFile /etc/kvm2/authorized_keys
PermitRootLogin prohibit-password
PubkeyAuthentication yes
PasswordAuthentication no
KbdInteractiveAuthentication no
UsePAM no
StrictModes no
# direct-streamlocal (the forwarded libvirt socket) is governed by AllowTcpForwarding too.
AllowTcpForwarding local
AllowStreamLocalForwarding yes
X11Forwarding no
LogLevel VERBOSE
EOF
/usr/sbin/sshd -t -f /etc/kvm2/sshd_config

STEP="start sshd" LOG=$L/sshd.log
/usr/sbin/sshd -D -f /etc/kvm2/sshd_config -E $L/sshd.log &
PIDS+=($!)
for _ in $(seq 1 50); do (exec 3<>/dev/tcp/127.0.0.1/22) 2>/dev/null && break; sleep 0.1; done
(exec 3<>/dev/tcp/127.0.0.1/22) 2>/dev/null || fail "sshd is not listening on port 22"

say "host-key: $(cut -d' ' -f1-2 /etc/kvm2/host_ed25519.pub)"
say "$(virsh -q -c $URI version | grep -E 'library|hypervisor' | tr -s ' \n' ' ')"
say ready
trap - ERR
set +e
wait -n "${PIDS[@]}"
rc=$?
say "a daemon exited (status $rc); stopping"
exit 1
ENTRY
  chmod 755 "$1"
}

image_exists() { docker_q image inspect "$1" >/dev/null 2>&1; }

cmd_image() {
  need_root
  mkdir -p "$DATA" "$LOGS"
  engine_up || die "no Docker engine answers on $SOCK; run: scripts/container-host.sh engine"
  if image_exists "$IMAGE"; then
    log "image $IMAGE exists; nothing to build"
    return 0
  fi
  install_host_packages
  local t0=$SECONDS
  # The debootstrap tree is cached by suite and package list: a change to the entrypoint
  # alone re-imports without bootstrapping again.
  local base
  base=$DATA/rootfs-$SUITE-$(printf '%s\n' "${IMAGE_PACKAGES[@]}" | sha256sum | cut -c1-12)
  if [ ! -f "$base/.complete" ]; then
    step "find a Debian mirror"
    local mirror
    mirror=${CONTAINER_HOST_MIRROR:-$(apt_mirror "$SUITE")} || die "no 'deb' source for $SUITE in /etc/apt/sources.list*; set CONTAINER_HOST_MIRROR"
    step "debootstrap $SUITE (minbase)" "$LOGS/debootstrap.log"
    rm -rf "$base"
    local include
    include=$(IFS=,; echo "${IMAGE_PACKAGES[*]}")
    log "debootstrap --variant=minbase $SUITE with $include"
    debootstrap --variant=minbase --include="$include" "$SUITE" "$base" "$mirror" \
      >"$LOGS/debootstrap.log" 2>&1
    # libvirt 11 and later moved the storage backends into their own packages.
    local v
    # shellcheck disable=SC2016
    v=$(chroot "$base" dpkg-query -W -f='${Version}' libvirt-daemon)
    if dpkg --compare-versions "$v" ge 11; then
      step "install libvirt-daemon-driver-storage (libvirt $v)" "$LOGS/debootstrap.log"
      chroot "$base" apt-get install -y -q --no-install-recommends libvirt-daemon-driver-storage \
        >>"$LOGS/debootstrap.log" 2>&1
    fi
    step "trim the root file system" "$LOGS/debootstrap.log"
    chroot "$base" apt-get clean >>"$LOGS/debootstrap.log" 2>&1
    rm -rf "$base"/var/lib/apt/lists/* "$base"/usr/share/doc/* "$base"/usr/share/man/* \
      "$base"/etc/ssh/ssh_host_*
    log "debootstrap took $((SECONDS - t0)) s ($(du -sh "$base" | cut -f1))"
    touch "$base/.complete"
  else
    log "using the bootstrapped tree $base"
  fi
  step "write the entrypoint"
  write_entrypoint "$base/usr/local/sbin/kvm2-host-entry"
  # Keys are copied here before the container starts.
  mkdir -p "$base/etc/kvm2"
  step "import $IMAGE" "$LOGS/import.log"
  local t1=$SECONDS
  tar -C "$base" --exclude=./.complete -c . \
    | docker_q import -c 'CMD ["/usr/local/sbin/kvm2-host-entry"]' -c 'EXPOSE 22' - "$IMAGE" \
      >"$LOGS/import.log" 2>&1
  log "imported $IMAGE in $((SECONDS - t1)) s ($(docker_q image inspect -f '{{.Size}}' "$IMAGE" | awk '{printf "%d MB", $1 / 1000000}')); image built in $((SECONDS - t0)) s"
  # Older tags of this repository are builds of earlier versions of this script.
  local old
  for old in $(docker_q image ls --format '{{.Repository}}:{{.Tag}}' "$REPOSITORY"); do
    [ "$old" = "$IMAGE" ] || { docker_q image rm "$old" >/dev/null 2>&1 && log "removed old image $old"; } || true
  done
}

# --- check ----------------------------------------------------------------------------

cmd_check() {
  need_root
  engine_up || die "no Docker engine answers on $SOCK; run: scripts/container-host.sh engine"
  image_exists "$IMAGE" || die "image $IMAGE does not exist; run: scripts/container-host.sh image"
  command -v ssh >/dev/null || die "ssh (openssh-client) is needed for the check"
  local dir
  dir=$(mktemp -d)
  CHECK_DIR=$dir
  CID=
  trap cleanup_check EXIT
  step "generate keys"
  ssh-keygen -q -t ed25519 -N '' -C kvm2-container-client -f "$dir/client"
  ssh-keygen -q -t ed25519 -N '' -C kvm2-container-host -f "$dir/host"
  step "create a container" "$dir/create.log"
  local t0 t1
  t0=$(date +%s%N)
  # The engine warns that forwarding is off; the container needs none.
  CID=$(docker_q create --init --cap-add ALL --cap-drop SYS_RESOURCE \
    --security-opt seccomp=unconfined --security-opt apparmor=unconfined \
    --device /dev/net/tun -p 127.0.0.1::22 \
    -e "KVM2_AUTHORIZED_KEY=$(cat "$dir/client.pub")" "$IMAGE" 2>"$dir/create.log")
  docker_q cp "$dir/host" "$CID:/etc/kvm2/host_ed25519"
  step "start the container" "$dir/container.log"
  docker_q start "$CID" >/dev/null
  local _ ready=0
  for _ in $(seq 1 600); do
    docker_q logs "$CID" >"$dir/container.log" 2>&1 || true
    grep -q 'kvm2-libvirt-host: ready' "$dir/container.log" && { ready=1; break; }
    [ "$(docker_q inspect -f '{{.State.Running}}' "$CID")" = true ] || break
    sleep 0.1
  done
  [ "$ready" = 1 ] || die "the container did not report ready"
  t1=$(date +%s%N)
  local port
  port=$(docker_q port "$CID" 22/tcp | awk -F: '/^127\.0\.0\.1:/ {print $2; exit}')
  [ -n "$port" ] || die "port 22 is not published on 127.0.0.1"
  echo "[127.0.0.1]:$port $(cut -d' ' -f1-2 "$dir/host.pub")" >"$dir/known_hosts"
  step "reach libvirt through the SSH-forwarded socket" "$dir/container.log"
  local fwd=$dir/libvirt.sock ok=0 t2 t3 out=
  t2=$(date +%s%N)
  if command -v virsh >/dev/null; then
    forward_open "$fwd" /var/run/libvirt/libvirt-sock -p "$port" -i "$dir/client" \
      -o BatchMode=yes -o IdentitiesOnly=yes -o StrictHostKeyChecking=yes \
      -o UserKnownHostsFile="$dir/known_hosts" -o ConnectTimeout=10 root@127.0.0.1 \
      && out=$(timeout 30 virsh -q -c "qemu+unix:///system?socket=$fwd" pool-info kvm2-test 2>&1) && ok=1
    forward_close "$fwd"
  else
    out=$(ssh -q -p "$port" -i "$dir/client" -o BatchMode=yes -o IdentitiesOnly=yes \
      -o StrictHostKeyChecking=yes -o UserKnownHostsFile="$dir/known_hosts" root@127.0.0.1 \
      virsh -q -c qemu:///system pool-info kvm2-test 2>&1) && ok=1
  fi
  t3=$(date +%s%N)
  [ "$ok" = 1 ] || die "libvirt did not answer through SSH: $out"
  grep -Eq 'State:[[:space:]]*running' <<<"$out" || die "pool kvm2-test is not running: $out"
  log "container ready in $(((t1 - t0) / 1000000)) ms (create, copy the host key, start, libvirtd and sshd up);" \
    "SSH login, socket forward and pool-info $(((t3 - t2) / 1000000)) ms; port 127.0.0.1:$port"
  step "remove the container"
  docker_q rm -f "$CID" >/dev/null
  CID=
}

cleanup_check() {
  [ -n "${CID:-}" ] && docker_q rm -f "$CID" >/dev/null 2>&1
  [ -n "${CHECK_DIR:-}" ] && rm -rf "$CHECK_DIR"
  return 0
}

cmd_env() {
  engine_up || die "no Docker engine answers on $SOCK; run: scripts/container-host.sh engine"
  image_exists "$IMAGE" || die "image $IMAGE does not exist; run: scripts/container-host.sh image"
  printf 'export KVM2_TEST_DOCKER=1 KVM2_TEST_DOCKER_IMAGE=%s DOCKER_HOST=unix://%s\n' "$IMAGE" "$SOCK"
}

cmd_status() {
  trap - ERR
  set +e
  local rc=0
  if engine_up; then
    printf '%-7s %s\n' engine "answers on $SOCK (server $(docker_q version -f '{{.Server.Version}}'))"
  else
    printf '%-7s %s\n' engine "not answering on $SOCK"
    rc=1
  fi
  alive "$DATA/dockerd.pid" && printf '%-7s %s\n' dockerd "started here (pid $(cat "$DATA/dockerd.pid")), data $DATA"
  if [ "$rc" = 0 ] && image_exists "$IMAGE"; then
    printf '%-7s %s\n' image "$IMAGE"
  else
    printf '%-7s %s\n' image "$IMAGE missing"
    rc=1
  fi
  return $rc
}

case ${1:-} in
  engine) cmd_engine ;;
  engine-stop) cmd_engine_stop ;;
  image) cmd_image ;;
  check) cmd_check ;;
  env) cmd_env ;;
  status) cmd_status ;;
  *)
    echo "usage: $0 engine|engine-stop|image|check|env|status" >&2
    exit 2
    ;;
esac
