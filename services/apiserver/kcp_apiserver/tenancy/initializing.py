"""What the initializing virtual workspace (`/services/initializingworkspaces/<path>:<name>/...`) shows an
initializer's controller: the LogicalClusters still Initializing that name the initializer in
`status.initializers`, and inside each of them, the workspace's owner's rights (kcp's view impersonates the
owner, whom the workspace controller made cluster-admin there before the workspace was Initializing).

Who may use it is tenancy.access's rule (`initialize` on the WorkspaceType). Reads go to the registry, so a
LogicalCluster the controller just listed is found waiting, and one just lifted is found lifted. Of the
LogicalCluster itself the view only reads, and writes its status to lift the initializer (kcp's rule)."""

from __future__ import annotations

import json
from collections.abc import Callable

from kcp_apiserver.apimachinery import status as st
from kcp_apiserver.apimachinery.request import UserInfo
from kcp_apiserver.registry.admission import UPDATE, Attributes
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


class InitializerLift:
    """Admission: through an initializing view the LogicalCluster is read, and its status written only to take
    the view's initializer out of `status.initializers` (405 for any other write, 422 for another change to the
    list), as kcp's view allows; the owner's rights apply to everything else in the cluster."""

    async def validate(self, attrs: Attributes) -> None:
        initializer = attrs.ctx.initializer
        if not initializer or attrs.resource.group_resource != LOGICAL_CLUSTER.group_resource:
            return
        if attrs.operation != UPDATE or attrs.subresource != "status":
            raise st.method_not_allowed("through the initializing virtual workspace a LogicalCluster is only read, "
                                        "and its status written to remove the initializer")
        before = _initializers(attrs.old)
        after = _initializers(attrs.obj)
        if initializer not in before or after != [i for i in before if i != initializer]:
            raise st.invalid(LOGICAL_CLUSTER.kind, attrs.name, [st.Cause(
                "FieldValueInvalid", f'only removing the "{initializer}" initializer is supported',
                "status.initializers")], LOGICAL_CLUSTER.group)


def _initializers(lc: Obj | None) -> list[str]:
    return [str(i) for i in ((lc or {}).get("status") or {}).get("initializers") or []]
