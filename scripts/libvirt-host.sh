#!/usr/bin/env bash
# Stand up real libvirt hosts on this machine for the kvm2 integration tests:
# virtlogd + libvirtd (QEMU in software emulation) + an OpenSSH server on 127.0.0.1,
# started as plain processes (no systemd), plus a client key, a known_hosts file and a
# directory storage pool; then a bridge for the guests' NICs, the tiny test guest
# (scripts/build-guest.sh), an HTTP server on 127.0.0.1 that serves its image, and a
# kvm2 configuration file for the hosts.
#
# Host 1 is the machine's own libvirtd (socket /run/libvirt/libvirt-sock, sshd on port
# 2222). Host 2 is a second virtlogd + libvirtd in a private mount namespace: its own
# /etc/libvirt, /var/lib/libvirt, /run/libvirt, /var/cache/libvirt and /var/log/libvirt
# (directories under <state>/host2 bind-mounted there), its own pool directory, the same
# bridge, its socket in /run/kvm2-host2 (outside the private mounts, so either sshd
# forwards it) and its own sshd on port 2223, so that its transport can be killed without
# touching host 1. kvm2.yaml names them local and local2.
#
# Usage: scripts/libvirt-host.sh start|stop|env|status
#        scripts/libvirt-host.sh kill|revive sshd|libvirtd [1|2]
#
#   start   install missing Debian packages, start the daemons of both hosts, create the
#           pools, the bridge, build and serve the guest image, write kvm2.yaml (idempotent;
#           prints the libvirt and QEMU versions)
#   stop    tear down what start started (domains, pools, bridge, HTTP server, daemons of
#           both hosts) and restore qemu.conf
#   env     print the KVM2_TEST_* variables for the running hosts:
#           eval "$(scripts/libvirt-host.sh env)"; host 2 adds KVM2_TEST_SOCKET2 and
#           KVM2_TEST_PORT2
#   status  show each daemon, the SSH check, the pools, the bridge and the image server
#   kill    SIGKILL host N's sshd (the listener and its sessions) or libvirtd (default N=1;
#           running guests stay), to test what a provider does when its transport dies
#   revive  start that daemon again as start does and wait until it answers
#
# Environment:
#   LIBVIRT_VERSION         11 (default): libvirt 11.x from <codename>-backports;
#                           9: Debian 12's own libvirt 9.0. Switching either way stops the
#                           daemons and changes the packages; QEMU comes from backports
#                           in both cases (see the package notes below)
#   LIBVIRT_HOST_ONE        set to 1 to start only host 1
#   LIBVIRT_HOST_STATE      state directory (default: <repo>/target/libvirt-host)
#   LIBVIRT_HOST_SSH_PORT   loopback port for host 1's sshd (default: 2222)
#   LIBVIRT_HOST_SSH_PORT2  loopback port for host 2's sshd (default: 2223)
#   LIBVIRT_HOST2_SOCK_DIR  where host 2's libvirt sockets go (default: /run/kvm2-host2)
#   LIBVIRT_HOST_POOL       storage pool name on both hosts (default: kvm2-test)
#   LIBVIRT_HOST_BRIDGE     bridge the guests join (default: br0)
#   LIBVIRT_HOST_HTTP_PORT  loopback port of the image server (default: 8089)
#   LIBVIRT_HOST_NO_GUEST   set to 1 to start only the daemons and the pools (no bridge,
#                           guest image, image server or kvm2.yaml)
#   LIBVIRT_HOST_NO_INSTALL set to 1 to fail instead of installing missing packages
#   LIBVIRT_HOST_APT_MIRROR the Debian archive for the backports source (default: the
#                           one the system's apt sources use for its release)
#
# Must run as root on Debian 12 (bookworm) or a close relative; needs unshare and nsenter
# (util-linux) for host 2.
set -Eeuo pipefail

REPO=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
# shellcheck source=scripts/lib/host-common.sh
. "$REPO/scripts/lib/host-common.sh"
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
CODENAME=$(sed -n 's/^VERSION_CODENAME=//p' /etc/os-release 2>/dev/null || true)
CODENAME=${CODENAME:-bookworm}

# Host 2: its own libvirtd + virtlogd in a private mount namespace, its sockets in SOCK_DIR2
# (outside the private mounts), its own sshd on PORT2, its pool directory under HOST2.
HOST2=$STATE/host2
SOCK_DIR2=${LIBVIRT_HOST2_SOCK_DIR:-/run/kvm2-host2}
SOCKET2=$SOCK_DIR2/libvirt-sock
URI2="qemu+unix:///system?socket=$SOCKET2"
WANT_HOST2=1
[ "${LIBVIRT_HOST_ONE:-0}" = 1 ] && WANT_HOST2=0

# The port is remembered in the state directory so that env/status/stop agree with start.
if [ -n "${LIBVIRT_HOST_SSH_PORT:-}" ]; then
  PORT=$LIBVIRT_HOST_SSH_PORT
elif [ -f "$STATE/port" ]; then
  PORT=$(cat "$STATE/port")
else
  PORT=2222
fi
if [ -n "${LIBVIRT_HOST_SSH_PORT2:-}" ]; then
  PORT2=$LIBVIRT_HOST_SSH_PORT2
elif [ -f "$STATE/port2" ]; then
  PORT2=$(cat "$STATE/port2")
else
  PORT2=2223
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
# libvirtd is in libvirt-daemon in both versions.
#
# libvirt 11 (the default) and QEMU come from <codename>-backports through a private apt
# source list and lists directory under the state directory; the system's sources are
# not touched. Packaging facts behind the lists below:
#   - since 10.6 libvirt is split: the dir storage backend is libvirt-daemon-driver-storage
#     (without it a dir pool cannot be defined), virtlogd is libvirt-daemon-log;
#   - the network driver is libvirt-daemon-driver-network (9.0 had it in libvirt-daemon, and
#     libvirt-daemon 11 Recommends it): no libvirt network is used, but without it
#     DomainInterfaceAddresses with the lease source fails with VIR_ERR_NO_CONNECT
#     ("no connection driver available for network:///system") instead of answering an
#     empty list as 9.0 and a usual 11.x installation do;
#   - the interface driver (udev backend) is libvirt-daemon-driver-interface: it is how
#     `kvm2 preflight` looks the bridge up through libvirt (without it libvirt answers
#     VIR_ERR_NO_SUPPORT);
#   - libvirt-daemon-driver-qemu 11 needs "systemd-container | sysvinit-core": it is taken
#     from the release itself, otherwise apt upgrades the whole systemd suite to backports;
#   - every QEMU package comes from backports, for both libvirt versions: a backports
#     qemu-utils (what a fresh machine may already have) Breaks the release's
#     qemu-system-common, and apt would quietly remove qemu-utils (and qemu-img).
LIBVIRT_VERSION=${LIBVIRT_VERSION:-11}
LIBVIRT_PACKAGES_11=(
  libvirt-daemon libvirt-daemon-driver-qemu libvirt-daemon-driver-storage
  libvirt-daemon-driver-network libvirt-clients libvirt0 libvirt-common libvirt-daemon-common
  libvirt-daemon-log libvirt-daemon-driver-interface
)
LIBVIRT_PACKAGES_9=(libvirt-daemon libvirt-daemon-driver-qemu libvirt-clients libvirt0)
# Packages that exist only in the split (10.6+) libvirt and Break a 9.0 libvirt-daemon.
LIBVIRT_SPLIT_ONLY=(
  libvirt-common libvirt-daemon-common libvirt-daemon-log libvirt-daemon-driver-storage
  libvirt-daemon-driver-network libvirt-daemon-driver-interface
)
QEMU_PACKAGES=(qemu-system-x86 qemu-system-common qemu-system-data qemu-utils)
OTHER_PACKAGES=(ovmf openssh-server openssh-client)
APT_DIR=$STATE/apt

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
    virtlogd | virtlogd2 | libvirtd | libvirtd2 | sshd | sshd2) echo "$LOGS/$1.log" ;;
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

alive() {
  [ -f "$1" ] && alive_pid "$(cat "$1")"
}

port_open() { (exec 3<>"/dev/tcp/127.0.0.1/$1") 2>/dev/null; }

need_root() { [ "$(id -u)" = 0 ] || die "must run as root (libvirtd and sshd are system daemons)"; }

virsh_q() { virsh -q -c "$URI" "$@"; }

# apt-get/apt-cache with the private source list (the system's sources plus backports).
APT_OPTS=()
apt_private_update() {
  local mirror signed=
  mirror=${LIBVIRT_HOST_APT_MIRROR:-$(apt_mirror "$CODENAME")} || die "no Debian archive for '$CODENAME' in the system's apt sources; set LIBVIRT_HOST_APT_MIRROR"
  mkdir -p "$APT_DIR/lists/partial" "$APT_DIR/archives/partial"
  [ -f /usr/share/keyrings/debian-archive-keyring.gpg ] \
    && signed="[signed-by=/usr/share/keyrings/debian-archive-keyring.gpg] "
  {
    echo "# written by libvirt-host.sh: the system's sources.list plus $CODENAME-backports"
    [ -f /etc/apt/sources.list ] && cat /etc/apt/sources.list
    echo "deb ${signed}${mirror%/} $CODENAME-backports main"
  } >"$APT_DIR/sources.list"
  APT_OPTS=(-o "Dir::Etc::sourcelist=$APT_DIR/sources.list" -o "Dir::State::lists=$APT_DIR/lists"
    -o "Dir::Cache::archives=$APT_DIR/archives")
  log "apt-get update with $CODENAME-backports (private lists in $APT_DIR)"
  apt-get "${APT_OPTS[@]}" update -q >>"$LOGS/apt.log" 2>&1
}

version_of() { dpkg-query -W -f='${Version}' "$1" 2>/dev/null || true; }

# backports_dependencies APT_ARGS...: adds to the caller's `want` (as PKG/backports) each
# dependency the release's version cannot satisfy but backports' can: a backports QEMU can
# need a newer firmware package than the release has (10.0.2+ds-2+deb13u1~bpo12+1 needs
# seabios > 1.16.3-1~, which only backports carries). apt names them in a dry run.
backports_dependencies() {
  local bpo=$CODENAME-backports out p added _
  for _ in 1 2 3 4 5; do
    out=$(apt-get "${APT_OPTS[@]}" install -s "$@" "${want[@]}" 2>&1) && return 0
    added=0
    while read -r p; do
      [ -n "$p" ] || continue
      [[ " ${want[*]} " == *" $p/$bpo "* ]] && continue
      apt-cache "${APT_OPTS[@]}" madison "$p" | grep -q " $bpo/" || continue
      log "taking $p from $bpo too: the packages from there need it"
      want+=("$p/$bpo")
      added=1
    done < <(sed -n 's/^.*Depends: \([^ ]*\) (.*) but .* is to be installed$/\1/p' <<<"$out")
    # Nothing backports can mend: the real install reports apt's own error.
    [ "$added" = 1 ] || return 0
  done
}

# True when the wanted libvirt and a backports QEMU are installed: nothing to do.
packages_current() {
  local p v
  case $LIBVIRT_VERSION in
    11) for p in "${LIBVIRT_PACKAGES_11[@]}"; do
          installed "$p" && [[ $(version_of "$p") == 11.* ]] || return 1
        done ;;
    9) for p in "${LIBVIRT_PACKAGES_9[@]}"; do
         installed "$p" && [[ $(version_of "$p") == 9.* ]] || return 1
       done
       for p in "${LIBVIRT_SPLIT_ONLY[@]}"; do installed "$p" && return 1; done ;;
  esac
  for p in "${QEMU_PACKAGES[@]}"; do
    v=$(version_of "$p")
    installed "$p" && [[ $v == *bpo* ]] || return 1
  done
  for p in "${OTHER_PACKAGES[@]}"; do installed "$p" || return 1; done
  return 0
}

# A package change under running daemons leaves them on deleted binaries: stop ours first.
stop_daemons_for_upgrade() {
  if [ -f "$STATE/libvirtd.foreign" ] && virsh_q version >/dev/null 2>&1; then
    die "a libvirtd not started by this script is running; stop it before changing the libvirt version"
  fi
  alive "$STATE/libvirtd.pid" && log "stopping libvirtd and virtlogd for the package change"
  stop_pidfile libvirtd "$STATE/libvirtd.pid"
  stop_pidfile virtlogd "$STATE/virtlogd.pid"
  stop_host2_daemons
}

install_packages() {
  step "install packages (libvirt $LIBVIRT_VERSION, QEMU from backports)" apt
  case $LIBVIRT_VERSION in
    9 | 11) ;;
    *) die "LIBVIRT_VERSION must be 11 (default) or 9, not '$LIBVIRT_VERSION'" ;;
  esac
  packages_current && return 0
  [ "${LIBVIRT_HOST_NO_INSTALL:-0}" = 1 ] \
    && die "libvirt $LIBVIRT_VERSION and a backports QEMU are not installed (LIBVIRT_HOST_NO_INSTALL=1)"
  mkdir -p "$LOGS"
  export DEBIAN_FRONTEND=noninteractive
  # A different libvirt or QEMU under running daemons leaves them on deleted files; a
  # package that is only added (a driver, say) waits for the next daemon start instead.
  local have
  have=$(version_of libvirt-daemon)
  if [ -n "$have" ] && { [ "${have%%.*}" != "$LIBVIRT_VERSION" ] || [[ $(version_of qemu-system-x86) != *bpo* ]]; }; then
    stop_daemons_for_upgrade
  elif alive "$STATE/libvirtd.pid" || alive "$HOST2/libvirtd.pid"; then
    log "adding packages under the running daemons; they take effect at the next daemon start"
  fi
  step "install packages (libvirt $LIBVIRT_VERSION, QEMU from backports)" apt
  local t=$SECONDS bpo=$CODENAME-backports p want=() before
  before=$(version_of libvirt-daemon)
  apt_private_update
  local args=(-y -q --no-install-recommends --allow-downgrades -o Dpkg::Options::=--force-confold)
  for p in "${QEMU_PACKAGES[@]}"; do want+=("$p/$bpo"); done
  want+=("${OTHER_PACKAGES[@]}")
  if [ "$LIBVIRT_VERSION" = 11 ]; then
    for p in "${LIBVIRT_PACKAGES_11[@]}"; do want+=("$p/$bpo"); done
    want+=("systemd-container/$CODENAME")
    backports_dependencies "${args[@]}"
    log "installing libvirt 11 and QEMU from $bpo (libvirt-daemon was: ${before:-not installed})"
    apt-get "${APT_OPTS[@]}" install "${args[@]}" "${want[@]}" >>"$LOGS/apt.log" 2>&1
  else
    local v9
    v9=$(apt-cache "${APT_OPTS[@]}" madison libvirt-daemon | awk -F'|' '{gsub(/ /, "", $2)} $2 ~ /^9\./ {print $2; exit}')
    [ -n "$v9" ] || die "no libvirt 9.x in the apt sources"
    for p in "${LIBVIRT_PACKAGES_9[@]}"; do want+=("$p=$v9"); done
    # The split packages Break libvirt-daemon (<< 10.6): remove them in the same transaction.
    for p in "${LIBVIRT_SPLIT_ONLY[@]}"; do installed "$p" && want+=("$p-"); done
    backports_dependencies "${args[@]}"
    log "installing libvirt $v9 and QEMU from $bpo (libvirt-daemon was: ${before:-not installed})"
    apt-get "${APT_OPTS[@]}" install "${args[@]}" "${want[@]}" >>"$LOGS/apt.log" 2>&1
    if [[ $before == 1[0-9].* ]]; then
      # Removing the split packages deletes files that 11.x had taken over from the 9.0
      # packages (all of /usr/share/libvirt/cpu_map, libvirt_iohelper, virt-admin, ...):
      # every domain start then fails on cpu_map/index.xml. Reinstalling puts them back.
      log "downgraded from $before: reinstalling the 9.x packages to restore the files 11.x removed"
      want=()
      for p in "${LIBVIRT_PACKAGES_9[@]}"; do want+=("$p=$v9"); done
      apt-get "${APT_OPTS[@]}" install --reinstall "${args[@]}" "${want[@]}" >>"$LOGS/apt.log" 2>&1
    fi
  fi
  # libvirt re-probes QEMU's capabilities when either binary changed; dropping the cache
  # makes that certain.
  rm -rf /var/cache/libvirt/qemu/capabilities
  packages_current || die "the packages are still not as wanted after the install (see $LOGS/apt.log)"
  command -v qemu-img >/dev/null || die "qemu-img is missing after the install (see $LOGS/apt.log)"
  log "packages installed in $((SECONDS - t)) s: libvirt $(version_of libvirt-daemon), QEMU $(version_of qemu-system-x86)"
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

# Host 1 is the machine's own libvirtd; host 2 is a second libvirtd + virtlogd in a private
# mount namespace (see start_host2_namespace). use_host N points the H_* variables at one.
use_host() {
  case $1 in
    1)
      H=1 H_URI=$URI H_SOCKET=$SOCKET H_PORT=$PORT H_CONF=$STATE H_POOL_DIR=$STATE/pool
      H_SSHD_PID=$SSH_DIR/sshd.pid H_SSHD_CONF=$SSH_DIR/sshd_config H_SFX=
      ;;
    2)
      H=2 H_URI=$URI2 H_SOCKET=$SOCKET2 H_PORT=$PORT2 H_CONF=$HOST2 H_POOL_DIR=$HOST2/pool
      H_SSHD_PID=$SSH_DIR/sshd2.pid H_SSHD_CONF=$SSH_DIR/sshd2_config H_SFX=2
      ;;
    *) die "host must be 1 or 2, not '$1'" ;;
  esac
}
virsh_h() { virsh -q -c "$H_URI" "$@"; }

# Runs a command in the current host's mount namespace.
in_host() {
  if [ "$H" = 2 ]; then
    alive "$HOST2/ns.pid" || die "host 2's namespace holder is not running; run: $0 start"
    nsenter --target "$(cat "$HOST2/ns.pid")" --mount -- "$@"
  else
    "$@"
  fi
}

# A daemon answers on a Unix socket (in the current host's mount namespace).
socket_answers() {
  in_host python3 -c 'import socket, sys; s = socket.socket(socket.AF_UNIX); s.settimeout(2); s.connect(sys.argv[1])' "$1" 2>/dev/null
}

start_virtlogd() {
  step "start virtlogd (host $H)" "virtlogd$H_SFX"
  alive "$H_CONF/virtlogd.pid" && return 0
  # A second virtlogd would take /run/libvirt/virtlogd-sock over from the one the running
  # libvirtd uses, and leave no socket behind when it stops: use the one that is there.
  if socket_answers /run/libvirt/virtlogd-sock; then
    log "a virtlogd not started by this script already answers on /run/libvirt/virtlogd-sock (host $H); using it"
    return 0
  fi
  in_host /usr/sbin/virtlogd --daemon --config "$H_CONF/virtlogd.conf" --pid-file "$H_CONF/virtlogd.pid"
  local _
  for _ in $(seq 1 50); do alive "$H_CONF/virtlogd.pid" && return 0; sleep 0.1; done
  die "virtlogd did not start"
}

start_libvirtd() {
  step "start libvirtd (host $H)" "libvirtd$H_SFX"
  if ! alive "$H_CONF/libvirtd.pid"; then
    if [ "$H" = 1 ] && virsh_h version >/dev/null 2>&1; then
      # Someone else's libvirtd owns the system socket; use it, never stop it.
      log "a libvirtd not started by this script already answers on $SOCKET; using it"
      touch "$STATE/libvirtd.foreign"
      return 0
    fi
    [ "$H" = 1 ] && rm -f "$STATE/libvirtd.foreign"
    [ -x /usr/sbin/libvirtd ] || die "/usr/sbin/libvirtd not found (modular-only libvirt packages are not supported)"
    in_host /usr/sbin/libvirtd --daemon --config "$H_CONF/libvirtd.conf" --pid-file "$H_CONF/libvirtd.pid"
  fi
  # The first start probes QEMU's capabilities (about 8 s on 2 cores); later starts are quick.
  local _
  for _ in $(seq 1 600); do
    virsh_h version >/dev/null 2>&1 && return 0
    if [ -f "$H_CONF/libvirtd.pid" ] && ! alive "$H_CONF/libvirtd.pid"; then
      die "libvirtd exited during start-up"
    fi
    sleep 0.1
  done
  die "libvirtd did not answer on $H_SOCKET within 60 s"
}

ssh_opts() {
  echo -i "$SSH_DIR/client_ed25519" -o BatchMode=yes -o IdentitiesOnly=yes \
    -o StrictHostKeyChecking=yes -o UserKnownHostsFile="$SSH_DIR/known_hosts" -o ConnectTimeout=10
}

# Keys, authorized_keys and known_hosts, shared by both hosts' sshd.
prepare_ssh() {
  step "prepare ssh keys" sshd
  mkdir -p "$SSH_DIR" /run/sshd
  chmod 700 "$SSH_DIR"
  chmod 755 /run/sshd
  [ -f "$SSH_DIR/host_ed25519" ] || ssh-keygen -q -t ed25519 -N '' -C kvm2-test-host -f "$SSH_DIR/host_ed25519"
  [ -f "$SSH_DIR/client_ed25519" ] || ssh-keygen -q -t ed25519 -N '' -C kvm2-test-client -f "$SSH_DIR/client_ed25519"
  # Keep what others added (the real-host fixture adds and revokes keys of its own while
  # it runs); only make sure the client key is there.
  touch "$SSH_DIR/authorized_keys"
  chmod 600 "$SSH_DIR/authorized_keys"
  grep -qxF "$(cat "$SSH_DIR/client_ed25519.pub")" "$SSH_DIR/authorized_keys" \
    || cat "$SSH_DIR/client_ed25519.pub" >>"$SSH_DIR/authorized_keys"
  # With UsePAM no, sshd refuses a '!'-locked account even for key authentication;
  # '*' (no usable password) keeps password logins impossible but allows keys.
  if [ "$(getent shadow root | cut -d: -f2 | cut -c1)" = "!" ]; then
    log "root's password field is locked with '!'; setting it to '*' so key logins work"
    usermod -p '*' root
  fi
  local key
  key=$(cut -d' ' -f1-2 "$SSH_DIR/host_ed25519.pub")
  {
    echo "[127.0.0.1]:$PORT $key"
    [ "$WANT_HOST2" = 1 ] && echo "[127.0.0.1]:$PORT2 $key"
  } >"$SSH_DIR/known_hosts.new"
  # Replaced only when it changes, and atomically: tests may be reading it.
  if cmp -s "$SSH_DIR/known_hosts.new" "$SSH_DIR/known_hosts"; then
    rm -f "$SSH_DIR/known_hosts.new"
  else
    mv "$SSH_DIR/known_hosts.new" "$SSH_DIR/known_hosts"
  fi
}

# Launches the current host's sshd (both run in the machine's own namespace; host 2's
# socket is outside its private mounts, so either sshd reaches either socket).
launch_sshd() {
  step "start sshd (host $H, port $H_PORT)" "sshd$H_SFX"
  if ! alive "$H_SSHD_PID"; then
    if port_open "$H_PORT"; then
      die "127.0.0.1:$H_PORT is already in use by another process (set LIBVIRT_HOST_SSH_PORT${H_SFX})"
    fi
    /usr/sbin/sshd -t -f "$H_SSHD_CONF"
    /usr/sbin/sshd -f "$H_SSHD_CONF" -E "$LOGS/sshd$H_SFX.log"
  fi
  local _
  for _ in $(seq 1 50); do port_open "$H_PORT" && break; sleep 0.1; done
  port_open "$H_PORT" || die "sshd is not listening on 127.0.0.1:$H_PORT"
}

# libvirt answers through SOCK forwarded by the sshd on port P (the way kvm2 reaches it).
check_forward() {
  local p=$1 sock=$2 fwd=$SSH_DIR/check$H.sock ok=0
  step "check ssh login and socket forwarding (port $p, $sock)" "sshd$H_SFX"
  # shellcheck disable=SC2046
  ssh -q -p "$p" $(ssh_opts) root@127.0.0.1 test -S "$sock"
  # shellcheck disable=SC2046
  if forward_open "$fwd" "$sock" -p "$p" $(ssh_opts) root@127.0.0.1; then
    timeout 30 virsh -q -c "qemu+unix:///system?socket=$fwd" version >/dev/null 2>&1 && ok=1
  fi
  forward_close "$fwd"
  [ "$ok" = 1 ] || die "libvirt does not answer on $sock through the sshd on port $p"
}

start_sshd() {
  step "write sshd config (host $H)" "sshd$H_SFX"
  cat >"$H_SSHD_CONF.new" <<EOF
# Private sshd for the kvm2 integration host; loopback only, keys only.
ListenAddress 127.0.0.1
Port $H_PORT
HostKey $SSH_DIR/host_ed25519
PidFile $H_SSHD_PID
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
  if ! cmp -s "$H_SSHD_CONF.new" "$H_SSHD_CONF"; then
    /usr/sbin/sshd -t -f "$H_SSHD_CONF.new"
    reload=1
  fi
  mv "$H_SSHD_CONF.new" "$H_SSHD_CONF"
  if alive "$H_SSHD_PID" && [ "$reload" = 1 ]; then
    log "sshd_config of host $H changed; reloading sshd (pid $(cat "$H_SSHD_PID"))"
    kill -HUP "$(cat "$H_SSHD_PID")"
    sleep 0.5
  fi
  launch_sshd
  check_forward "$H_PORT" "$H_SOCKET"
}

create_pool() {
  step "create storage pool $POOL (host $H)" "libvirtd$H_SFX"
  local dir=$H_POOL_DIR
  mkdir -p "$dir"
  if ! virsh_h pool-info "$POOL" >/dev/null 2>&1; then
    virsh_h pool-define-as "$POOL" dir --target "$dir" >/dev/null
    touch "$H_CONF/pool.defined"
  fi
  local info
  info=$(virsh_h pool-info "$POOL")
  if ! [[ $info =~ State:[[:space:]]*running ]]; then
    virsh_h pool-build "$POOL" >/dev/null 2>&1 || true
    virsh_h pool-start "$POOL" >/dev/null
  fi
  virsh_h pool-refresh "$POOL" >/dev/null
}

# Host 2's private directories, bind-mounted over the paths libvirtd and virtlogd use
# (the compiled-in ones: domain and pool definitions in /etc/libvirt, state in
# /var/lib/libvirt and /run/libvirt, the capabilities cache, QEMU's logs).
HOST2_MOUNTS=(etc:/etc/libvirt lib:/var/lib/libvirt run:/run/libvirt cache:/var/cache/libvirt log:/var/log/libvirt)

prepare_host2() {
  step "prepare host 2's directories and configuration" libvirtd2
  local m src
  for m in "${HOST2_MOUNTS[@]}"; do mkdir -p "$HOST2/${m%%:*}"; done
  mkdir -p "$HOST2/lib/images" "$HOST2/lib/qemu/nvram" "$HOST2/pool" "$SOCK_DIR2"
  # Its own /etc/libvirt: the machine's configuration files (qemu.conf as written above),
  # none of host 1's persistent domains, pools or secrets.
  find /etc/libvirt -maxdepth 1 -type f -exec cp -p {} "$HOST2/etc/" \;
  for src in /etc/libvirt/*/; do
    src=${src%/}
    case ${src##*/} in
      qemu | storage | secrets | network) mkdir -p "$HOST2/etc/${src##*/}" ;;
      *) [ -e "$HOST2/etc/${src##*/}" ] || cp -a "$src" "$HOST2/etc/" ;;
    esac
  done
  # The QEMU capabilities host 1 has just probed: libvirt checks them against the QEMU and
  # libvirtd binaries, so a copy is valid and saves host 2 its own ~8 s probe.
  if [ -d /var/cache/libvirt/qemu/capabilities ] && [ ! -d "$HOST2/cache/qemu/capabilities" ]; then
    mkdir -p "$HOST2/cache/qemu"
    cp -a /var/cache/libvirt/qemu/capabilities "$HOST2/cache/qemu/"
  fi
  cat >"$HOST2/virtlogd.conf" <<EOF
log_outputs = "3:file:$LOGS/virtlogd2.log"
EOF
  # The sockets go to a directory outside the private mounts, where sshd finds them.
  cat >"$HOST2/libvirtd.conf" <<EOF
unix_sock_dir = "$SOCK_DIR2"
log_outputs = "3:file:$LOGS/libvirtd2.log"
EOF
}

# The namespace is held by a sleeping process (its pid in host2/ns.pid); the daemons are
# started inside it with nsenter, and so are restarted ones. Mounts there are private, so
# nothing of host 2 shows in the machine's own mount table.
start_host2_namespace() {
  step "start host 2's mount namespace" libvirtd2
  alive "$HOST2/ns.pid" && return 0
  # shellcheck disable=SC2016 # expanded by the inner shell
  local script='set -e; d=$1; shift
    for m in "$@"; do mount --bind "$d/${m%%:*}" "${m#*:}"; done
    exec sleep infinity'
  setsid unshare --mount --propagation private -- /bin/sh -c "$script" sh "$HOST2" "${HOST2_MOUNTS[@]}" \
    </dev/null >>"$LOGS/host2-ns.log" 2>&1 &
  echo $! >"$HOST2/ns.pid"
  local _ pid
  pid=$(cat "$HOST2/ns.pid")
  for _ in $(seq 1 50); do
    alive_pid "$pid" || die "host 2's namespace holder exited (see $LOGS/host2-ns.log)"
    # The holder execs sleep once every bind mount is in place.
    [ "$(readlink "/proc/$pid/exe" 2>/dev/null)" = "$(readlink -f "$(command -v sleep)")" ] && return 0
    sleep 0.1
  done
  die "host 2's namespace holder did not come up"
}

start_host2() {
  local t=$SECONDS
  prepare_host2
  start_host2_namespace
  use_host 2
  start_virtlogd
  start_libvirtd
  create_pool
  echo "$PORT2" >"$STATE/port2"
  start_sshd
  # The shared sshd reaches host 2's socket as well.
  use_host 1
  check_forward "$PORT" "$SOCKET2"
  echo "$((SECONDS - t))" >"$STATE/host2-start-seconds"
  log "host 2 up in $((SECONDS - t)) s: socket $SOCKET2, ssh port $PORT2 (and $PORT)"
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
# kvm2 configuration for the local test host(s), written by scripts/libvirt-host.sh start.
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
$(host2_up && cat <<EOT
    - name: local2
      address: 127.0.0.1
      port: $PORT2
      user: root
      keyFile: $SSH_DIR/client_ed25519
      knownHostsFile: $SSH_DIR/known_hosts
      socket: $SOCKET2
EOT
)
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
$(host2_up && echo "    local2: local2")
  timeouts:
    create: 5m
EOF
  mv "$CONFIG.tmp" "$CONFIG"
}

guest_ready() {
  [ -f "$CONFIG" ] && [ -f "$GUEST_DIR/guest.qcow2.sha256" ] && alive "$STATE/http.pid" \
    && ip link show "$BRIDGE" >/dev/null 2>&1
}

# "libvirt 11.3.0, QEMU 10.0.2" as the running libvirtd reports them.
versions() {
  virsh_q version 2>/dev/null | awk '
    /library:/ { lib = $NF } /hypervisor:/ { hv = $NF }
    END { printf "libvirt %s, QEMU %s", lib, hv }'
}

# Host 2's libvirtd runs (started by this script).
host2_up() { alive "$HOST2/libvirtd.pid"; }

cmd_start() {
  need_root
  mkdir -p "$STATE" "$LOGS"
  local t0=$SECONDS
  install_packages
  prepare_system
  echo "$PORT" >"$STATE/port"
  use_host 1
  start_virtlogd
  start_libvirtd
  prepare_ssh
  start_sshd
  create_pool
  log "host 1 up in $((SECONDS - t0)) s"
  if [ "$WANT_HOST2" = 1 ]; then
    start_host2
  else
    log "LIBVIRT_HOST_ONE=1: host 2 is not started"
  fi
  use_host 1
  if [ "${LIBVIRT_HOST_NO_GUEST:-0}" = 1 ]; then
    log "LIBVIRT_HOST_NO_GUEST=1: no bridge, guest image, image server or kvm2.yaml"
  else
    create_bridge
    build_guest
    serve_images
    write_config
  fi
  step "report"
  log "ready in $((SECONDS - t0)) s: $(versions)"
  log "ssh -p $PORT -i $SSH_DIR/client_ed25519 -o UserKnownHostsFile=$SSH_DIR/known_hosts root@127.0.0.1"
  host2_up && log "host 2: virsh -c '$URI2' (ssh port $PORT2)"
  if guest_ready; then
    log "image $(image_url) (sha256 $(image_sha256)); kvm2 configuration $CONFIG"
  fi
}

# Host 2's daemons (not its sshd, pool or namespace), for a package change.
stop_host2_daemons() {
  stop_pidfile "libvirtd (host 2)" "$HOST2/libvirtd.pid"
  stop_pidfile "virtlogd (host 2)" "$HOST2/virtlogd.pid"
}

stop_host2() {
  if host2_up; then
    local d
    for d in $(virsh -q -c "$URI2" list --name 2>/dev/null); do
      virsh -q -c "$URI2" destroy "$d" >/dev/null 2>&1 && log "destroyed running domain $d (host 2)"
    done
    if [ -f "$HOST2/pool.defined" ]; then
      virsh -q -c "$URI2" pool-destroy "$POOL" >/dev/null 2>&1
      virsh -q -c "$URI2" pool-undefine "$POOL" >/dev/null 2>&1 \
        && log "undefined pool $POOL on host 2 (its directory stays in $HOST2/pool)"
      rm -f "$HOST2/pool.defined"
    fi
  fi
  stop_pidfile "sshd (host 2)" "$SSH_DIR/sshd2.pid"
  stop_host2_daemons
  # The namespace (and its mounts) goes with its last process.
  stop_pidfile "host 2's namespace holder" "$HOST2/ns.pid"
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
  stop_host2
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
  if host2_up; then
    # Host 2 (local2 in kvm2.yaml): its socket, reachable through either sshd, and its own sshd.
    printf 'export KVM2_TEST_SOCKET2=%s KVM2_TEST_PORT2=%s\n' "$SOCKET2" "$PORT2"
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
    printf '%-9s %s\n' libvirt "$(versions)"
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
  if [ -f "$HOST2/ns.pid" ] || [ -f "$HOST2/libvirtd.pid" ]; then
    for name in namespace virtlogd libvirtd sshd; do
      case $name in
        namespace) file=$HOST2/ns.pid ;;
        sshd) file=$SSH_DIR/sshd2.pid ;;
        *) file=$HOST2/$name.pid ;;
      esac
      if alive "$file"; then
        printf '%-9s running (pid %s)\n' "2:$name" "$(cat "$file")"
      else
        printf '%-9s stopped\n' "2:$name"
        rc=1
      fi
    done
    if virsh -q -c "$URI2" version >/dev/null 2>&1; then
      printf '%-9s %s\n' 2:pool "$POOL: $(virsh -q -c "$URI2" pool-info "$POOL" 2>/dev/null | awk '/^State:/ {print $2}')"
    else
      printf '%-9s not answering on %s\n' 2:libvirt "$SOCKET2"
      rc=1
    fi
    printf '%-9s 127.0.0.1:%s, socket %s\n' 2:ssh "$PORT2" "$SOCKET2"
  elif [ "$WANT_HOST2" = 1 ]; then
    printf '%-9s not started\n' host2
  fi
  return $rc
}

# Every descendant of a process, deepest last.
descendants() {
  local c
  for c in $(ps -o pid= --ppid "$1" 2>/dev/null); do
    echo "$c"
    descendants "$c"
  done
}

# kill sshd|libvirtd [1|2]: SIGKILL, as a crash would. For sshd that is the listener and
# every session it forked (the sessions outlive a killed listener and would keep the
# forwarded libvirt connections open). QEMU processes are not libvirtd's children and stay.
cmd_kill() {
  need_root
  local what=${1:-} n=${2:-1} file pid pids
  use_host "$n"
  case $what in
    sshd) file=$H_SSHD_PID ;;
    libvirtd)
      [ "$n" = 1 ] && [ -f "$STATE/libvirtd.foreign" ] && die "host 1's libvirtd was not started here"
      file=$H_CONF/libvirtd.pid
      ;;
    *) die "usage: $0 kill sshd|libvirtd [1|2]" ;;
  esac
  alive "$file" || die "$what of host $n is not running"
  pid=$(cat "$file")
  if [ "$what" = sshd ]; then
    kill -STOP "$pid"
    pids=$(descendants "$pid")
    # shellcheck disable=SC2086
    kill -9 "$pid" $pids 2>/dev/null || true
  else
    kill -9 "$pid"
  fi
  local _
  for _ in $(seq 1 50); do alive_pid "$pid" || break; sleep 0.1; done
  log "killed $what of host $n (pid $pid${pids:+ and sessions ${pids//$'\n'/ }})"
}

# revive sshd|libvirtd [1|2]: start it again as start did, and wait until it answers.
cmd_revive() {
  need_root
  local what=${1:-} n=${2:-1} t=$SECONDS
  use_host "$n"
  case $what in
    sshd) launch_sshd ;;
    libvirtd) start_libvirtd ;;
    *) die "usage: $0 revive sshd|libvirtd [1|2]" ;;
  esac
  log "revived $what of host $n in $((SECONDS - t)) s"
}

case ${1:-} in
  start) cmd_start ;;
  stop) cmd_stop ;;
  env) cmd_env ;;
  status) cmd_status ;;
  kill) cmd_kill "${2:-}" "${3:-1}" ;;
  revive) cmd_revive "${2:-}" "${3:-1}" ;;
  *)
    echo "usage: $0 start|stop|env|status|kill sshd|libvirtd [1|2]|revive sshd|libvirtd [1|2]" >&2
    exit 2
    ;;
esac
