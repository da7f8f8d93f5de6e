"""The tenancy types, declared as kcp declares them (CRDs of its own), served as built-ins in every logical
cluster: `tenancy.kcp.io/v1alpha1` Workspace in a parent, `core.kcp.io/v1alpha1` LogicalCluster `cluster`
in the child it made. Declaring them as CRD specs reuses the structural-schema validation, pruning, printer
columns and OpenAPI that custom resources already get."""

from __future__ import annotations

from typing import Any

from kcp_apiserver.apiextensions.resources import resources_for
from kcp_apiserver.registry.resource import Resource

LOGICAL_CLUSTER_NAME = "cluster"  # the one LogicalCluster of a logical cluster, as in kcp
OWNER_ANNOTATION = "experimental.tenancy.kcp.io/owner"  # the creator, as kcp records it: {"username", "groups"}
FINALIZER = "tenancy.kcp.io/workspace"  # the child logical cluster is deleted before its Workspace goes

SCHEDULING, INITIALIZING, READY, TERMINATING = "Scheduling", "Initializing", "Ready", "Terminating"

_STR: dict[str, Any] = {"type": "string"}
_CONDITIONS: dict[str, Any] = {"type": "array", "items": {
    "type": "object", "required": ["type", "status"],
    "properties": {k: _STR for k in ("type", "status", "reason", "message", "lastTransitionTime", "severity")}}}
_TYPE_REF: dict[str, Any] = {"type": "object", "properties": {"name": _STR, "path": _STR}}


def _crd(group: str, kind: str, plural: str, schema: dict[str, Any], columns: list[dict[str, Any]],
         short_names: list[str]) -> dict[str, Any]:
    names = {"kind": kind, "plural": plural, "singular": kind.lower(), "listKind": f"{kind}List",
             "shortNames": short_names, "categories": ["kcp"]}
    return {"metadata": {"name": f"{plural}.{group}"},
            "spec": {"group": group, "scope": "Cluster", "names": names,
                     "versions": [{"name": "v1alpha1", "served": True, "storage": True,
                                   "schema": {"openAPIV3Schema": schema}, "subresources": {"status": {}},
                                   "additionalPrinterColumns": columns}]},
            "status": {"acceptedNames": names}}


def _object(spec: dict[str, Any], status: dict[str, Any]) -> dict[str, Any]:
    return {"type": "object", "properties": {
        "apiVersion": _STR, "kind": _STR, "metadata": {"type": "object"},
        "spec": {"type": "object", "properties": spec}, "status": {"type": "object", "properties": status}}}


# kcp's printer columns for Workspaces (kubectl get workspaces): Type, Region (wide), Phase, URL, Age
WORKSPACE_CRD = _crd("tenancy.kcp.io", "Workspace", "workspaces", _object(
    {"type": _TYPE_REF, "cluster": _STR, "URL": _STR,
     "location": {"type": "object", "x-kubernetes-preserve-unknown-fields": True}},
    {"phase": _STR, "conditions": _CONDITIONS, "initializers": {"type": "array", "items": _STR}}),
    [{"name": "Type", "type": "string", "jsonPath": ".spec.type.name", "description": "Type of the workspace"},
     {"name": "Region", "type": "string", "jsonPath": ".metadata.labels['region']", "priority": 1,
      "description": "The region this workspace is in"},
     {"name": "Phase", "type": "string", "jsonPath": ".status.phase", "description": "The current phase"},
     {"name": "URL", "type": "string", "jsonPath": ".spec.URL", "description": "URL to access the workspace"},
     {"name": "Age", "type": "date", "jsonPath": ".metadata.creationTimestamp"}],
    ["ws"])

LOGICAL_CLUSTER_CRD = _crd("core.kcp.io", "LogicalCluster", "logicalclusters", _object(
    {"owner": {"type": "object", "properties": {k: _STR for k in (
        "apiVersion", "resource", "name", "cluster", "uid")}},
     "initializers": {"type": "array", "items": _STR}, "directlyDeletable": {"type": "boolean"}},
    {"phase": _STR, "URL": _STR, "conditions": _CONDITIONS, "initializers": {"type": "array", "items": _STR}}),
    [{"name": "Phase", "type": "string", "jsonPath": ".status.phase", "description": "The current phase"},
     {"name": "URL", "type": "string", "jsonPath": ".status.URL", "description": "URL to access the cluster"},
     {"name": "Age", "type": "date", "jsonPath": ".metadata.creationTimestamp"}],
    [])

(WORKSPACE,) = resources_for(WORKSPACE_CRD)
(LOGICAL_CLUSTER,) = resources_for(LOGICAL_CLUSTER_CRD)
RESOURCES: tuple[Resource, ...] = (WORKSPACE, LOGICAL_CLUSTER)


def child_cluster(parent: str, name: str) -> str:
    """`root` + `team-a` = `root:team-a`: a workspace's path is its logical cluster's name."""
    return f"{parent}:{name}"
