#!/bin/sh
# kube 1.20's source tree (for tests/kubecmd: kube's own test/cmd scripts and hack/lib), without Go:
# the same Debian tarball and sha256 as scripts/kube_build.sh, into the same .tools/kube-1.20, so a tree
# either script extracted serves both.
#   scripts/kube_source.sh    download (once, sha256-checked) and extract; prints the source folder
set -eu

REPO=$(cd "${0%/*}/.." && pwd)
DEB_VERSION=1.20.5+really1.20.2
TARBALL=kubernetes_${DEB_VERSION}.orig.tar.gz
SHA256=b83c0780efb182d928dc63d46488a847f161f04e40a94b96bf5247dd671ecdfc
URL=http://deb.debian.org/debian/pool/main/k/kubernetes/$TARBALL
ROOT=${KCP_KUBE_ROOT:-$REPO/.tools/kube-1.20}
SRC=$ROOT/src

if [ ! -f "$SRC/go.mod" ]; then
  mkdir -p "$ROOT"
  if [ ! -f "$ROOT/$TARBALL" ] || ! echo "$SHA256  $ROOT/$TARBALL" | sha256sum -c - >/dev/null 2>&1; then
    echo "kube_source.sh: downloading $URL" >&2
    curl -fsSL --retry 3 -o "$ROOT/$TARBALL.part" "$URL"
    echo "$SHA256  $ROOT/$TARBALL.part" | sha256sum -c - >/dev/null || {
      echo "kube_source.sh: $TARBALL does not match its sha256" >&2; exit 1; }
    mv "$ROOT/$TARBALL.part" "$ROOT/$TARBALL"
  fi
  rm -rf "$SRC" && mkdir -p "$SRC"
  tar -xzf "$ROOT/$TARBALL" -C "$SRC" --strip-components=1
fi
echo "$SRC"
