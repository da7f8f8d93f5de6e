#!/bin/sh
# runc for the kubelet's dockerd (tests/e2e/kube_fixtures.py): kubelet 1.20 asks for a negative oomScoreAdj
# (-998 for every pod sandbox), which only a process with CAP_SYS_RESOURCE may set; this sandbox has none, so
# runc would fail every pod. Raise a negative value to 0 in the bundle's config.json, then run the real runc.
set -eu
bundle=""
prev=""
for arg in "$@"; do
  case "$prev" in --bundle|-b) bundle=$arg ;; esac
  case "$arg" in --bundle=*) bundle=${arg#--bundle=} ;; esac
  prev=$arg
done
if [ -n "$bundle" ] && [ -f "$bundle/config.json" ]; then
  tmp="$bundle/config.json.kcp"
  jq '(.process.oomScoreAdj // 0) as $adj | if $adj < 0 then .process.oomScoreAdj = 0 else . end' \
    "$bundle/config.json" >"$tmp" && mv "$tmp" "$bundle/config.json"
fi
exec runc "$@"
