# shellcheck shell=bash
# Helpers shared by scripts/libvirt-host.sh and scripts/container-host.sh; sourced, never
# run. The caller defines log and die.

# A pid names a live process (not a zombie; orphans may be reaped late without systemd).
alive_pid() {
  local status
  [ -n "$1" ] && status=$(cat "/proc/$1/status" 2>/dev/null) || return 1
  ! grep -q '^State:[[:space:]]*Z' <<<"$status"
}

# A Debian package is installed (not merely known to dpkg).
installed() {
  local status
  status=$(dpkg-query -W -f='${Status}' "$1" 2>/dev/null) || return 1
  [ "$status" = "install ok installed" ]
}

# apt_mirror SUITE: the archive URI of the first enabled "deb" source carrying SUITE, from
# deb822 .sources stanzas first, then one-line .list entries (options in [...] skipped).
apt_mirror() {
  local suite=$1 f uri
  for f in /etc/apt/sources.list.d/*.sources; do
    [ -f "$f" ] || continue
    uri=$(awk -v c="$suite" '
      BEGIN { RS = ""; FS = "\n" }
      {
        types = ""; suites = ""; uris = ""; enabled = "yes"
        for (i = 1; i <= NF; i++) {
          line = $i
          if (line ~ /^#/) continue
          key = line; sub(/:.*/, "", key); key = tolower(key)
          val = line; sub(/^[^:]*:[ \t]*/, "", val)
          if (key == "types") types = " " val " "
          else if (key == "suites") suites = " " val " "
          else if (key == "uris") uris = val
          else if (key == "enabled") enabled = val
        }
        if (enabled != "no" && types ~ / deb / && suites ~ (" " c " ")) { split(uris, u, " "); print u[1]; exit }
      }' "$f")
    [ -n "$uri" ] && { echo "$uri"; return 0; }
  done
  uri=$(cat /etc/apt/sources.list /etc/apt/sources.list.d/*.list 2>/dev/null \
    | sed -e 's/#.*//' -e 's/\[[^]]*\]//' \
    | awk -v c="$suite" '$1 == "deb" && $3 == c { print $2; exit }')
  [ -n "$uri" ] && { echo "$uri"; return 0; }
  return 1
}

# forward_open LOCAL REMOTE SSH_ARGS...: forwards the Unix socket LOCAL to REMOTE on the
# SSH server named by SSH_ARGS (options, then user@host) and waits up to 10 s for LOCAL
# to appear. The ssh client's pid is left in FORWARD_PID for forward_close.
FORWARD_PID=
forward_open() {
  local local_sock=$1 remote_sock=$2 _
  shift 2
  rm -f "$local_sock"
  ssh -q -N -o ExitOnForwardFailure=yes -L "$local_sock:$remote_sock" "$@" </dev/null &
  FORWARD_PID=$!
  for _ in $(seq 1 100); do
    [ -S "$local_sock" ] && return 0
    alive_pid "$FORWARD_PID" || return 1
    sleep 0.1
  done
  return 1
}

# forward_close LOCAL: ends the forward. Now and then the ssh client, told to stop right
# after its forward served a connection, lingers for minutes (seen: 300 s); it has done
# its job, so it gets 2 s after SIGTERM, then SIGKILL.
forward_close() {
  local local_sock=$1 pid=$FORWARD_PID _
  FORWARD_PID=
  if [ -n "$pid" ]; then
    kill "$pid" 2>/dev/null || true
    for _ in $(seq 1 20); do alive_pid "$pid" || break; sleep 0.1; done
    kill -9 "$pid" 2>/dev/null || true
    wait "$pid" 2>/dev/null || true
  fi
  rm -f "$local_sock"
}
