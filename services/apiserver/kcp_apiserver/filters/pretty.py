"""Indented JSON for `?pretty=true` and for people (curl, Wget, a browser), as kube answers them.

The encoders stay compact (every other client pays nothing); a response to a pretty request is indented
once here, on its way out, errors included. A streamed list indents itself (endpoints/liststream.py).
"""

from __future__ import annotations

from aiohttp import web

from kcp_apiserver.endpoints.wire import indented, wants_pretty
from kcp_apiserver.filters import Handler


@web.middleware
async def pretty(request: web.Request, handler: Handler) -> web.StreamResponse:
    response = await handler(request)
    if (isinstance(response, web.Response) and response.content_type == "application/json"
            and isinstance(response.body, bytes) and response.body and wants_pretty(request)):
        response.body = indented(response.body)
    return response
