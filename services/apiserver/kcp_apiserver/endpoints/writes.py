"""CREATE, UPDATE (with /status and namespaces' /finalize) and PATCH."""

from __future__ import annotations

from aiohttp import web

from kcp_apiserver.apimachinery.request import RequestContext
from kcp_apiserver.endpoints.apply import apply as apply_config
from kcp_apiserver.endpoints.apply import check_options, is_apply
from kcp_apiserver.endpoints.base import Endpoints, decode_body, respond_object
from kcp_apiserver.endpoints.wire import json_response, read_body
from kcp_apiserver.registry.patch import patcher
from kcp_apiserver.registry.resource import Obj, Resource


async def create(ep: Endpoints, request: web.Request, res: Resource, ctx: RequestContext,
                 namespace: str) -> web.Response:
    check_options(request, ctx, "CreateOptions")
    obj, warnings = await decode_body(ep, request, res)
    created = await ep.registry.create(res, ctx.cluster, namespace, obj, dry_run=ctx.dry_run, ctx=ctx)
    return respond_object(request, res, created, 201, warnings)


async def update(ep: Endpoints, request: web.Request, res: Resource, ctx: RequestContext,
                 namespace: str) -> web.Response:
    info = ctx.info
    check_options(request, ctx, "UpdateOptions")
    obj, warnings = await decode_body(ep, request, res, check_fields=info.subresource != "status" or res.is_custom)
    if info.subresource == "finalize":
        return await _finalize(ep, res, ctx, obj)
    updated = await ep.registry.update(res, info.cluster, namespace, info.name, obj, subresource=info.subresource,
                                       dry_run=ctx.dry_run, ctx=ctx)
    return respond_object(request, res, updated, 200, warnings)


async def patch(ep: Endpoints, request: web.Request, res: Resource, ctx: RequestContext,
                namespace: str) -> web.Response:
    info = ctx.info
    body = await read_body(request)
    if is_apply(request.content_type):
        return await apply_config(ep, request, res, ctx, namespace, body)
    check_options(request, ctx, "PatchOptions")
    apply = patcher(request.content_type, body, ep.fields.patch_meta(res))
    warnings: list[str] = []
    mode = request.query.get("fieldValidation", "")

    def apply_checked(doc: Obj) -> Obj:
        patched = apply(doc)
        if (info.subresource != "status" or res.is_custom) and isinstance(patched, dict):
            warnings.extend(ep.fields.check(res, patched, None, mode))
        return patched

    obj = await ep.registry.patch(res, info.cluster, namespace, info.name, apply_checked,
                                  subresource=info.subresource, dry_run=ctx.dry_run, ctx=ctx)
    return respond_object(request, res, obj, 200, warnings)


async def _finalize(ep: Endpoints, res: Resource, ctx: RequestContext, obj: Obj) -> web.Response:
    """PUT .../namespaces/NAME/finalize: only spec.finalizers changes."""
    finalizers = (obj.get("spec") or {}).get("finalizers") or []

    def apply(doc: Obj) -> Obj:
        doc.setdefault("spec", {})["finalizers"] = finalizers
        return doc

    updated = await ep.registry.patch(res, ctx.cluster, "", ctx.info.name, apply, dry_run=ctx.dry_run, ctx=ctx,
                                      manager_subresource="finalize")
    return json_response(updated)
