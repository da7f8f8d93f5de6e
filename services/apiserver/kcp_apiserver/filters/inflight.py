"""kube's --max-requests-inflight and --max-mutating-requests-inflight: past either limit a request is 429.

Reads (get, list) and writes (every other verb) are counted apart, long-running requests not at all. A
`system:masters` user is still served when the limit is reached, uncounted, as kube does: the admin (and
the server's loopback client) always gets an answer.
"""

from __future__ import annotations

from aiohttp import web
from prometheus_client import Gauge

from kcp_apiserver.apimachinery import status as st
from kcp_apiserver.apimachinery.request import SYSTEM_MASTERS
from kcp_apiserver.endpoints.wire import request_context
from kcp_apiserver.filters import Handler
from kcp_apiserver.filters.longrunning import is_long_running

READ_ONLY_VERBS = frozenset({"get", "list", "watch"})
READ_ONLY, MUTATING = "readOnly", "mutating"
RETRY_AFTER_SECONDS = 1


def too_many_requests() -> st.APIError:
    return st.APIError(429, "TooManyRequests", "Too many requests, please try again later.",
                       {"retryAfterSeconds": RETRY_AFTER_SECONDS}, {"Retry-After": str(RETRY_AFTER_SECONDS)})


def max_inflight(read_only: int, mutating: int, *, gauge: Gauge) -> web.middleware:  # type: ignore[valid-type]
    """The middleware; a limit of 0 is no limit. `gauge` (labelled by request kind) shows the slots in use."""
    limits = {READ_ONLY: read_only, MUTATING: mutating}
    serving = dict.fromkeys(limits, 0)
    for kind in limits:
        gauge.labels(kind).set(0)

    @web.middleware
    async def limit(request: web.Request, handler: Handler) -> web.StreamResponse:
        ctx = request_context(request)
        if is_long_running(ctx.info):
            return await handler(request)
        verb = ctx.info.verb or request.method.lower()  # a non-resource request's verb is its method, as kube's
        kind = READ_ONLY if verb in READ_ONLY_VERBS else MUTATING
        if not limits[kind]:
            return await handler(request)
        if serving[kind] >= limits[kind]:
            if SYSTEM_MASTERS in ctx.user.groups:
                return await handler(request)
            raise too_many_requests()
        serving[kind] += 1
        gauge.labels(kind).set(serving[kind])
        try:
            return await handler(request)
        finally:
            serving[kind] -= 1
            gauge.labels(kind).set(serving[kind])

    return limit
