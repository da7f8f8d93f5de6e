#!/bin/sh
# Print the first container engine that answers (docker, then podman), or nothing.
# With --explain WHAT: say why WHAT cannot run, naming the missing (or silent) engine.
for engine in docker podman; do
  if command -v "$engine" >/dev/null 2>&1 && "$engine" info >/dev/null 2>&1; then
    [ "$1" = "--explain" ] || echo "$engine"
    exit 0
  fi
done
[ "$1" = "--explain" ] || exit 0
for engine in docker podman; do
  if command -v "$engine" >/dev/null 2>&1; then
    echo "$2: no container engine: $engine is installed but its daemon does not answer ('$engine info' fails)"
    exit 0
  fi
done
echo "$2: no container engine: neither docker nor podman is installed"
