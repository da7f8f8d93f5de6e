"""The tenancy types, declared as kcp declares them (CRDs of its own), served as built-ins in every logical
cluster: `tenancy.kcp.io/v1alpha1` Workspace and WorkspaceType in a parent, `core.kcp.io/v1alpha1`
LogicalCluster `cluster` in the child a Workspace made (see apiextensions.declared)."""

from __future__ import annotations

from typing import Any

from kcp_apiserver.apiextensions.declared import CONDITIONS, STRING, declared_crd, object_schema
from kcp_apiserver.apiextensions.resources import resources_for
from kcp_apiserver.registry.resource import Resource

LOGICAL_CLUSTER_NAME = "cluster"  # the one LogicalCluster of a logical cluster, as in kcp
OWNER_ANNOTATION = "experimental.tenancy.kcp.io/owner"  # the creator, as kcp records it: {"username", "groups"}
FINALIZER = "tenancy.kcp.io/workspace"  # the child logical cluster is deleted before its Workspace goes

SCHEDULING, INITIALIZING, READY, TERMINATING = "Scheduling", "Initializing", "Ready", "Terminating"

_TYPE_REF: dict[str, Any] = {"type": "object", "properties": {"name": STRING, "path": STRING}}

# kcp's printer columns for Workspaces (kubectl get workspaces): Type, Region (wide), Phase, URL, Age
WORKSPACE_CRD = declared_crd("tenancy.kcp.io", "Workspace", "workspaces", object_schema(
    {"type": _TYPE_REF, "cluster": STRING, "URL": STRING,
     "location": {"type": "object", "x-kubernetes-preserve-unknown-fields": True}},
    {"phase": STRING, "conditions": CONDITIONS, "initializers": {"type": "array", "items": STRING}}),
    [{"name": "Type", "type": "string", "jsonPath": ".spec.type.name", "description": "Type of the workspace"},
     {"name": "Region", "type": "string", "jsonPath": ".metadata.labels['region']", "priority": 1,
      "description": "The region this workspace is in"},
     {"name": "Phase", "type": "string", "jsonPath": ".status.phase", "description": "The current phase"},
     {"name": "URL", "type": "string", "jsonPath": ".spec.URL", "description": "URL to access the workspace"},
     {"name": "Age", "type": "date", "jsonPath": ".metadata.creationTimestamp"}],
    ["ws"])

LOGICAL_CLUSTER_CRD = declared_crd("core.kcp.io", "LogicalCluster", "logicalclusters", object_schema(
    {"owner": {"type": "object", "properties": {k: STRING for k in (
        "apiVersion", "resource", "name", "cluster", "uid")}},
     "initializers": {"type": "array", "items": STRING}, "directlyDeletable": {"type": "boolean"}},
    {"phase": STRING, "URL": STRING, "conditions": CONDITIONS, "initializers": {"type": "array", "items": STRING}}),
    [{"name": "Phase", "type": "string", "jsonPath": ".status.phase", "description": "The current phase"},
     {"name": "URL", "type": "string", "jsonPath": ".status.URL", "description": "URL to access the cluster"},
     {"name": "Age", "type": "date", "jsonPath": ".metadata.creationTimestamp"}],
    [])

_TYPE_SELECTOR: dict[str, Any] = {"type": "object", "properties": {
    "none": {"type": "boolean"}, "types": {"type": "array", "items": _TYPE_REF}}}

# what a Workspace of this type gets: initializers (its own, and those of the types it extends), a default type
# for its children, limits on its parents and children, labels, and APIBindings made while it initializes
WORKSPACE_TYPE_CRD = declared_crd("tenancy.kcp.io", "WorkspaceType", "workspacetypes", object_schema(
    {"initializer": {"type": "boolean"},
     "extend": {"type": "object", "properties": {"with": {"type": "array", "items": _TYPE_REF}}},
     "additionalWorkspaceLabels": {"type": "object", "additionalProperties": STRING},
     "defaultChildWorkspaceType": _TYPE_REF,
     "limitAllowedChildren": _TYPE_SELECTOR, "limitAllowedParents": _TYPE_SELECTOR,
     "defaultAPIBindings": {"type": "array", "items": {
         "type": "object", "required": ["export"], "properties": {"path": STRING, "export": STRING}}}},
    {"conditions": CONDITIONS}),
    [{"name": "Age", "type": "date", "jsonPath": ".metadata.creationTimestamp"}],
    [])

(WORKSPACE,) = resources_for(WORKSPACE_CRD)
(LOGICAL_CLUSTER,) = resources_for(LOGICAL_CLUSTER_CRD)
(WORKSPACE_TYPE,) = resources_for(WORKSPACE_TYPE_CRD)
RESOURCES: tuple[Resource, ...] = (WORKSPACE, LOGICAL_CLUSTER, WORKSPACE_TYPE)

TYPE_ANNOTATION = "internal.tenancy.kcp.io/type"  # on a child's LogicalCluster: its type as `path:name` (kcp's key)
APIBINDINGS_INITIALIZER = "system:apibindings"  # the server's own: makes a type's defaultAPIBindings


def child_cluster(parent: str, name: str) -> str:
    """`root` + `team-a` = `root:team-a`: a workspace's path is its logical cluster's name."""
    return f"{parent}:{name}"
