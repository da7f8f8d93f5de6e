"""kube's own types' defaults and validation, one copy for the two servers that serve them: kcp-sim-cluster
(as built-in types) and kcp (as the CRDs imported from physical clusters). `kinds.kube_type` finds a
type's rules by (group, version, kind)."""
