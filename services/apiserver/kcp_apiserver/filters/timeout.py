"""kube's --request-timeout: a request that is not long-running gets this long, then a 504 Timeout.

Besides slow handlers, this bounds a client that sends its headers and then never its whole body: aiohttp
has no body read timeout of its own.
"""

from __future__ import annotations

import asyncio

from aiohttp import web

from kcp_apiserver.apimachinery import status as st
from kcp_apiserver.endpoints.wire import json_response, request_context
from kcp_apiserver.filters import Handler
from kcp_apiserver.filters.longrunning import is_long_running


def timed_out() -> web.Response:
    status = st.APIError(504, "Timeout", "Timeout: request did not complete within the allotted timeout").to_status()
    status["details"] = {}  # kube sends details with retryAfterSeconds 0, which is omitted
    return json_response(status, 504)


def request_timeout(seconds: float) -> web.middleware:  # type: ignore[valid-type]
    @web.middleware
    async def limit(request: web.Request, handler: Handler) -> web.StreamResponse:
        ctx = request_context(request)
        if is_long_running(ctx.info):
            return await handler(request)
        deadline = asyncio.timeout(seconds)
        ctx.deadline = asyncio.get_running_loop().time() + seconds  # how long a write may retry its conflicts
        try:
            async with deadline:
                return await handler(request)
        except TimeoutError:
            if not deadline.expired():
                raise
            return timed_out()

    return limit
