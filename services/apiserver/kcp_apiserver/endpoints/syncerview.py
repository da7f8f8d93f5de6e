"""kcp's syncer virtual workspace over HTTP: a SyncTarget's syncer's one URL to the workspaces placed on it
(`/services/syncer/<compute>/<synctarget>/clusters/<workspace or *>/...`).

The request was parsed as if it named the workspace (`clusters/<workspace or *>/...`) and authorized as `sync` on
the SyncTarget (filters). Here it is narrowed to what the SyncTarget's view shows (tenancy.syncerview): a request
into one namespace, or on one Namespace, only where that namespace is placed on the SyncTarget (403 elsewhere); a
named cluster-scoped object only if assigned to it; lists and watches, in one workspace or across them, only of
what the view shows. It is then made as the view's own identity by the ordinary handlers: no second list or
watch. Discovery is the workspace's own.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import replace
from typing import Protocol

from aiohttp import web

from kcp_apiserver.apimachinery import status as st
from kcp_apiserver.apimachinery.request import RequestContext, RequestInfo, SyncTargetRef, UserInfo
from kcp_apiserver.endpoints.handlers import ResourceHandlers
from kcp_apiserver.endpoints.nonresource import NonResourceHandlers
from kcp_apiserver.registry.builtin import NAMESPACE
from kcp_apiserver.registry.resource import Obj, Resource


class SyncerContent(Protocol):
    """What the view needs to know of placed namespaces (tenancy.syncerview.SyncerViews)."""

    @property
    def identity(self) -> UserInfo: ...

    def placed(self, ref: SyncTargetRef, cluster: str, namespace: str) -> bool: ...

    def shows(self, ref: SyncTargetRef, res: Resource) -> Callable[[Obj], bool]: ...


def forbidden(ref: SyncTargetRef, info: RequestInfo, what: str) -> st.APIError:
    """kube's Forbidden shape (`configmaps "x" is forbidden: ...`), saying what is not placed."""
    subject = f"{info.resource}.{info.group}" if info.group else info.resource
    if info.name:
        subject += f' "{info.name}"'
    return st.APIError(403, "Forbidden", f'{subject} is forbidden: {what} of workspace "{info.cluster}" is not placed '
                                         f'on SyncTarget "{ref.name}" of workspace "{ref.cluster}": its syncer may not '
                                         f'{info.verb} it', {k: v for k, v in (("name", info.name), ("group", info.group),
                                                                              ("kind", info.resource)) if v})


class SyncerViewHandlers:
    def __init__(self, resources: ResourceHandlers, non_resource: NonResourceHandlers, views: SyncerContent) -> None:
        self.resources = resources
        self.non_resource = non_resource
        self.views = views

    async def handle(self, request: web.Request, ctx: RequestContext) -> web.StreamResponse:
        ref, info = ctx.syncer, ctx.info
        assert ref is not None
        if not info.is_resource:
            return await self.non_resource.handle(request, info)
        ep = self.resources.endpoints
        res = ep.catalog.lookup(info.cluster, info.group, info.version, info.resource, info.identity)
        if res is None:
            raise st.APIError(404, "NotFound", "the server could not find the requested resource")
        shown = self.views.shows(ref, res)
        if not info.wildcard:
            await self._admit(ref, info, res, shown)
        ctx.impersonator, ctx.user = ctx.user, self.views.identity
        return await self.resources.serve(request, info, res, replace(ep, visibility=lambda _res, _ctx: shown))

    async def _admit(self, ref: SyncTargetRef, info: RequestInfo, res: Resource, shown: Callable[[Obj], bool]) -> None:
        """A request into one workspace: 403 unless what it names is in the view (a list in it is narrowed)."""
        if res.group_resource == NAMESPACE.group_resource:
            if info.name and not self.views.placed(ref, info.cluster, info.name):
                raise forbidden(ref, info, f'namespace "{info.name}"')
            if not info.name and info.verb not in ("list", "watch"):
                raise forbidden(ref, info, "a new namespace")
            return
        if res.namespaced:
            if info.namespace and not self.views.placed(ref, info.cluster, info.namespace):
                raise forbidden(ref, info, f'namespace "{info.namespace}"')
            return
        if info.verb in ("list", "watch"):
            return
        if not info.name:  # create, deletecollection
            raise forbidden(ref, info, f"a new {res.plural}")
        try:
            current = await self.resources.endpoints.registry.get(res, info.cluster, "", info.name)
        except st.APIError as exc:
            if exc.code == 404:
                raise forbidden(ref, info, f'{res.plural} "{info.name}"') from None
            raise
        if not shown(current):
            raise forbidden(ref, info, f'{res.plural} "{info.name}"')
