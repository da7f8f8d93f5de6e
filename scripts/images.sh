#!/bin/sh
# make images: one image per service (kcp-<service>:latest) and kcp-etcd, with the first container engine that
# answers (docker, podman); when none does, the project's own dockerd (scripts/dockerd.sh), stopped again at the
# end. Base images are made locally when the engine lacks them (scripts/base_images.sh). Builds use the classic
# builder and the host's network: no BuildKit image to pull, and pip reaches the package index as the host does.
# With KCP_IMAGES_TEST=1 (make images-test), each image is then started (scripts/images_test.sh).
# Run from the repository root: scripts/images.sh PYTHON SERVICE...
set -eu

PYTHON=${1:?usage: images.sh PYTHON SERVICE...}
shift

engine=$(scripts/container_engine.sh)
started=""
if [ -z "$engine" ] && { command -v dockerd || command -v apt-get; } >/dev/null 2>&1; then
  if ! scripts/dockerd.sh status; then
    scripts/dockerd.sh start
    started=yes
  fi
  eval "$(scripts/dockerd.sh env)"
  export DOCKER_HOST
  engine=docker
fi
if [ -z "$engine" ]; then
  scripts/container_engine.sh --explain "make images" >&2
  exit 1
fi
[ -z "$started" ] || trap 'scripts/dockerd.sh stop' EXIT

scripts/base_images.sh "$engine" "$PYTHON"
for service in "$@"; do
  echo "== kcp-$service"
  DOCKER_BUILDKIT=0 "$engine" build --network host -f "services/$service/Dockerfile" -t "kcp-$service:latest" .
done
if [ "${KCP_IMAGES_TEST:-}" = 1 ]; then
  scripts/images_test.sh "$engine" "$(scripts/base_images.sh "$engine" "$PYTHON" --etcd-tag)" "$@"
fi
