"""Where WorkspaceTypes and a logical cluster's own type are read: from the registry (etcd), so a type made
just before a Workspace is found, as a read after a write would find it."""

from __future__ import annotations

from collections.abc import Callable

from kcp_apiserver.apimachinery import status as st
from kcp_apiserver.registry.resource import Obj
from kcp_apiserver.registry.store import Registry
from kcp_apiserver.tenancy.types import LOGICAL_CLUSTER, LOGICAL_CLUSTER_NAME, TYPE_ANNOTATION, WORKSPACE_TYPE
from kcp_apiserver.tenancy.workspacetypes import ROOT_TYPE, Lookup, ParentType, TypeRef


def type_lookup(registry: Callable[[], Registry]) -> Lookup:
    async def get(cluster: str, name: str) -> Obj | None:
        try:
            return await registry().get(WORKSPACE_TYPE, cluster, "", name)
        except st.APIError as exc:
            if exc.code == 404:
                return None
            raise
    return get


def cluster_type_lookup(registry: Callable[[], Registry]) -> ParentType:
    async def type_of(cluster: str) -> TypeRef:
        """The type a workspace's logical cluster was made with; root and flat logical clusters are `root:root`."""
        try:
            lc = await registry().get(LOGICAL_CLUSTER, cluster, "", LOGICAL_CLUSTER_NAME)
        except st.APIError as exc:
            if exc.code == 404:
                return ROOT_TYPE
            raise
        annotation = ((lc.get("metadata") or {}).get("annotations") or {}).get(TYPE_ANNOTATION)
        return TypeRef.parse(str(annotation)) if annotation else ROOT_TYPE
    return type_of
