#!/bin/sh
# The project's own dockerd, for the targets that need a real container engine (make images, make compose-e2e).
#   scripts/dockerd.sh start   install Debian's docker.io when dockerd is missing, start dockerd under
#                              .tools/docker/ (its data, exec root, pidfile, socket, log) and wait until it answers
#   scripts/dockerd.sh stop    stop it by the PID in its pidfile, and wait until it is gone
#   scripts/dockerd.sh env     print `export DOCKER_HOST=...` for it (eval "$(scripts/dockerd.sh env)")
#   scripts/dockerd.sh status  exit 0 when it answers
# It never touches the host's network rules: no iptables, no IP forwarding, no docker0 bridge. Containers reach
# each other on compose's own networks and the host through published ports (docker-proxy).
# For a kubelet (tests/e2e/kube_fixtures.py): KCP_DOCKERD_ROOT a root of its own, KCP_DOCKERD_BRIDGE a CIDR for a
# docker0 bridge (still no iptables: pods reach the host at its address), KCP_DOCKERD_RUNC a runc wrapper made
# the default runtime (scripts/runc_no_negative_oom.sh).
set -eu

REPO=$(cd "${0%/*}/.." && pwd)
ROOT=${KCP_DOCKERD_ROOT:-$REPO/.tools/docker}
SOCK=$ROOT/docker.sock
PIDFILE=$ROOT/dockerd.pid
HOST=unix://$SOCK

answers() {
  DOCKER_HOST=$HOST docker version >/dev/null 2>&1
}

running_pid() {
  [ -f "$PIDFILE" ] || return 1
  pid=$(cat "$PIDFILE")
  [ -n "$pid" ] && kill -0 "$pid" 2>/dev/null && echo "$pid"
}

install() {
  command -v dockerd >/dev/null 2>&1 && command -v docker >/dev/null 2>&1 && return 0
  if [ "$(id -u)" != 0 ] || ! command -v apt-get >/dev/null 2>&1; then
    echo "dockerd.sh: dockerd is not installed and cannot be (needs root and apt-get: apt-get install docker.io)" >&2
    exit 1
  fi
  echo "dockerd.sh: installing Debian's docker.io" >&2
  apt-get update -q >/dev/null
  DEBIAN_FRONTEND=noninteractive apt-get install -y -q --no-install-recommends docker.io >/dev/null
}

start() {
  if answers; then return 0; fi
  install
  mkdir -p "$ROOT/data" "$ROOT/exec"
  if pid=$(running_pid); then
    echo "dockerd.sh: dockerd $pid is running but does not answer on $SOCK" >&2
    exit 1
  fi
  network="--bridge=none"
  [ -z "${KCP_DOCKERD_BRIDGE:-}" ] || network="--bip=$KCP_DOCKERD_BRIDGE"
  set --
  [ -z "${KCP_DOCKERD_RUNC:-}" ] || set -- --add-runtime "kcp-runc=$KCP_DOCKERD_RUNC" --default-runtime kcp-runc
  # setsid: the daemon outlives the shell that started it, and a Ctrl-C there does not reach it
  setsid dockerd --data-root "$ROOT/data" --exec-root "$ROOT/exec" --pidfile "$PIDFILE" --host "$HOST" \
    --iptables=false --ip6tables=false --ip-forward=false --ip-masq=false "$network" \
    --userland-proxy=true "$@" >"$ROOT/dockerd.log" 2>&1 </dev/null &
  tries=0
  until answers; do
    tries=$((tries + 1))
    if [ $tries -gt 120 ]; then
      echo "dockerd.sh: dockerd did not answer on $SOCK within 60 s; the end of $ROOT/dockerd.log:" >&2
      tail -n 20 "$ROOT/dockerd.log" >&2
      exit 1
    fi
    sleep 0.5
  done
  echo "dockerd.sh: dockerd $(cat "$PIDFILE") answers on $SOCK" >&2
}

stop() {
  pid=$(running_pid) || { rm -f "$PIDFILE"; return 0; }
  kill -TERM "$pid"
  tries=0
  while kill -0 "$pid" 2>/dev/null; do
    tries=$((tries + 1))
    if [ $tries -gt 60 ]; then
      echo "dockerd.sh: dockerd $pid still running after 30 s: killing it" >&2
      kill -KILL "$pid" 2>/dev/null || true
      break
    fi
    sleep 0.5
  done
  rm -f "$PIDFILE"
  # dockerd leaves its own mounts behind (the host netns handle, its private data root): unmount them, deepest
  # first, so that .tools/docker can be removed
  real=$(cd "$ROOT" && pwd -P)
  awk -v root="$real/" 'index($2, root) == 1 { print $2 }' /proc/mounts | sort -r | while read -r mount; do
    umount "$mount" 2>/dev/null || true
  done
  echo "dockerd.sh: dockerd $pid stopped" >&2
}

case "${1:-}" in
  start) start ;;
  stop) stop ;;
  env) echo "export DOCKER_HOST=$HOST" ;;
  status) answers ;;
  *) echo "usage: $0 start|stop|env|status" >&2; exit 2 ;;
esac
