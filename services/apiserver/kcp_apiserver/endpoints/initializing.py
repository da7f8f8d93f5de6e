"""kcp's initializing virtual workspace over HTTP: an initializer's controller's one URL to the workspaces that
wait for it (`/services/initializingworkspaces/<path>:<name>/clusters/<cluster or *>/...`).

The request was parsed as if it named the logical cluster (`clusters/<cluster or *>/...`) and authorized as
`initialize` on the initializer's WorkspaceType (filters). Across clusters (`*`) only LogicalClusters are
served, and lists and watches show only those still waiting for the initializer. In one cluster that waits for
it, every request is the ordinary handlers', made as the workspace's owner (kcp's view impersonates it too), so
the controller sets the workspace up with its admin's rights; once the initializer is lifted it is 403 there.
No second list or watch: the ordinary handlers serve both."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import replace
from typing import Protocol

from aiohttp import web

from kcp_apiserver.apimachinery import status as st
from kcp_apiserver.apimachinery.request import RequestContext, UserInfo
from kcp_apiserver.endpoints.apiexports import not_found, view_discovery
from kcp_apiserver.endpoints.handlers import ResourceHandlers
from kcp_apiserver.endpoints.nonresource import NonResourceHandlers
from kcp_apiserver.registry.resource import Obj, Resource


class InitializingContent(Protocol):
    """What the view needs to know of workspaces and their initializers (tenancy.initializing)."""

    @property
    def resource(self) -> Resource: ...  # LogicalClusters, the one type served across clusters

    async def known(self, initializer: str) -> bool: ...

    async def owner(self, cluster: str, initializer: str) -> UserInfo | None: ...

    def shows(self, initializer: str) -> Callable[[Obj], bool]: ...


class InitializingViewHandlers:
    def __init__(self, resources: ResourceHandlers, non_resource: NonResourceHandlers,
                 views: InitializingContent) -> None:
        self.resources = resources
        self.non_resource = non_resource
        self.views = views

    async def enter(self, ctx: RequestContext) -> None:
        """Before the ordinary handlers serve a request into one logical cluster: 404 for an initializer no
        WorkspaceType makes, 403 unless the cluster waits for it; then the request is the owner's."""
        if not await self.views.known(ctx.initializer):
            raise not_found()
        owner = await self.views.owner(ctx.cluster, ctx.initializer)
        if owner is None:
            raise st.APIError(403, "Forbidden", f'initializer "{ctx.initializer}" cannot access this workspace')
        ctx.impersonator, ctx.user = ctx.user, owner

    async def handle_wildcard(self, request: web.Request, ctx: RequestContext) -> web.StreamResponse:
        """`clusters/*`: discovery of LogicalClusters, and their list and watch narrowed to those waiting."""
        if not await self.views.known(ctx.initializer):
            raise not_found()
        info, res = ctx.info, self.views.resource
        if not info.is_resource:
            return view_discovery(self.non_resource, request, info, [res])
        if (info.group, info.version, info.resource) != (res.group, res.version, res.plural):
            raise not_found()
        shown = self.views.shows(ctx.initializer)
        endpoints = replace(self.resources.endpoints, visibility=lambda _res, _ctx: shown)
        return await self.resources.serve(request, info, res, endpoints)
