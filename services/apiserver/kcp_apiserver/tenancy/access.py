"""Entering a workspace: kcp's `access` verb. A request under `/clusters/<path>` of a logical cluster a
Workspace made is allowed only if the user may `access` the non-resource URL `/` there (kcp's convention:
a ClusterRole with nonResourceURLs ["/"] and verbs ["access"]; cluster-admin, which the creator is bound to,
grants it). Logical clusters not made by a Workspace (`admin`, flat names) are not gated: they keep working
as before. Which clusters are workspaces is followed from the LogicalClusters' shared informer.

An initializer's controller lifts itself as kcp's do: while a workspace waits for initializer `<path>:<name>`,
a user who may `initialize` the WorkspaceType `<name>` in `<path>` (verb `initialize` on `workspacetypes` of
`tenancy.kcp.io`, named) may get, update and patch the workspace's LogicalCluster `cluster` and its status,
without entering the workspace otherwise; through the initializing virtual workspace
(`/services/initializingworkspaces/<path>:<name>/...`) that same check is the only one made."""

from __future__ import annotations

import json
from collections.abc import Callable

from kcp_apiserver.apimachinery.request import SYSTEM_MASTERS, RequestContext, RequestInfo, UserInfo
from kcp_apiserver.rbac.authorizer import Decision, RBACAuthorizer
from kcp_apiserver.registry.informers import Informers
from kcp_apiserver.registry.resource import Obj, Resource
from kcp_apiserver.tenancy.types import (
    LOGICAL_CLUSTER,
    LOGICAL_CLUSTER_NAME,
    OWNER_ANNOTATION,
    WORKSPACE,
    WORKSPACE_TYPE,
    child_cluster,
)
from kcpcommon.keys import cluster_of
from kcpcommon.sharedcache import DeletedFinalStateUnknown, HandlerRegistration, deleted_object

ACCESS_VERB = "access"
INITIALIZE_VERB = "initialize"
INITIALIZER_VERBS = frozenset({"get", "update", "patch"})
DISCOVERY_PATHS = ("/api", "/openapi/", "/version")  # `/api...` covers /apis and a group's discovery
SYSTEM_INITIALIZERS = "system"  # `system:apibindings`...: the server's own initializers, no type's


def initialize_request(initializer: str) -> RequestInfo | None:
    """What acting as initializer `<path>:<name>` is, as the authorizer sees it: verb `initialize` on the
    WorkspaceType `<name>` in `<path>` (None: no type's initializer, such as the server's `system:` ones)."""
    path, _, name = initializer.rpartition(":")
    if not path or not name or path == SYSTEM_INITIALIZERS:
        return None
    return RequestInfo(path, "", is_resource=True, verb=INITIALIZE_VERB, api_prefix="apis", group=WORKSPACE_TYPE.group,
                       version=WORKSPACE_TYPE.version, resource=WORKSPACE_TYPE.plural, name=name)


class WorkspaceAccess:
    """The RBAC authorizer with kcp's workspace-entry check in front of it."""

    def __init__(self, rbac: RBACAuthorizer) -> None:
        self.rbac = rbac
        self.workspaces: set[str] = set()  # logical clusters a Workspace made (they hold a LogicalCluster)
        self.initializers: dict[str, tuple[str, ...]] = {}  # such a cluster -> the initializers it waits for

    def may_enter(self, user: UserInfo, cluster: str) -> bool:
        if cluster not in self.workspaces or SYSTEM_MASTERS in user.groups:
            return True
        return self.rbac.allows(user, RequestInfo(cluster, "/", is_resource=False, verb=ACCESS_VERB))

    def initializes(self, user: UserInfo, info: RequestInfo) -> bool:
        """The request is an initializer's controller reading or lifting itself from the LogicalCluster (or
        reading discovery there, as kubectl does first)."""
        if info.is_resource:
            if not (info.group == LOGICAL_CLUSTER.group and info.resource == LOGICAL_CLUSTER.plural
                    and info.name == LOGICAL_CLUSTER_NAME and info.subresource in ("", "status")
                    and info.verb in INITIALIZER_VERBS):
                return False
        elif info.verb != "get" or not info.path.startswith(DISCOVERY_PATHS):
            return False
        return any(self.may_initialize(user, initializer) for initializer in self.initializers.get(info.cluster, ()))

    def may_initialize(self, user: UserInfo, initializer: str) -> bool:
        """The user may act as initializer `<path>:<name>`: it holds `initialize` on that WorkspaceType (never
        on the server's own `system:` initializers)."""
        request = initialize_request(initializer)
        return request is not None and self.rbac.allows(user, request)

    async def authorize(self, ctx: RequestContext) -> Decision:
        if ctx.initializer:  # through the initializing virtual workspace: its one check (filters.authorization)
            return Decision(self.may_initialize(ctx.user, ctx.initializer))
        if ctx.cluster in self.initializers and self.initializes(ctx.user, ctx.info):
            return Decision(True)
        if not self.may_enter(ctx.user, ctx.cluster):
            return Decision(False, f'access denied to workspace "{ctx.cluster}"')
        return self.rbac.decide(ctx.user, ctx.info)


    def visibility(self, res: Resource, ctx: RequestContext) -> Callable[[Obj], bool] | None:
        """`kubectl get workspaces` lists to a user only the workspaces it may enter, or that it created
        (kcp's owner, who is bound to cluster-admin in the child before the workspace is Ready)."""
        user = ctx.user
        if res.group_resource != WORKSPACE.group_resource or SYSTEM_MASTERS in user.groups:
            return None

        def visible(ws: Obj) -> bool:
            meta = ws.get("metadata") or {}
            owner = json.loads((meta.get("annotations") or {}).get(OWNER_ANNOTATION) or "{}")
            if owner.get("username") == user.name:
                return True
            child = child_cluster(cluster_of(ws) or ctx.cluster, meta.get("name", ""))
            return self.rbac.allows(user, RequestInfo(child, "/", is_resource=False, verb=ACCESS_VERB))
        return visible


class FollowWorkspaces:
    """Every replica keeps WorkspaceAccess's set of workspace clusters current."""

    def __init__(self, access: WorkspaceAccess, informers: Informers) -> None:
        self.access = access
        self.informers = informers
        self._handler: HandlerRegistration | None = None

    async def start(self) -> None:
        informer = await self.informers.get(LOGICAL_CLUSTER)
        self._handler = informer.add_handler(on_add=self._seen, on_update=lambda _, lc: self._seen(lc),
                                             on_delete=self._gone, name="tenancy:access")
        await self._handler.wait_for_sync()
        await self.informers.get(WORKSPACE)

    async def stop(self) -> None:
        if self._handler is not None:
            self._handler.remove()

    def _seen(self, lc: Obj) -> None:
        cluster = cluster_of(lc) or ""
        self.access.workspaces.add(cluster)
        waiting = tuple(str(i) for i in (lc.get("status") or {}).get("initializers") or [])
        if waiting:
            self.access.initializers[cluster] = waiting
        else:
            self.access.initializers.pop(cluster, None)

    def _gone(self, lc: Obj | DeletedFinalStateUnknown) -> None:
        cluster = cluster_of(deleted_object(lc)) or ""
        self.access.workspaces.discard(cluster)
        self.access.initializers.pop(cluster, None)
