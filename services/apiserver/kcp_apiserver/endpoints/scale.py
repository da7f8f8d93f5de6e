"""GET, PUT, PATCH and server-side apply of the autoscaling/v1 Scale subresource."""

from __future__ import annotations

from collections.abc import Callable

from aiohttp import web

from kcp_apiserver.apimachinery import status as st
from kcp_apiserver.apimachinery.request import RequestContext
from kcp_apiserver.endpoints.apply import check_config, check_options, force_param, is_apply, parse_config
from kcp_apiserver.endpoints.base import Endpoints
from kcp_apiserver.endpoints.wire import BUILTIN_BODY_TYPES, body_media_type, decode_object, json_response, read_body
from kcp_apiserver.registry.ownership import ApplyOwnership
from kcp_apiserver.registry.patch import patcher
from kcp_apiserver.registry.resource import Obj, Resource
from kcp_apiserver.registry.scale import set_replicas, to_scale


async def scale(ep: Endpoints, request: web.Request, res: Resource, ctx: RequestContext,
                namespace: str) -> web.Response:
    info = ctx.info
    if info.verb == "get":
        return json_response(to_scale(res, await ep.registry.get(res, info.cluster, namespace, info.name)))
    body = await read_body(request)
    change: Callable[[Obj], Obj]
    if info.verb == "update":
        wanted = decode_object(body, body_media_type(request), "Scale", accept=BUILTIN_BODY_TYPES)
        if not isinstance(wanted, dict):
            raise st.bad_request("the body of the request must be a Scale object")

        def replace(doc: Obj) -> Obj:
            rv = (wanted.get("metadata") or {}).get("resourceVersion")
            if rv and rv != doc["metadata"].get("resourceVersion"):
                raise st.conflict(res.plural, info.name, res.group)
            return wanted

        change = replace
    elif info.verb == "patch" and is_apply(request.content_type):
        return await _apply(ep, request, res, ctx, namespace, body)
    elif info.verb == "patch":
        patch_scale = patcher(request.content_type, body, ep.fields.scale_patch_meta())

        def patched(doc: Obj) -> Obj:
            return patch_scale(to_scale(res, doc))

        change = patched
    else:
        raise st.method_not_allowed()
    updated = await ep.registry.patch(res, info.cluster, namespace, info.name,
                                      lambda doc: set_replicas(res, doc, change(doc), info.name),
                                      dry_run=ctx.dry_run, ctx=ctx, manager_subresource="scale")
    return json_response(to_scale(res, updated))


async def _apply(ep: Endpoints, request: web.Request, res: Resource, ctx: RequestContext, namespace: str,
                 body: bytes) -> web.Response:
    """Apply of a Scale, as kube's: the manager owns the object's replicas field (entry subresource `scale`)
    and conflicts with whoever else set it to another value, unless forced. The object must exist."""
    info = ctx.info
    check_options(request, ctx, "PatchOptions", apply=True)
    config = parse_config(body)
    check_config(config, info.name, "autoscaling/v1", "Scale")
    # the Scale's fields in the object's shape, so ownership reads the object's schema
    parent: Obj = {"apiVersion": res.api_version, "kind": res.kind, "metadata": {"name": info.name}}
    if (config.get("spec") or {}).get("replicas") is not None:
        set_replicas(res, parent, config, info.name)
    ownership = ApplyOwnership(ctx.field_manager, res.api_version, res.type_schema, parent,
                               force=force_param(request), subresource="scale", has_status=res.has_status)
    updated = await ep.registry.patch(res, info.cluster, namespace, info.name, ownership.merged,
                                      dry_run=ctx.dry_run, ctx=ctx, ownership=ownership)
    return json_response(to_scale(res, updated))
