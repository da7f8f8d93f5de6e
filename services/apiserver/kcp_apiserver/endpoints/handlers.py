"""HTTP verbs on resources: the resource and verb a request names, dispatched to its verb family.

reads (get, list) · watch · writes (create, update, patch) · deletes · scale · declared subresources. Every family works
through the one generic registry; nothing here is specific to a type.
"""

from __future__ import annotations

from collections.abc import Mapping

from aiohttp import web

from kcp_apiserver.apimachinery import status as st
from kcp_apiserver.apimachinery.request import RequestInfo
from kcp_apiserver.endpoints import actions, deletes, reads, reviews, scale, tokenrequest, watch, writes
from kcp_apiserver.endpoints.base import Endpoints, Visibility, WatchSettings, dry_run
from kcp_apiserver.endpoints.fieldvalidation import FieldValidator
from kcp_apiserver.endpoints.wire import request_context
from kcp_apiserver.registry.builtin.core import TOKEN_REQUEST
from kcp_apiserver.registry.catalog import Catalog, WatchCaches
from kcp_apiserver.registry.resource import Resource
from kcp_apiserver.registry.serviceaccounts import ServiceAccountTokens
from kcp_apiserver.registry.store import Registry

__all__ = ["ResourceHandlers"]

NON_NAMESPACED_SUBRESOURCES = {"namespaces": {"status", "finalize"}}
WRITES = {"create": writes.create, "update": writes.update, "patch": writes.patch,
          "delete": deletes.delete, "deletecollection": deletes.delete}


class ResourceHandlers:
    """Serves every verb of every resource through the one generic registry."""

    def __init__(self, catalog: Catalog, registry: Registry, caches: WatchCaches, *,
                 watch: WatchSettings, fields: FieldValidator, tokens: ServiceAccountTokens | None = None,
                 answers: Mapping[tuple[str, str], reviews.Answer] | None = None,
                 visibility: Visibility | None = None) -> None:
        self.endpoints = Endpoints(catalog, registry, caches, fields, watch, tokens, visibility)
        self.answers = answers or {}  # (group, plural): create-only resources that are answered, not stored

    async def handle(self, request: web.Request, info: RequestInfo) -> web.StreamResponse:
        res = self.endpoints.catalog.lookup(info.cluster, info.group, info.version, info.resource, info.identity)
        if res is None:
            raise st.APIError(404, "NotFound", "the server could not find the requested resource")
        return await self.serve(request, info, res, self.endpoints)

    async def serve(self, request: web.Request, info: RequestInfo, res: Resource,
                    ep: Endpoints) -> web.StreamResponse:
        """The request's verb on `res` (found by the caller: the catalog, or a virtual workspace)."""
        if info.verb not in res.verbs:
            raise st.APIError(404, "NotFound", "the server could not find the requested resource")
        if info.subresource and not _subresource_ok(res, info.subresource):
            raise st.APIError(404, "NotFound", "the server could not find the requested resource")
        if info.wildcard and info.verb not in ("list", "watch"):
            raise st.method_not_allowed(f"{info.verb} is not allowed across logical clusters; only list and watch")
        namespace = info.namespace if res.namespaced else ""
        if res.namespaced and not namespace and info.verb not in ("list", "watch"):
            raise st.method_not_allowed()
        ctx = request_context(request)
        ctx.field_manager = request.query.get("fieldManager", "")
        action = res.action(info.subresource) if info.subresource else None
        if action is not None:
            ctx.dry_run = dry_run(request.query)
            return await actions.call(ep, request, res, action, ctx, namespace)
        if info.subresource == "scale":
            ctx.dry_run = dry_run(request.query)
            return await scale.scale(ep, request, res, ctx, namespace)
        if info.subresource == TOKEN_REQUEST.name:
            return await tokenrequest.create_token(ep, request, res, ctx, namespace)
        if info.verb == "get":
            return await reads.get(ep, request, res, info, namespace)
        if info.verb == "list":
            return await reads.list_(ep, request, res, info, namespace)
        if info.verb == "watch":
            return await watch.watch(ep, request, res, info, namespace)
        answer = self.answers.get((res.group, res.plural))
        if answer is not None and info.verb == "create":
            return await reviews.create(ep, request, res, ctx, answer)
        write = WRITES.get(info.verb)
        if write is None:
            raise st.method_not_allowed()
        ctx.dry_run = dry_run(request.query)
        return await write(ep, request, res, ctx, namespace)


def _subresource_ok(res: Resource, sub: str) -> bool:
    if res.action(sub) is not None:
        return True
    if sub == "status":
        return res.has_status
    if sub == "scale":
        return res.scale is not None
    if any(sub == extra.name for extra in res.subresources):
        return True
    return sub in NON_NAMESPACED_SUBRESOURCES.get(res.plural, set()) and not res.group
