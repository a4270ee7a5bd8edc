#!/usr/bin/env bash
# Stand up a real libvirt host on this machine for the kvm2 integration tests:
# virtlogd + libvirtd (QEMU in software emulation) + an OpenSSH server on 127.0.0.1,
# started as plain processes (no systemd), plus a client key, a known_hosts file and a
# directory storage pool; then a bridge for the guests' NICs, the tiny test guest
# (scripts/build-guest.sh), an HTTP server on 127.0.0.1 that serves its image, and a
# kvm2 configuration file for this host.
#
# Usage: scripts/libvirt-host.sh start|stop|env|status
#
#   start   install missing Debian packages, start the daemons, create the pool, the bridge,
#           build and serve the guest image, write kvm2.yaml (idempotent)
#   stop    tear down what start started (domains, pool, bridge, HTTP server, daemons) and
#           restore qemu.conf
#   env     print the KVM2_TEST_* variables for the running host: eval "$(scripts/libvirt-host.sh env)"
#   status  show each daemon, the SSH check, the pool, the bridge and the image server
#
# Environment:
#   LIBVIRT_HOST_STATE      state directory (default: <repo>/target/libvirt-host)
#   LIBVIRT_HOST_SSH_PORT   loopback port for sshd (default: 2222)
#   LIBVIRT_HOST_POOL       storage pool name (default: kvm2-test)
#   LIBVIRT_HOST_BRIDGE     bridge the guests join (default: br0)
#   LIBVIRT_HOST_HTTP_PORT  loopback port of the image server (default: 8089)
#   LIBVIRT_HOST_NO_GUEST   set to 1 to start only the daemons and the pool (no bridge,
#                           guest image, image server or kvm2.yaml)
#   LIBVIRT_HOST_NO_INSTALL set to 1 to fail instead of installing missing packages
#
# Must run as root on Debian 12 (bookworm, libvirt 9.0) or a close relative.
set -Eeuo pipefail

REPO=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
# sshd re-executes itself after chdir(/), so every path handed to it must be absolute.
STATE=$(realpath -m "${LIBVIRT_HOST_STATE:-$REPO/target/libvirt-host}")
POOL=${LIBVIRT_HOST_POOL:-kvm2-test}
SOCKET=/var/run/libvirt/libvirt-sock
URI=qemu:///system
LOGS=$STATE/logs
SSH_DIR=$STATE/ssh
BRIDGE=${LIBVIRT_HOST_BRIDGE:-br0}
GUEST_DIR=$STATE/guest
CONFIG=$STATE/kvm2.yaml

# The port is remembered in the state directory so that env/status/stop agree with start.
if [ -n "${LIBVIRT_HOST_SSH_PORT:-}" ]; then
  PORT=$LIBVIRT_HOST_SSH_PORT
elif [ -f "$STATE/port" ]; then
  PORT=$(cat "$STATE/port")
else
  PORT=2222
fi
if [ -n "${LIBVIRT_HOST_HTTP_PORT:-}" ]; then
  HTTP_PORT=$LIBVIRT_HOST_HTTP_PORT
elif [ -f "$STATE/http-port" ]; then
  HTTP_PORT=$(cat "$STATE/http-port")
else
  HTTP_PORT=8089
fi

# Packages, installed with --no-install-recommends.
# libvirt-daemon-system is deliberately not used: it pulls ~226 packages (systemd units,
# polkit, dbus, dnsmasq, iptables) that a host without systemd never runs; the monolithic
# daemons and the dir storage backend are in libvirt-daemon itself.
PACKAGES=(
  libvirt-daemon
  libvirt-daemon-driver-qemu
  libvirt-clients
  qemu-system-x86
  qemu-utils
  ovmf
  openssh-server
  openssh-client
)

STEP=init
DAEMON=
log() { printf 'libvirt-host: %s\n' "$*" >&2; }
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

log_of() {
  case $1 in
    virtlogd) echo "$LOGS/virtlogd.log" ;;
    libvirtd) echo "$LOGS/libvirtd.log" ;;
    sshd) echo "$LOGS/sshd.log" ;;
    apt) echo "$LOGS/apt.log" ;;
    http) echo "$LOGS/http.log" ;;
    guest) echo "$GUEST_DIR/build.log" ;;
  esac
}

on_error() {
  local rc=$? line=$1
  trap - ERR
  log "failed at step '$STEP' (line $line, exit $rc)"
  log_tail
  exit "$rc"
}

# The log of the daemon (or tool) the current step drives, last 30 lines.
log_tail() {
  [ -n "$DAEMON" ] || return 0
  local f
  f=$(log_of "$DAEMON")
  log "daemon: $DAEMON, log: $f"
  if [ -f "$f" ]; then
    log "last 30 lines of $f:"
    tail -n 30 "$f" | sed 's/^/    /' >&2
  fi
}
trap 'on_error $LINENO' ERR

step() { STEP=$1; DAEMON=${2:-}; }

# A pid file names a live process (not a zombie; orphans may be reaped late without systemd).
alive_pid() {
  [ -n "$1" ] && [ -r "/proc/$1/status" ] && ! grep -q '^State:[[:space:]]*Z' "/proc/$1/status"
}
alive() {
  [ -f "$1" ] && alive_pid "$(cat "$1")"
}

port_open() { (exec 3<>"/dev/tcp/127.0.0.1/$1") 2>/dev/null; }

need_root() { [ "$(id -u)" = 0 ] || die "must run as root (libvirtd and sshd are system daemons)"; }

virsh_q() { virsh -q -c "$URI" "$@"; }

installed() {
  local status
  status=$(dpkg-query -W -f='${Status}' "$1" 2>/dev/null) || return 1
  [ "$status" = "install ok installed" ]
}

install_packages() {
  step "install packages" apt
  local missing=() p
  for p in "${PACKAGES[@]}"; do
    installed "$p" || missing+=("$p")
  done
  [ ${#missing[@]} -eq 0 ] && return 0
  [ "${LIBVIRT_HOST_NO_INSTALL:-0}" = 1 ] && die "missing packages: ${missing[*]} (LIBVIRT_HOST_NO_INSTALL=1)"
  log "installing: ${missing[*]}"
  mkdir -p "$LOGS"
  export DEBIAN_FRONTEND=noninteractive
  apt-get update -q >>"$LOGS/apt.log" 2>&1
  local args=(-y -q --no-install-recommends)
  # A qemu-utils newer than the distribution's QEMU (e.g. from backports) breaks
  # qemu-system-common, and apt would silently remove qemu-utils (and qemu-img with it).
  # Ask for the qemu-utils that matches qemu-system-x86 instead.
  local want=() inst cand
  inst=$(dpkg-query -W -f='${Version}' qemu-utils 2>/dev/null || true)
  cand=$(apt-cache policy qemu-system-x86 | awk '/Candidate:/ {print $2}')
  for p in "${missing[@]}"; do [ "$p" = qemu-utils ] || want+=("$p"); done
  if [ -n "$inst" ] && [ -n "$cand" ] && [ "$cand" != "(none)" ] && [ "$inst" != "$cand" ] \
    && ! installed qemu-system-x86; then
    log "qemu-utils $inst does not match qemu-system-x86 $cand; installing qemu-utils=$cand"
    want+=("qemu-utils=$cand")
    args+=(--allow-downgrades)
  elif [ -z "$inst" ]; then
    want+=(qemu-utils)
  fi
  apt-get install "${args[@]}" "${want[@]}" >>"$LOGS/apt.log" 2>&1
  command -v qemu-img >/dev/null || die "qemu-img is missing after the install (see $LOGS/apt.log)"
}

prepare_system() {
  step "prepare accounts, directories and qemu.conf"
  # Debian's libvirt resolves its built-in QEMU user before it reads qemu.conf, so the
  # account must exist even though QEMU runs as root below (libvirt-daemon-system's
  # postinst would create it).
  getent group kvm >/dev/null || groupadd --system kvm
  getent passwd libvirt-qemu >/dev/null \
    || useradd --system --no-create-home --home-dir /var/lib/libvirt --shell /usr/sbin/nologin -g kvm libvirt-qemu
  getent group libvirt-qemu >/dev/null || groupadd --system libvirt-qemu
  mkdir -p /var/log/libvirt /var/run/libvirt /var/lib/libvirt/images /var/lib/libvirt/qemu/nvram \
    /var/cache/libvirt /etc/libvirt
  # QEMU runs as root with no security driver: no AppArmor/SELinux labelling and no
  # ownership changes; cgroups are left alone (no systemd, possibly read-only cgroupfs).
  local conf=/etc/libvirt/qemu.conf
  if [ -f "$conf" ] && [ ! -f "$STATE/qemu.conf.orig" ] && ! grep -q 'written by libvirt-host.sh' "$conf"; then
    cp -p "$conf" "$STATE/qemu.conf.orig"
  fi
  cat >"$conf" <<'EOF'
# written by libvirt-host.sh (kvm2 integration host); restored by "libvirt-host.sh stop"
user = "root"
group = "root"
dynamic_ownership = 0
remember_owner = 0
security_driver = "none"
cgroup_controllers = [ ]
EOF
  cat >"$STATE/virtlogd.conf" <<EOF
log_outputs = "3:file:$LOGS/virtlogd.log"
EOF
  cat >"$STATE/libvirtd.conf" <<EOF
log_outputs = "3:file:$LOGS/libvirtd.log"
EOF
}

start_virtlogd() {
  step "start virtlogd" virtlogd
  alive "$STATE/virtlogd.pid" && return 0
  /usr/sbin/virtlogd --daemon --config "$STATE/virtlogd.conf" --pid-file "$STATE/virtlogd.pid"
  local _
  for _ in $(seq 1 50); do alive "$STATE/virtlogd.pid" && return 0; sleep 0.1; done
  die "virtlogd did not start"
}

start_libvirtd() {
  step "start libvirtd" libvirtd
  if ! alive "$STATE/libvirtd.pid"; then
    if virsh_q version >/dev/null 2>&1; then
      # Someone else's libvirtd owns the system socket; use it, never stop it.
      log "a libvirtd not started by this script already answers on $SOCKET; using it"
      touch "$STATE/libvirtd.foreign"
      return 0
    fi
    rm -f "$STATE/libvirtd.foreign"
    [ -x /usr/sbin/libvirtd ] || die "/usr/sbin/libvirtd not found (modular-only libvirt packages are not supported)"
    /usr/sbin/libvirtd --daemon --config "$STATE/libvirtd.conf" --pid-file "$STATE/libvirtd.pid"
  fi
  # The first start probes QEMU's capabilities (about 8 s on 2 cores); later starts are quick.
  local _
  for _ in $(seq 1 600); do
    virsh_q version >/dev/null 2>&1 && return 0
    if [ -f "$STATE/libvirtd.pid" ] && ! alive "$STATE/libvirtd.pid"; then
      die "libvirtd exited during start-up"
    fi
    sleep 0.1
  done
  die "libvirtd did not answer on $SOCKET within 60 s"
}

start_sshd() {
  step "prepare sshd keys and config" sshd
  mkdir -p "$SSH_DIR" /run/sshd
  chmod 700 "$SSH_DIR"
  chmod 755 /run/sshd
  [ -f "$SSH_DIR/host_ed25519" ] || ssh-keygen -q -t ed25519 -N '' -C kvm2-test-host -f "$SSH_DIR/host_ed25519"
  [ -f "$SSH_DIR/client_ed25519" ] || ssh-keygen -q -t ed25519 -N '' -C kvm2-test-client -f "$SSH_DIR/client_ed25519"
  cp "$SSH_DIR/client_ed25519.pub" "$SSH_DIR/authorized_keys"
  chmod 600 "$SSH_DIR/authorized_keys"
  # With UsePAM no, sshd refuses a '!'-locked account even for key authentication;
  # '*' (no usable password) keeps password logins impossible but allows keys.
  if [ "$(getent shadow root | cut -d: -f2 | cut -c1)" = "!" ]; then
    log "root's password field is locked with '!'; setting it to '*' so key logins work"
    usermod -p '*' root
  fi
  cat >"$SSH_DIR/sshd_config.new" <<EOF
# Private sshd for the kvm2 integration host; loopback only, keys only.
ListenAddress 127.0.0.1
Port $PORT
HostKey $SSH_DIR/host_ed25519
PidFile $SSH_DIR/sshd.pid
AuthorizedKeysFile $SSH_DIR/authorized_keys
PermitRootLogin prohibit-password
PubkeyAuthentication yes
PasswordAuthentication no
KbdInteractiveAuthentication no
UsePAM no
StrictModes no
# OpenSSH applies AllowTcpForwarding's local switch to direct-streamlocal channels too:
# with "no" (or PermitOpen none) every forward of the libvirt socket is denied.
AllowTcpForwarding local
AllowStreamLocalForwarding yes
X11Forwarding no
LogLevel VERBOSE
EOF
  # A running sshd keeps the configuration it started with (its per-connection children
  # get it from the listener), so a changed file needs a reload.
  local reload=0
  if ! cmp -s "$SSH_DIR/sshd_config.new" "$SSH_DIR/sshd_config"; then
    /usr/sbin/sshd -t -f "$SSH_DIR/sshd_config.new"
    reload=1
  fi
  mv "$SSH_DIR/sshd_config.new" "$SSH_DIR/sshd_config"
  echo "[127.0.0.1]:$PORT $(cut -d' ' -f1-2 "$SSH_DIR/host_ed25519.pub")" >"$SSH_DIR/known_hosts"

  step "start sshd" sshd
  if ! alive "$SSH_DIR/sshd.pid"; then
    if port_open "$PORT"; then
      die "127.0.0.1:$PORT is already in use by another process (set LIBVIRT_HOST_SSH_PORT)"
    fi
    /usr/sbin/sshd -t -f "$SSH_DIR/sshd_config"
    /usr/sbin/sshd -f "$SSH_DIR/sshd_config" -E "$LOGS/sshd.log"
  elif [ "$reload" = 1 ]; then
    log "sshd_config changed; reloading sshd (pid $(cat "$SSH_DIR/sshd.pid"))"
    kill -HUP "$(cat "$SSH_DIR/sshd.pid")"
    sleep 0.5
  fi
  local _
  for _ in $(seq 1 50); do port_open "$PORT" && break; sleep 0.1; done
  port_open "$PORT" || die "sshd is not listening on 127.0.0.1:$PORT"

  step "check ssh login and socket forwarding" sshd
  ssh -q -p "$PORT" -i "$SSH_DIR/client_ed25519" \
    -o BatchMode=yes -o IdentitiesOnly=yes -o StrictHostKeyChecking=yes \
    -o UserKnownHostsFile="$SSH_DIR/known_hosts" -o ConnectTimeout=10 \
    root@127.0.0.1 test -S "$SOCKET"
  # The way kvm2 reaches libvirt: the socket forwarded over a direct-streamlocal channel.
  local fwd=$SSH_DIR/check.sock fwd_pid _ ok=0
  rm -f "$fwd"
  ssh -q -N -p "$PORT" -i "$SSH_DIR/client_ed25519" \
    -o BatchMode=yes -o IdentitiesOnly=yes -o StrictHostKeyChecking=yes \
    -o UserKnownHostsFile="$SSH_DIR/known_hosts" -o ConnectTimeout=10 -o ExitOnForwardFailure=yes \
    -L "$fwd:$SOCKET" root@127.0.0.1 &
  fwd_pid=$!
  for _ in $(seq 1 100); do [ -S "$fwd" ] && break; sleep 0.1; done
  virsh -q -c "qemu+unix:///system?socket=$fwd" version >/dev/null 2>&1 && ok=1
  kill "$fwd_pid" 2>/dev/null || true
  wait "$fwd_pid" 2>/dev/null || true
  rm -f "$fwd"
  [ "$ok" = 1 ] || die "libvirt does not answer through the SSH-forwarded socket"
}

create_pool() {
  step "create storage pool $POOL" libvirtd
  local dir=$STATE/pool
  mkdir -p "$dir"
  if ! virsh_q pool-info "$POOL" >/dev/null 2>&1; then
    virsh_q pool-define-as "$POOL" dir --target "$dir" >/dev/null
    touch "$STATE/pool.defined"
  fi
  local info
  info=$(virsh_q pool-info "$POOL")
  if ! [[ $info =~ State:[[:space:]]*running ]]; then
    virsh_q pool-build "$POOL" >/dev/null 2>&1 || true
    virsh_q pool-start "$POOL" >/dev/null
  fi
  virsh_q pool-refresh "$POOL" >/dev/null
}

create_bridge() {
  step "create bridge $BRIDGE"
  if ! ip link show "$BRIDGE" >/dev/null 2>&1; then
    ip link add "$BRIDGE" type bridge
    touch "$STATE/bridge.created"
    log "created bridge $BRIDGE"
  fi
  # No address and no IPv6 on the host side: nothing is ever sent to the guests.
  sysctl -qw "net.ipv6.conf.$BRIDGE.disable_ipv6=1" 2>/dev/null || true
  ip link set "$BRIDGE" up
}

build_guest() {
  # build-guest.sh names its own failing step and prints its log tail.
  step "build the test guest image"
  local t=$SECONDS
  GUEST_DIR="$GUEST_DIR" "$REPO/scripts/build-guest.sh"
  echo "$((SECONDS - t))" >"$STATE/guest-build-seconds"
}

image_sha256() { cut -d' ' -f1 "$GUEST_DIR/guest.qcow2.sha256"; }
image_url() { echo "http://127.0.0.1:$HTTP_PORT/guest.qcow2"; }

serve_images() {
  step "serve the guest image on 127.0.0.1:$HTTP_PORT" http
  local pidfile=$STATE/http.pid
  if ! alive "$pidfile"; then
    if port_open "$HTTP_PORT"; then
      die "127.0.0.1:$HTTP_PORT is already in use by another process (set LIBVIRT_HOST_HTTP_PORT)"
    fi
    # http.server sends Content-Length for files, which kvm2's image download requires.
    setsid python3 -m http.server --bind 127.0.0.1 --directory "$GUEST_DIR" "$HTTP_PORT" \
      >>"$LOGS/http.log" 2>&1 </dev/null &
    echo $! >"$pidfile"
  fi
  local _
  for _ in $(seq 1 50); do port_open "$HTTP_PORT" && break; sleep 0.1; done
  port_open "$HTTP_PORT" || die "the image server is not listening on 127.0.0.1:$HTTP_PORT"
  echo "$HTTP_PORT" >"$STATE/http-port"
  step "check the served image (Content-Length and sha256)" http
  python3 - "$(image_url)" "$(image_sha256)" <<'PY'
import hashlib, sys, urllib.request
url, want = sys.argv[1], sys.argv[2]
with urllib.request.urlopen(url, timeout=10) as r:
    length = r.headers.get("Content-Length")
    body = r.read()
if length is None or int(length) != len(body):
    sys.exit(f"{url}: Content-Length {length!r} does not match the {len(body)} bytes sent")
got = hashlib.sha256(body).hexdigest()
if got != want:
    sys.exit(f"{url}: sha256 {got} differs from the built image's {want}")
PY
}

write_config() {
  step "write $CONFIG"
  cat >"$CONFIG.tmp" <<EOF
# kvm2 configuration for the local test host, written by scripts/libvirt-host.sh start.
kvm2:
  name: kvm2-local
  hosts:
    - name: local
      address: 127.0.0.1
      port: $PORT
      user: root
      keyFile: $SSH_DIR/client_ed25519
      knownHostsFile: $SSH_DIR/known_hosts
      socket: $SOCKET
  pool: $POOL
  bridge: $BRIDGE
  # No usable KVM here: QEMU emulates the guest in software.
  domainType: qemu
  images:
    - name: tiny-guest
      url: $(image_url)
      sha256: $(image_sha256)
      firmware: efi
  sizes:
    vcpus: 1
    memoryMib: 256
    diskGib: 1
  placement:
    local: local
  timeouts:
    create: 5m
EOF
  mv "$CONFIG.tmp" "$CONFIG"
}

guest_ready() {
  [ -f "$CONFIG" ] && [ -f "$GUEST_DIR/guest.qcow2.sha256" ] && alive "$STATE/http.pid" \
    && ip link show "$BRIDGE" >/dev/null 2>&1
}

cmd_start() {
  need_root
  mkdir -p "$STATE" "$LOGS"
  local t0=$SECONDS
  install_packages
  prepare_system
  echo "$PORT" >"$STATE/port"
  start_virtlogd
  start_libvirtd
  start_sshd
  create_pool
  if [ "${LIBVIRT_HOST_NO_GUEST:-0}" = 1 ]; then
    log "LIBVIRT_HOST_NO_GUEST=1: no bridge, guest image, image server or kvm2.yaml"
  else
    create_bridge
    build_guest
    serve_images
    write_config
  fi
  step "report"
  log "ready in $((SECONDS - t0)) s: $(virsh_q version | grep -E 'library|hypervisor' | tr -s ' \n' ' ')"
  log "ssh -p $PORT -i $SSH_DIR/client_ed25519 -o UserKnownHostsFile=$SSH_DIR/known_hosts root@127.0.0.1"
  if guest_ready; then
    log "image $(image_url) (sha256 $(image_sha256)); kvm2 configuration $CONFIG"
  fi
}

stop_pidfile() {
  local name=$1 file=$2 p _
  [ -f "$file" ] || return 0
  p=$(cat "$file")
  if alive_pid "$p"; then
    kill "$p"
    for _ in $(seq 1 100); do alive_pid "$p" || break; sleep 0.1; done
    if alive_pid "$p"; then
      log "$name (pid $p) ignored SIGTERM; sending SIGKILL"
      kill -9 "$p" 2>/dev/null || true
    fi
    log "stopped $name (pid $p)"
  fi
  rm -f "$file"
}

cmd_stop() {
  need_root
  trap - ERR
  set +e
  if alive "$STATE/libvirtd.pid"; then
    local d
    for d in $(virsh_q list --name 2>/dev/null); do
      virsh_q destroy "$d" >/dev/null 2>&1 && log "destroyed running domain $d"
    done
  fi
  if [ -f "$STATE/pool.defined" ] && virsh_q version >/dev/null 2>&1; then
    virsh_q pool-destroy "$POOL" >/dev/null 2>&1
    virsh_q pool-undefine "$POOL" >/dev/null 2>&1 && log "undefined pool $POOL (its directory stays in $STATE/pool)"
    rm -f "$STATE/pool.defined"
  fi
  stop_pidfile "image server" "$STATE/http.pid"
  if [ -f "$STATE/bridge.created" ]; then
    ip link del "$BRIDGE" 2>/dev/null && log "removed bridge $BRIDGE"
    rm -f "$STATE/bridge.created"
  fi
  rm -f "$CONFIG"
  stop_pidfile sshd "$SSH_DIR/sshd.pid"
  stop_pidfile libvirtd "$STATE/libvirtd.pid"
  stop_pidfile virtlogd "$STATE/virtlogd.pid"
  rm -f "$STATE/libvirtd.foreign"
  if [ -f "$STATE/qemu.conf.orig" ]; then
    mv "$STATE/qemu.conf.orig" /etc/libvirt/qemu.conf && log "restored /etc/libvirt/qemu.conf"
  fi
  return 0
}

cmd_env() {
  [ -f "$SSH_DIR/client_ed25519" ] && [ -f "$SSH_DIR/known_hosts" ] \
    || die "no host state in $STATE; run: scripts/libvirt-host.sh start"
  alive "$SSH_DIR/sshd.pid" || die "sshd is not running; run: scripts/libvirt-host.sh start"
  printf 'export KVM2_TEST_HOST=127.0.0.1 KVM2_TEST_PORT=%s KVM2_TEST_USER=root KVM2_TEST_SSH_KEY=%s KVM2_TEST_KNOWN_HOSTS=%s KVM2_TEST_SOCKET=%s KVM2_TEST_POOL=%s\n' \
    "$PORT" "$SSH_DIR/client_ed25519" "$SSH_DIR/known_hosts" "$SOCKET" "$POOL"
  if guest_ready; then
    printf 'export KVM2_TEST_BRIDGE=%s KVM2_TEST_IMAGE_URL=%s KVM2_TEST_IMAGE_SHA256=%s KVM2_TEST_CONFIG=%s KVM2_TEST_DOMAIN_TYPE=qemu\n' \
      "$BRIDGE" "$(image_url)" "$(image_sha256)" "$CONFIG"
  fi
}

cmd_status() {
  trap - ERR
  set +e
  local rc=0 name file
  for name in virtlogd libvirtd sshd; do
    case $name in
      sshd) file=$SSH_DIR/sshd.pid ;;
      *) file=$STATE/$name.pid ;;
    esac
    if alive "$file"; then
      printf '%-9s running (pid %s)\n' "$name" "$(cat "$file")"
    elif [ "$name" = libvirtd ] && [ -f "$STATE/libvirtd.foreign" ]; then
      printf '%-9s not started here; another libvirtd answers\n' "$name"
    else
      printf '%-9s stopped\n' "$name"
      rc=1
    fi
  done
  if virsh_q version >/dev/null 2>&1; then
    printf '%-9s %s\n' libvirt "$(virsh_q version | grep -E 'library|hypervisor' | tr -s ' \n' ' ')"
    printf '%-9s %s\n' pool "$POOL: $(virsh_q pool-info "$POOL" 2>/dev/null | awk '/^State:/ {print $2}')"
  else
    printf '%-9s not answering on %s\n' libvirt "$SOCKET"
    rc=1
  fi
  printf '%-9s 127.0.0.1:%s, state %s\n' ssh "$PORT" "$STATE"
  if [ -f "$CONFIG" ] || alive "$STATE/http.pid"; then
    if ip link show "$BRIDGE" >/dev/null 2>&1; then
      printf '%-9s %s up\n' bridge "$BRIDGE"
    else
      printf '%-9s %s missing\n' bridge "$BRIDGE"
      rc=1
    fi
    if alive "$STATE/http.pid"; then
      printf '%-9s %s (pid %s)\n' image "$(image_url)" "$(cat "$STATE/http.pid")"
    else
      printf '%-9s server stopped\n' image
      rc=1
    fi
    [ -f "$CONFIG" ] && printf '%-9s %s\n' config "$CONFIG"
  fi
  return $rc
}

case ${1:-} in
  start) cmd_start ;;
  stop) cmd_stop ;;
  env) cmd_env ;;
  status) cmd_status ;;
  *)
    echo "usage: $0 start|stop|env|status" >&2
    exit 2
    ;;
esac
