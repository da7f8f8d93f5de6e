"""Per-request log lines and Prometheus metrics for the API server (logging itself is kcpcommon's)."""

from __future__ import annotations

import time

import structlog
from aiohttp import web
from prometheus_client import CollectorRegistry, Counter, Gauge, Histogram

from kcp_apiserver.endpoints.wire import CONTEXT
from kcp_apiserver.filters import Handler

log = structlog.get_logger("apiserver")


class Metrics:
    """The server's metrics, in a registry of its own (no module globals)."""

    def __init__(self) -> None:
        self.registry = CollectorRegistry()
        self.requests = Counter("apiserver_request_total", "Requests by verb, resource and HTTP code.",
                                ["verb", "resource", "code"], registry=self.registry)
        self.duration = Histogram("apiserver_request_duration_seconds", "Request latency by verb and resource.",
                                  ["verb", "resource"], registry=self.registry,
                                  buckets=(0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10))
        self.watchers = Gauge("apiserver_registered_watchers", "Open watch requests.", registry=self.registry)
        self.inflight = Gauge("apiserver_current_inflight_requests", "Requests being served now by kind "
                              "(readOnly, mutating); long-running ones are not counted.", ["request_kind"],
                              registry=self.registry)


def observe(metrics: Metrics) -> web.middleware:  # type: ignore[valid-type]
    """One log line and the request metrics for every request (watches are counted, not timed)."""

    @web.middleware
    async def observed(request: web.Request, handler: Handler) -> web.StreamResponse:
        started = time.perf_counter()
        code = 500
        try:
            response = await handler(request)
            code = response.status
            return response
        except web.HTTPException as exc:
            code = exc.status
            raise
        finally:
            ctx = request.get(CONTEXT)
            info = ctx.info if ctx is not None else None
            verb = info.verb if info is not None and info.verb else request.method.lower()
            resource = info.resource if info is not None else ""
            elapsed = time.perf_counter() - started
            metrics.requests.labels(verb, resource, str(code)).inc()
            if verb != "watch":
                metrics.duration.labels(verb, resource).observe(elapsed)
            log.info("request", method=request.method, path=request.path,
                     cluster=info.cluster if info is not None else "", verb=verb,
                     user=ctx.user.name if ctx is not None else "", resource=resource, code=code,
                     latency_ms=round(elapsed * 1000, 3))

    return observed
