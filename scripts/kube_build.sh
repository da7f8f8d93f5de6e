#!/bin/sh
# A real Kubernetes 1.20 control plane for the real-engine targets (make kube, make kube-e2e), built offline
# from Debian's `kubernetes` source package (upstream tree with vendor/) with Debian's Go, and cached:
#   scripts/kube_build.sh          build once into .tools/kube-1.20/bin (kube-apiserver, kube-controller-manager,
#                                  kube-scheduler, kubelet); a second run finds the binaries and does nothing
#   scripts/kube_build.sh path     print the bin folder (exit 1 when it has not been built)
# The source comes from deb.debian.org (bullseye's pool: the package left Debian after bullseye), checked
# against the sha256 its Sources index gives. The binaries report v1.20.2, as kube's release build would.
set -eu

REPO=$(cd "${0%/*}/.." && pwd)
VERSION=1.20.2
DEB_VERSION=1.20.5+really1.20.2
TARBALL=kubernetes_${DEB_VERSION}.orig.tar.gz
SHA256=b83c0780efb182d928dc63d46488a847f161f04e40a94b96bf5247dd671ecdfc
URL=http://deb.debian.org/debian/pool/main/k/kubernetes/$TARBALL
ROOT=${KCP_KUBE_ROOT:-$REPO/.tools/kube-1.20}
BIN=$ROOT/bin
SRC=$ROOT/src
COMMANDS="kube-apiserver kube-controller-manager kube-scheduler kubelet"

built() {
  for c in $COMMANDS; do [ -x "$BIN/$c" ] || return 1; done
}

if [ "${1:-}" = path ]; then
  built || { echo "kube_build.sh: not built yet (run scripts/kube_build.sh)" >&2; exit 1; }
  echo "$BIN"
  exit 0
fi

if built; then
  echo "kube_build.sh: kube $VERSION is built in $BIN" >&2
  exit 0
fi

# kube's build needs Go, rsync (hack/ copies generated files with it) and make
need=""
command -v go >/dev/null 2>&1 || [ -x /usr/lib/go/bin/go ] || need="$need golang-go"
command -v rsync >/dev/null 2>&1 || need="$need rsync"
command -v make >/dev/null 2>&1 || need="$need make"
if [ -n "$need" ]; then
  if [ "$(id -u)" != 0 ] || ! command -v apt-get >/dev/null 2>&1; then
    echo "kube_build.sh: missing$need and cannot install them (needs root and apt-get)" >&2
    exit 1
  fi
  echo "kube_build.sh: installing Debian's$need" >&2
  # shellcheck disable=SC2086
  { apt-get update -q && DEBIAN_FRONTEND=noninteractive apt-get install -y -q --no-install-recommends $need; } \
    >/dev/null 2>&1 || { echo "kube_build.sh: apt-get could not install$need (no network?)" >&2; exit 1; }
fi
PATH=/usr/lib/go/bin:$PATH

mkdir -p "$ROOT" "$BIN"
if [ ! -f "$ROOT/$TARBALL" ] || ! echo "$SHA256  $ROOT/$TARBALL" | sha256sum -c - >/dev/null 2>&1; then
  echo "kube_build.sh: downloading $URL" >&2
  curl -fsSL --retry 3 -o "$ROOT/$TARBALL.part" "$URL" 2>/dev/null || {
    echo "kube_build.sh: cannot download $URL (no network?)" >&2; exit 1; }
  echo "$SHA256  $ROOT/$TARBALL.part" | sha256sum -c - >/dev/null || {
    echo "kube_build.sh: $TARBALL does not match its sha256" >&2; exit 1; }
  mv "$ROOT/$TARBALL.part" "$ROOT/$TARBALL"
fi
if [ ! -f "$SRC/go.mod" ]; then
  rm -rf "$SRC" && mkdir -p "$SRC"
  tar -xzf "$ROOT/$TARBALL" -C "$SRC" --strip-components=1
fi

start=$(date +%s)
cd "$SRC"
missing=""
for c in $COMMANDS; do [ -x "$BIN/$c" ] || missing="$missing cmd/$c"; done
# kube's own build (hack/make-rules): it sets up GOPATH mode, generates the OpenAPI definitions and stamps
# the version from the KUBE_GIT_* variables (the tarball is no git tree)
echo "kube_build.sh: make WHAT=\"${missing# }\" (Go $(go env GOVERSION)); about 15 minutes on 2 cores" >&2
KUBE_GIT_VERSION=v$VERSION KUBE_GIT_MAJOR=1 KUBE_GIT_MINOR=20 KUBE_GIT_TREE_STATE=clean \
  KUBE_GIT_COMMIT=0000000000000000000000000000000000000000 GOCACHE="$ROOT/gocache" GOFLAGS= \
  make WHAT="${missing# }" GOLDFLAGS="-s -w" >&2
for c in $COMMANDS; do
  [ -x "$BIN/$c" ] || cp "$SRC/_output/local/bin/linux/$(go env GOARCH)/$c" "$BIN/$c"
done
echo "kube_build.sh: built kube $VERSION in $BIN in $(( $(date +%s) - start )) s" >&2
