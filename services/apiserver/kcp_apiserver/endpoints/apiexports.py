"""An APIExport's virtual workspace over HTTP: the provider's one URL to its export's objects in every consumer.

The request was parsed as if it named the consumer's logical cluster (`clusters/<consumer or *>/...`) and
authorized against the export's content (filters); here the resource is the export's own type (so its identity's
storage), never the catalog's pick, and lists and watches across consumers show only the export's current
consumers' objects (of a claimed resource, only those of the consumers that accepted the claim). Everything else is the ordinary handlers': no second list or watch."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import replace
from typing import Protocol

from aiohttp import web

from kcp_apiserver.apimachinery import status as st
from kcp_apiserver.apimachinery.request import ExportRef, RequestContext, RequestInfo
from kcp_apiserver.endpoints.base import Endpoints
from kcp_apiserver.endpoints.handlers import ResourceHandlers
from kcp_apiserver.endpoints.nonresource import NonResourceHandlers
from kcp_apiserver.registry.resource import Obj, Resource

DISCOVERY_ROOTS = frozenset({"api", "apis", "openapi"})


class ExportContent(Protocol):
    """What the view needs to know of exports (apis.exportview.ExportViews)."""

    def resources(self, provider: str, export: str) -> list[Resource]: ...

    def resource(self, provider: str, export: str, cluster: str, group: str, version: str,
                 plural: str) -> Resource | None: ...

    def shows(self, provider: str, export: str, res: Resource) -> Callable[[Obj], bool]: ...


def not_found() -> st.APIError:
    return st.APIError(404, "NotFound", "the server could not find the requested resource")


def view_discovery(non_resource: NonResourceHandlers, request: web.Request, info: RequestInfo,
                   resources: list[Resource]) -> web.StreamResponse:
    """A virtual workspace's discovery (`/api`, `/apis...`, `/openapi...`) of only `resources`; 404 elsewhere."""
    parts = [p for p in info.path.strip("/").split("/") if p]
    if not parts or parts[0] not in DISCOVERY_ROOTS:
        raise not_found()
    return non_resource.discovery(request, info, resources)


class ExportViewHandlers:
    def __init__(self, resources: ResourceHandlers, non_resource: NonResourceHandlers, views: ExportContent) -> None:
        self.resources = resources
        self.non_resource = non_resource
        self.views = views

    async def handle(self, request: web.Request, ctx: RequestContext) -> web.StreamResponse:
        export, info = ctx.export, ctx.info
        assert export is not None
        if not info.is_resource:
            return view_discovery(self.non_resource, request, info, self.views.resources(export.cluster, export.name))
        res = self.views.resource(export.cluster, export.name, info.cluster, info.group, info.version, info.resource)
        if res is None:  # not the export's type, or a logical cluster that has not bound the export
            raise not_found()
        return await self.resources.serve(request, info, res, self._endpoints(export))

    def _endpoints(self, export: ExportRef) -> Endpoints:
        return replace(self.resources.endpoints,
                       visibility=lambda res, _ctx: self.views.shows(export.cluster, export.name, res))
