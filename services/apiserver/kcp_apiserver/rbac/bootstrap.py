"""How kube's bootstrap RBAC objects are written: the label, annotation and rule shapes every default shares.

The modules that hold the roles (defaults, systemroles, controllerroles) write each rule as one call,
`rule("get,list,watch", "apps,extensions", "deployments")`, comma lists as kube's policy builder takes them
(verbs and resources sorted, as kube's builder sorts them). An object's uid and creationTimestamp are not set
here: they belong to the logical cluster that shows it (policy.PolicyIndex.default_object).
"""

from __future__ import annotations

from typing import Any

Obj = dict[str, Any]

GROUP = "rbac.authorization.k8s.io"
API_VERSION = f"{GROUP}/v1"
AGGREGATE_TO = "rbac.authorization.k8s.io/aggregate-to-"
BOOTSTRAPPING = {"kubernetes.io/bootstrapping": "rbac-defaults"}
AUTOUPDATE = {"rbac.authorization.kubernetes.io/autoupdate": "true"}
RESOURCE_VERSION = "0"  # never stored: an edit writes the cluster's own copy (expected revision 0)
KUBE_SYSTEM = "kube-system"

READ = "get,list,watch"
WRITE = "create,delete,deletecollection,patch,update"
READ_WRITE = f"{READ},{WRITE}"
EVENTS_WRITE = ("create,patch,update", ",events.k8s.io", "events")  # what every controller may do with Events


def _split(text: str) -> list[str]:
    return text.split(",")  # "" is the core group: [""]


def rule(verbs: str, groups: str, resources: str, names: str = "") -> Obj:
    out: Obj = {"verbs": sorted(set(_split(verbs))), "apiGroups": _split(groups),
                "resources": sorted(set(_split(resources)))}
    if names:
        out["resourceNames"] = sorted(_split(names))
    return out


def urls(verbs: str, paths: str) -> Obj:
    return {"verbs": sorted(_split(verbs)), "nonResourceURLs": sorted(_split(paths))}


def _meta(name: str, labels: dict[str, str] | None = None) -> Obj:
    # uid and creationTimestamp are the showing cluster's (set in policy.PolicyIndex.default_object)
    return {"name": name, "uid": "", "resourceVersion": RESOURCE_VERSION, "creationTimestamp": "", "labels": {**BOOTSTRAPPING, **(labels or {})},
            "annotations": dict(AUTOUPDATE)}


def cluster_role(name: str, rules: list[Obj], *, labels: dict[str, str] | None = None,
                 aggregate: str = "") -> Obj:
    role: Obj = {"apiVersion": API_VERSION, "kind": "ClusterRole", "metadata": _meta(name, labels)}
    if aggregate:
        role["aggregationRule"] = {"clusterRoleSelectors": [{"matchLabels": {AGGREGATE_TO + aggregate: "true"}}]}
    role["rules"] = rules
    return role


def group(name: str) -> Obj:
    return {"apiGroup": GROUP, "kind": "Group", "name": name}


def user(name: str) -> Obj:
    return {"apiGroup": GROUP, "kind": "User", "name": name}


def service_account(name: str, namespace: str = KUBE_SYSTEM) -> Obj:
    return {"kind": "ServiceAccount", "name": name, "namespace": namespace}


def cluster_role_binding(name: str, subjects: list[Obj], role: str = "") -> Obj:
    """A ClusterRoleBinding of the ClusterRole `role` (default: its own name) to `subjects`."""
    binding: Obj = {"apiVersion": API_VERSION, "kind": "ClusterRoleBinding", "metadata": _meta(name),
                    "roleRef": {"apiGroup": GROUP, "kind": "ClusterRole", "name": role or name}}
    if subjects:  # kube's system:node binding has none (the Node authorizer grants nodes their rights)
        binding["subjects"] = subjects
    return binding
