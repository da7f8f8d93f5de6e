#!/bin/sh
# make compose-e2e: a docker that answers (DOCKER_HOST), else the project's dockerd (scripts/dockerd.sh), stopped
# again by PID at the end when this script started it; the images, built and started (scripts/images.sh with
# KCP_IMAGES_TEST=1); then scripts/compose_e2e.py.
# Run from the repository root: scripts/compose_e2e.sh PYTHON SERVICE...
set -eu

PYTHON=${1:?usage: compose_e2e.sh PYTHON SERVICE...}

started=""
if ! docker version >/dev/null 2>&1; then
  if ! { command -v dockerd || command -v apt-get; } >/dev/null 2>&1; then
    echo "make compose-e2e: no docker: none answers, and dockerd is neither installed nor installable (apt-get)" >&2
    exit 1
  fi
  if ! scripts/dockerd.sh status; then
    scripts/dockerd.sh start
    started=yes
  fi
  eval "$(scripts/dockerd.sh env)"
  export DOCKER_HOST
fi
[ -z "$started" ] || trap 'scripts/dockerd.sh stop' EXIT

KCP_IMAGES_TEST=1 scripts/images.sh "$@"
"$PYTHON" scripts/compose_e2e.py --etcd-image "$(scripts/base_images.sh docker "$PYTHON" --etcd-tag)" \
  --kubectl "${KUBECTL:-kubectl}"
