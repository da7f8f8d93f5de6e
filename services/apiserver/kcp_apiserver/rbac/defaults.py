"""kube's user-facing default ClusterRoles and ClusterRoleBindings, shared by every logical cluster.

They are held once, in memory, never written per logical cluster: the policy index treats them as
present in every cluster unless that cluster stores an object of the same name, and the registry
serves them read-through (see policy.SharedDefaults). The rules follow kube's bootstrap policy
for the API groups a logical cluster can serve.
"""

from __future__ import annotations

import uuid
from typing import Any

Obj = dict[str, Any]

GROUP = "rbac.authorization.k8s.io"
API_VERSION = f"{GROUP}/v1"
AGGREGATE_TO = "rbac.authorization.k8s.io/aggregate-to-"
BOOTSTRAPPING = {"kubernetes.io/bootstrapping": "rbac-defaults"}
AUTOUPDATE = {"rbac.authorization.kubernetes.io/autoupdate": "true"}
CREATED = "2026-01-01T00:00:00Z"  # the same in every logical cluster: they are one set of objects
RESOURCE_VERSION = "0"  # never stored: an edit writes the cluster's own copy (expected revision 0)

READ = ["get", "list", "watch"]
WRITE = ["create", "delete", "deletecollection", "patch", "update"]
READ_WRITE = READ + WRITE


def _rule(verbs: list[str], groups: list[str], resources: list[str]) -> Obj:
    return {"verbs": verbs, "apiGroups": groups, "resources": resources}


def _urls(verbs: list[str], urls: list[str]) -> Obj:
    return {"verbs": verbs, "nonResourceURLs": urls}


def _meta(kind: str, name: str, labels: dict[str, str] | None = None) -> Obj:
    return {"name": name, "uid": str(uuid.uuid5(uuid.NAMESPACE_URL, f"kcp:{kind}:{name}")),
            "resourceVersion": RESOURCE_VERSION, "creationTimestamp": CREATED,
            "labels": {**BOOTSTRAPPING, **(labels or {})}, "annotations": dict(AUTOUPDATE)}


def cluster_role(name: str, rules: list[Obj], *, labels: dict[str, str] | None = None,
                 aggregate: str = "") -> Obj:
    role: Obj = {"apiVersion": API_VERSION, "kind": "ClusterRole", "metadata": _meta("ClusterRole", name, labels)}
    if aggregate:
        role["aggregationRule"] = {"clusterRoleSelectors": [{"matchLabels": {AGGREGATE_TO + aggregate: "true"}}]}
    role["rules"] = rules
    return role


def cluster_role_binding(name: str, role: str, groups: list[str]) -> Obj:
    return {"apiVersion": API_VERSION, "kind": "ClusterRoleBinding", "metadata": _meta("ClusterRoleBinding", name),
            "roleRef": {"apiGroup": GROUP, "kind": "ClusterRole", "name": role},
            "subjects": [{"apiGroup": GROUP, "kind": "Group", "name": g} for g in groups]}


DISCOVERY_URLS = ["/api", "/api/*", "/apis", "/apis/*", "/healthz", "/livez", "/openapi", "/openapi/*", "/readyz",
                  "/version", "/version/"]
PUBLIC_URLS = ["/healthz", "/livez", "/readyz", "/version", "/version/"]
ISSUER_URLS = ["/.well-known/openid-configuration", "/.well-known/openid-configuration/", "/openid/v1/jwks",
               "/openid/v1/jwks/"]

_VIEW = [
    _rule(READ, [""], ["pods", "replicationcontrollers", "replicationcontrollers/scale", "serviceaccounts",
                       "services", "services/status", "endpoints", "persistentvolumeclaims",
                       "persistentvolumeclaims/status", "configmaps"]),
    _rule(READ, [""], ["limitranges", "resourcequotas", "bindings", "events", "pods/status",
                       "resourcequotas/status", "namespaces/status", "replicationcontrollers/status", "pods/log"]),
    _rule(READ, [""], ["namespaces"]),
    _rule(READ, ["discovery.k8s.io"], ["endpointslices"]),
    _rule(READ, ["apps"], ["controllerrevisions", "statefulsets", "statefulsets/status", "statefulsets/scale",
                           "daemonsets", "daemonsets/status", "deployments", "deployments/status",
                           "deployments/scale", "replicasets", "replicasets/status", "replicasets/scale"]),
    _rule(READ, ["autoscaling"], ["horizontalpodautoscalers", "horizontalpodautoscalers/status"]),
    _rule(READ, ["batch"], ["cronjobs", "cronjobs/status", "jobs", "jobs/status"]),
    _rule(READ, ["policy"], ["poddisruptionbudgets", "poddisruptionbudgets/status"]),
    _rule(READ, ["networking.k8s.io"], ["ingresses", "ingresses/status", "networkpolicies"]),
]

_EDIT = [
    _rule(READ, [""], ["pods/attach", "pods/exec", "pods/portforward", "pods/proxy", "secrets", "services/proxy"]),
    _rule(["impersonate"], [""], ["serviceaccounts"]),
    _rule(WRITE, [""], ["pods", "pods/attach", "pods/exec", "pods/portforward", "pods/proxy"]),
    _rule(["create"], [""], ["pods/eviction"]),
    _rule(WRITE, [""], ["configmaps", "events", "persistentvolumeclaims", "replicationcontrollers",
                        "replicationcontrollers/scale", "secrets", "serviceaccounts", "services", "services/proxy"]),
    _rule(["create"], [""], ["serviceaccounts/token"]),
    _rule(WRITE, ["apps"], ["daemonsets", "deployments", "deployments/rollback", "deployments/scale", "replicasets",
                            "replicasets/scale", "statefulsets", "statefulsets/scale"]),
    _rule(WRITE, ["autoscaling"], ["horizontalpodautoscalers"]),
    _rule(WRITE, ["batch"], ["cronjobs", "jobs"]),
    _rule(WRITE, ["policy"], ["poddisruptionbudgets"]),
    _rule(WRITE, ["networking.k8s.io"], ["ingresses", "networkpolicies"]),
]

_ADMIN = [
    _rule(["create"], ["authorization.k8s.io"], ["localsubjectaccessreviews"]),
    _rule(READ_WRITE, [GROUP], ["rolebindings", "roles"]),
]

CLUSTER_ROLES: tuple[Obj, ...] = (
    cluster_role("cluster-admin", [_rule(["*"], ["*"], ["*"]), _urls(["*"], ["*"])]),
    cluster_role("admin", [], aggregate="admin"),
    cluster_role("edit", [], aggregate="edit", labels={AGGREGATE_TO + "admin": "true"}),
    cluster_role("view", [], aggregate="view", labels={AGGREGATE_TO + "edit": "true"}),
    cluster_role("system:aggregate-to-admin", _ADMIN, labels={AGGREGATE_TO + "admin": "true"}),
    cluster_role("system:aggregate-to-edit", _EDIT, labels={AGGREGATE_TO + "edit": "true"}),
    cluster_role("system:aggregate-to-view", _VIEW, labels={AGGREGATE_TO + "view": "true"}),
    cluster_role("system:basic-user", [
        _rule(["create"], ["authorization.k8s.io"], ["selfsubjectaccessreviews", "selfsubjectrulesreviews"]),
        _rule(["create"], ["authentication.k8s.io"], ["selfsubjectreviews"])]),
    cluster_role("system:discovery", [_urls(["get"], DISCOVERY_URLS)]),
    cluster_role("system:public-info-viewer", [_urls(["get"], PUBLIC_URLS)]),
    cluster_role("system:service-account-issuer-discovery", [_urls(["get"], ISSUER_URLS)]),
)

CLUSTER_ROLE_BINDINGS: tuple[Obj, ...] = (
    cluster_role_binding("cluster-admin", "cluster-admin", ["system:masters"]),
    cluster_role_binding("system:basic-user", "system:basic-user", ["system:authenticated"]),
    cluster_role_binding("system:discovery", "system:discovery", ["system:authenticated"]),
    cluster_role_binding("system:public-info-viewer", "system:public-info-viewer",
                         ["system:authenticated", "system:unauthenticated"]),
    cluster_role_binding("system:service-account-issuer-discovery", "system:service-account-issuer-discovery",
                         ["system:serviceaccounts"]),
)
