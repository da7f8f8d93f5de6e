"""Declared subresources (a pod's binding, eviction, log, exec): the body decoded, the handler called,
its answer written as JSON or plain text, or by the handler itself when it streams or upgrades the
connection. Which subresources exist is the descriptor's business."""

from __future__ import annotations

from aiohttp import web

from kcp_apiserver.apimachinery import status as st
from kcp_apiserver.apimachinery.request import RequestContext
from kcp_apiserver.endpoints.base import Endpoints
from kcp_apiserver.endpoints.wire import BUILTIN_BODY_TYPES, body_media_type, decode_object, json_response, read_body
from kcp_apiserver.registry.actions import Action, ActionCall
from kcp_apiserver.registry.resource import Resource


async def call(ep: Endpoints, request: web.Request, res: Resource, action: Action, ctx: RequestContext,
               namespace: str) -> web.StreamResponse:
    info = ctx.info
    if info.verb not in action.verbs:
        raise st.method_not_allowed()
    body = None
    if info.verb == "create" and not action.connect:
        kind = action.kind[2] if action.kind else res.kind
        decoded = decode_object(await read_body(request), body_media_type(request), kind, accept=BUILTIN_BODY_TYPES)
        if not isinstance(decoded, dict):
            raise st.bad_request("the body of the request must be an object")
        body = decoded
    result = await action.handle(ActionCall(ep.registry, res, info.cluster, namespace, info.name, body,
                                            request.query, ctx, ctx.dry_run))
    if result.respond is not None:
        response: web.StreamResponse = await result.respond(request)
        return response
    if result.text is not None:
        return web.Response(text=result.text, status=result.code, content_type="text/plain")
    return json_response(result.obj, result.code)
