#!/bin/sh
# make images-test: every image `make images` built starts: `--help` exits 0 and prints the program's usage.
# Run from the repository root, with DOCKER_HOST naming the engine: scripts/images_test.sh ENGINE ETCD_IMAGE SERVICE...
set -eu

ENGINE=${1:?usage: images_test.sh ENGINE ETCD_IMAGE SERVICE...}
ETCD_IMAGE=${2:?usage: images_test.sh ENGINE ETCD_IMAGE SERVICE...}
shift 2

failed=0
check() {  # IMAGE EXPECTED ARGS...: the image's --help, its exit code and the usage line it must print
  image=$1 expected=$2
  shift 2
  if out=$("$ENGINE" run --rm --network none "$image" "$@" 2>&1) && printf '%s\n' "$out" | grep -q "$expected"; then
    echo "ok   $image: $(printf '%s\n' "$out" | grep -m1 "$expected")"
  else
    echo "FAIL $image: no \"$expected\" with exit 0 from $*: $(printf '%s\n' "$out" | head -n 5)" >&2
    failed=1
  fi
}

for service in "$@"; do
  check "kcp-$service:latest" "^usage: kcp-$service " --help
done
check "$ETCD_IMAGE" "etcd \[flags\]" etcd --help
exit $failed
