"""CREATE of a resource answered by a function instead of storage (kube's review APIs)."""

from __future__ import annotations

import inspect
from collections.abc import Awaitable, Callable

from aiohttp import web

from kcp_apiserver.apimachinery.request import RequestContext
from kcp_apiserver.endpoints.base import Endpoints, decode_body, respond_object
from kcp_apiserver.registry.resource import Obj, Resource

Answer = Callable[[RequestContext, Obj], Obj | Awaitable[Obj]]


async def create(ep: Endpoints, request: web.Request, res: Resource, ctx: RequestContext,
                 answer: Answer) -> web.Response:
    obj, warnings = await decode_body(ep, request, res)
    obj.setdefault("apiVersion", res.api_version)
    obj.setdefault("kind", res.kind)
    answered = answer(ctx, obj)
    if inspect.isawaitable(answered):
        answered = await answered
    return respond_object(request, res, answered, 201, warnings)
