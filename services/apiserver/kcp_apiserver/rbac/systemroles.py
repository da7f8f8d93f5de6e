"""kube's bootstrap ClusterRoles for the control plane's components (kubelet, kube-proxy, scheduler,
controller-manager, DNS, ...) and the bindings kube makes for them.

A logical cluster runs none of these components; kube's clients and charts still expect the roles to
exist (they bind to them, `kubectl auth reconcile` reads them), so every logical cluster shows them.
"""

from __future__ import annotations

from kcp_apiserver.rbac.bootstrap import EVENTS_WRITE, READ, Obj, cluster_role, cluster_role_binding, rule, user
from kcp_apiserver.rbac.bootstrap import service_account as sa

_REVIEWS = [rule("create", "authentication.k8s.io", "tokenreviews"),
            rule("create", "authorization.k8s.io", "subjectaccessreviews")]


def _leader(name: str) -> list[Obj]:
    """A component's leader-election Lease: any may be created, only its own read and renewed."""
    return [rule("create", "coordination.k8s.io", "leases"),
            rule("get,update", "coordination.k8s.io", "leases", name)]


_CONTROLLER_MANAGER = [
    rule(*EVENTS_WRITE), *_leader("kube-controller-manager"),
    rule("create", "", "secrets,serviceaccounts"),
    rule("delete", "", "secrets"),
    rule("get", "", "configmaps,namespaces,secrets,serviceaccounts"),
    rule("update", "", "secrets,serviceaccounts"),
    *_REVIEWS,
    rule("list,watch", "*", "*"),
    rule("create", "", "serviceaccounts/token"),
]

_SCHEDULER = [
    rule(*EVENTS_WRITE), *_leader("kube-scheduler"),
    rule(READ, "", "nodes"),
    rule("delete,get,list,watch", "", "pods"),
    rule("create", "", "bindings,pods/binding"),
    rule("patch,update", "", "pods/status"),
    rule(READ, "", "replicationcontrollers,services"),
    rule(READ, "apps,extensions", "replicasets"),
    rule(READ, "apps", "statefulsets"),
    rule(READ, "policy", "poddisruptionbudgets"),
    rule(READ, "", "persistentvolumeclaims,persistentvolumes"),
    *_REVIEWS,
    rule(READ, "storage.k8s.io", "csinodes"),
    rule(READ, "", "namespaces"),
    rule(READ, "storage.k8s.io", "csidrivers"),
    rule(READ, "storage.k8s.io", "csistoragecapacities"),
]

_NODE = [
    rule("create", "authentication.k8s.io", "tokenreviews"),
    rule("create", "authorization.k8s.io", "localsubjectaccessreviews,subjectaccessreviews"),
    rule(READ, "", "services"),
    rule("create,get,list,watch", "", "nodes"),
    rule("patch,update", "", "nodes/status"),
    rule("patch,update", "", "nodes"),
    rule("create,patch,update", "", "events"),
    rule(READ, "", "pods"),
    rule("create,delete", "", "pods"),
    rule("patch,update", "", "pods/status"),
    rule("create", "", "pods/eviction"),
    rule(READ, "", "configmaps,secrets"),
    rule("get", "", "persistentvolumeclaims,persistentvolumes"),
    rule("get", "", "endpoints"),
    rule("create,get,list,watch", "certificates.k8s.io", "certificatesigningrequests"),
    rule("create,delete,get,patch,update", "coordination.k8s.io", "leases"),
    rule("get", "storage.k8s.io", "volumeattachments"),
    rule("create", "", "serviceaccounts/token"),
    rule("get,patch,update", "", "persistentvolumeclaims/status"),
    rule(READ, "storage.k8s.io", "csidrivers"),
    rule("create,delete,get,patch,update", "storage.k8s.io", "csinodes"),
    rule(READ, "node.k8s.io", "runtimeclasses"),
]

ROLES: tuple[Obj, ...] = (
    cluster_role("system:heapster", [rule(READ, "", "events,namespaces,nodes,pods"),
                                     rule(READ, "extensions", "deployments")]),
    cluster_role("system:kube-aggregator", [rule(READ, "", "endpoints,services")]),
    cluster_role("system:kube-controller-manager", _CONTROLLER_MANAGER),
    cluster_role("system:kube-dns", [rule("list,watch", "", "endpoints,services")]),
    cluster_role("system:kube-scheduler", _SCHEDULER),
    cluster_role("system:kubelet-api-admin", [rule(READ, "", "nodes"), rule("proxy", "", "nodes"),
                                              rule("*", "", "nodes/log,nodes/metrics,nodes/proxy,nodes/stats")]),
    cluster_role("system:node", _NODE),
    cluster_role("system:node-bootstrapper", [
        rule("create,get,list,watch", "certificates.k8s.io", "certificatesigningrequests")]),
    cluster_role("system:node-problem-detector", [rule("get", "", "nodes"), rule("patch", "", "nodes/status"),
                                                  rule(*EVENTS_WRITE)]),
    cluster_role("system:node-proxier", [rule("list,watch", "", "endpoints,services"), rule(READ, "", "nodes"),
                                         rule(*EVENTS_WRITE), rule("list,watch", "discovery.k8s.io", "endpointslices")]),
    cluster_role("system:persistent-volume-provisioner", [
        rule("create,delete,get,list,watch", "", "persistentvolumes"),
        rule("get,list,update,watch", "", "persistentvolumeclaims"),
        rule(READ, "storage.k8s.io", "storageclasses"),
        rule("watch", "", "events"),
        rule(*EVENTS_WRITE)]),
    cluster_role("system:volume-scheduler", [rule("get,list,patch,update,watch", "", "persistentvolumes"),
                                             rule(READ, "storage.k8s.io", "storageclasses"),
                                             rule("get,list,patch,update,watch", "", "persistentvolumeclaims")]),
)

BINDINGS: tuple[Obj, ...] = (
    cluster_role_binding("system:kube-controller-manager", [user("system:kube-controller-manager")]),
    cluster_role_binding("system:kube-dns", [sa("kube-dns")]),
    cluster_role_binding("system:kube-scheduler", [user("system:kube-scheduler")]),
    cluster_role_binding("system:node", []),
    cluster_role_binding("system:node-proxier", [user("system:kube-proxy")]),
    cluster_role_binding("system:volume-scheduler", [user("system:kube-scheduler")]),
)
