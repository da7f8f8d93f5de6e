"""What the initializing virtual workspace (`/services/initializingworkspaces/<path>:<name>/...`) shows an
initializer's controller: the LogicalClusters still Initializing that name the initializer in
`status.initializers`, and inside each of them, the workspace's owner's rights (kcp's view impersonates the
owner, whom the workspace controller made cluster-admin there before the workspace was Initializing).

Who may use it is tenancy.access's rule (`initialize` on the WorkspaceType). Reads go to the registry, so a
LogicalCluster the controller just listed is found waiting, and one just lifted is found lifted."""

from __future__ import annotations

import json
from collections.abc import Callable

from kcp_apiserver.apimachinery import status as st
from kcp_apiserver.apimachinery.request import UserInfo
from kcp_apiserver.registry.resource import Obj, Resource
from kcp_apiserver.registry.store import Registry
from kcp_apiserver.tenancy.access import initialize_request
from kcp_apiserver.tenancy.types import INITIALIZING, LOGICAL_CLUSTER, LOGICAL_CLUSTER_NAME, OWNER_ANNOTATION
from kcp_apiserver.tenancy.workspacetypes import Lookup, TypeRef, find


def waits_for(lc: Obj, initializer: str) -> bool:
    """The LogicalCluster is Initializing and `initializer` has not lifted itself yet."""
    status = lc.get("status") or {}
    return status.get("phase") == INITIALIZING and initializer in (status.get("initializers") or ())


def owner_of(lc: Obj) -> UserInfo | None:
    """The workspace's creator, as its LogicalCluster records it (None: none recorded)."""
    raw = ((lc.get("metadata") or {}).get("annotations") or {}).get(OWNER_ANNOTATION) or ""
    try:
        owner = json.loads(raw) if raw else {}
    except ValueError:
        return None
    if not isinstance(owner, dict) or not owner.get("username"):
        return None
    return UserInfo(str(owner["username"]), uid=str(owner.get("uid") or ""),
                    groups=tuple(str(g) for g in owner.get("groups") or ()))


class InitializingViews:
    def __init__(self, registry: Callable[[], Registry], types: Lookup) -> None:
        self.registry = registry
        self.types = types

    @property
    def resource(self) -> Resource:
        return LOGICAL_CLUSTER

    async def known(self, initializer: str) -> bool:
        """A WorkspaceType (or a built-in one) makes this initializer; the server's own are no type's."""
        if initialize_request(initializer) is None:
            return False
        return await find(self.types, TypeRef.parse(initializer)) is not None

    async def owner(self, cluster: str, initializer: str) -> UserInfo | None:
        """Who a request into `cluster` is made as: its owner while it waits for `initializer`, else None.
        A waiting workspace with no owner recorded is an error, as in kcp."""
        try:
            lc = await self.registry().get(LOGICAL_CLUSTER, cluster, "", LOGICAL_CLUSTER_NAME)
        except st.APIError as exc:
            if exc.code == 404:
                return None
            raise
        if not waits_for(lc, initializer):
            return None
        owner = owner_of(lc)
        if owner is None:
            raise st.APIError(500, "InternalError", f'LogicalCluster "{cluster}" has no owner recorded')
        return owner

    def shows(self, initializer: str) -> Callable[[Obj], bool]:
        return lambda lc: waits_for(lc, initializer)
