# Environment overrides for kube's test/cmd scripts (sourced by run.sh after kube's own scripts).
# Each says why; README.md lists them too.

# kubectl 1.32/1.35 against 1.20's scripts: never pass --match-server-version (kube's ALLOW_SKEW)
ALLOW_SKEW=1
# the scripts assume a fresh cluster; kube's runTests would create the default namespace if missing
SUPPORTED_RESOURCES=("*")
