"""The API server: wiring of storage, caches, registry and the HTTP pipeline.

Pipeline (outermost first): observe (logs, metrics) -> Status errors ->
request info (logical cluster routing) -> authentication -> dispatch.
"""

from __future__ import annotations

import asyncio
import contextlib
import hmac
import time
from collections.abc import Awaitable, Callable
from dataclasses import dataclass, field

import orjson
import structlog
from aiohttp import web
from etcd3aio import Etcd3Client
from prometheus_client import CONTENT_TYPE_LATEST, generate_latest

from kcp_apiserver.apiextensions.crd import CRD
from kcp_apiserver.apiextensions.serving import CRDServing
from kcp_apiserver.apimachinery import status as st
from kcp_apiserver.controllers.garbagecollector import GarbageCollector
from kcp_apiserver.controllers.namespace import NamespaceLifecycle
from kcp_apiserver.endpoints import discovery, openapi
from kcp_apiserver.endpoints.fieldvalidation import FieldValidator
from kcp_apiserver.endpoints.handlers import ResourceHandlers, WatchSettings
from kcp_apiserver.endpoints.wire import json_response, wants_aggregated_discovery
from kcp_apiserver.filters.observability import Metrics
from kcp_apiserver.filters.requestinfo import RequestInfo, parse
from kcp_apiserver.registry.builtin import BUILTINS, NAMESPACE
from kcp_apiserver.registry.catalog import Catalog, WatchCaches
from kcp_apiserver.registry.clusters import DEFAULT_CLUSTER, LogicalClusters
from kcp_apiserver.registry.store import Registry
from kcp_apiserver.storage.etcd import Compacted, Storage, StorageError

log = structlog.get_logger("apiserver")

PUBLIC_PATHS = {"/healthz", "/livez", "/readyz", "/version", "/metrics"}
VERSION = {"major": "1", "minor": "32", "gitVersion": "v1.32.0+kcp", "gitCommit": "", "gitTreeState": "clean",
           "buildDate": "2026-11-22T00:00:00Z", "goVersion": "python3.11", "compiler": "cpython",
           "platform": "linux/amd64"}
PROTOBUF_V2 = "application/com.github.proto-openapi.spec.v2"


@dataclass
class ServerOptions:
    etcd_endpoints: list[str]
    admin_token: str
    watch_cache_size: int = 10_000
    compaction_interval: float = 300.0
    controllers: bool = True  # the namespace finalizer runs in one process of several
    watch: WatchSettings = field(default_factory=WatchSettings)


Handler = Callable[[web.Request], Awaitable[web.StreamResponse]]


class APIServer:
    """Owns the etcd client and everything built on it; `app()` serves it over HTTP."""

    def __init__(self, options: ServerOptions) -> None:
        self.options = options
        self.metrics = Metrics()
        self.client = Etcd3Client(options.etcd_endpoints, rpc_max_attempts=1,
                                  watch_reconnect_backoff_seconds=0.2, watch_max_reconnect_backoff_seconds=2.0)
        self.storage = Storage(self.client)
        self.catalog = Catalog((*BUILTINS, CRD))
        self.caches = WatchCaches(self.client, self.storage, capacity=options.watch_cache_size)
        self.clusters = LogicalClusters(self.storage)
        self.lifecycle: NamespaceLifecycle | None = None
        self.gc: GarbageCollector | None = None
        self.crds: CRDServing | None = None
        self.registry: Registry | None = None
        self.handlers: ResourceHandlers | None = None
        self._openapi_cache: dict[tuple[object, ...], bytes] = {}
        self._tasks: list[asyncio.Task[None]] = []
        self.ready = False

    async def start(self) -> None:
        await self.client.connect()
        namespace_cache = await self.caches.get(NAMESPACE)
        self.lifecycle = NamespaceLifecycle(self.storage, namespace_cache, self.catalog.namespaced)
        self.registry = Registry(self.storage, admit=self.lifecycle.admit, ensure_cluster=self.clusters.ensure)
        self.lifecycle.registry = self.registry
        self.crds = CRDServing(self.storage, await self.caches.get(CRD), self.catalog, self.registry)
        self.handlers = ResourceHandlers(self.catalog, self.registry, self.caches, watch=self.options.watch,
                                         fields=FieldValidator())
        for res in self.catalog.builtins:
            await self.caches.get(res)
        await self.lifecycle.start(finalize=self.options.controllers)
        await self.crds.start(controllers=self.options.controllers)
        if self.options.controllers:
            self.gc = GarbageCollector(self.storage, self.caches, self.catalog, self.registry,
                                       metrics=self.metrics.registry)
            await self.gc.start()
        while True:
            try:
                await self.clusters.ensure(DEFAULT_CLUSTER)
                break
            except st.APIError:
                log.warning("etcd unavailable at startup, retrying")
                await asyncio.sleep(1.0)
        if self.options.compaction_interval > 0:
            self._tasks.append(asyncio.create_task(self._compact_periodically(), name="compactor"))
        self.ready = True

    async def stop(self) -> None:
        self.ready = False
        for task in self._tasks:
            task.cancel()
            with contextlib.suppress(asyncio.CancelledError):
                await task
        if self.lifecycle is not None:
            await self.lifecycle.stop()
        if self.crds is not None:
            await self.crds.stop()
        if self.gc is not None:
            await self.gc.stop()
        await self.caches.stop()
        await self.client.close()

    async def _compact_periodically(self) -> None:
        """As kube-apiserver: each interval, compact to the revision seen one interval earlier."""
        previous = 0
        while True:
            await asyncio.sleep(self.options.compaction_interval)
            try:
                current = await self.storage.current_revision()
                if previous:
                    await self.storage.compact(previous)
                    log.info("compacted etcd", revision=previous)
                previous = current
            except Compacted:
                previous = 0
            except StorageError as exc:
                log.warning("compaction failed", error=str(exc))

    # -- HTTP -------------------------------------------------------------------------------

    def app(self) -> web.Application:
        app = web.Application(middlewares=[self._observe, self._errors, self._request_info, self._authenticate],
                              client_max_size=4 * 1024 * 1024)
        app.router.add_route("*", "/{tail:.*}", self._dispatch)
        return app

    @web.middleware
    async def _observe(self, request: web.Request, handler: Handler) -> web.StreamResponse:
        started = time.perf_counter()
        code = 500
        is_watch = False
        try:
            response = await handler(request)
            code = response.status
            return response
        except web.HTTPException as exc:
            code = exc.status
            raise
        finally:
            info = request.get("kcp_info")
            verb = info.verb if isinstance(info, RequestInfo) and info.verb else request.method.lower()
            resource = info.resource if isinstance(info, RequestInfo) else ""
            is_watch = verb == "watch"
            elapsed = time.perf_counter() - started
            self.metrics.requests.labels(verb, resource, str(code)).inc()
            if not is_watch:
                self.metrics.duration.labels(verb, resource).observe(elapsed)
            log.info("request", method=request.method, path=request.path,
                     cluster=info.cluster if isinstance(info, RequestInfo) else "", verb=verb,
                     resource=resource, code=code, latency_ms=round(elapsed * 1000, 3))

    @web.middleware
    async def _errors(self, request: web.Request, handler: Handler) -> web.StreamResponse:
        try:
            return await handler(request)
        except st.APIError as exc:
            return json_response(exc.to_status(), exc.code, exc.headers or None)
        except web.HTTPException:
            raise
        except (asyncio.CancelledError, ConnectionResetError):
            raise
        except Exception as exc:  # noqa: BLE001 - every failure leaves as a Status
            log.exception("unhandled error", path=request.path)
            error = st.internal(type(exc).__name__)
            return json_response(error.to_status(), 500)

    @web.middleware
    async def _request_info(self, request: web.Request, handler: Handler) -> web.StreamResponse:
        watch = request.query.get("watch", "") in ("1", "true", "True")
        request["kcp_info"] = parse(request.method, request.path, watch)
        return await handler(request)

    @web.middleware
    async def _authenticate(self, request: web.Request, handler: Handler) -> web.StreamResponse:
        if request.path not in PUBLIC_PATHS:
            header = request.headers.get("Authorization", "")
            token = header[7:].strip() if header[:7].lower() == "bearer " else ""
            if not token or not hmac.compare_digest(token.encode(), self.options.admin_token.encode()):
                raise st.unauthorized()
        return await handler(request)

    async def _dispatch(self, request: web.Request) -> web.StreamResponse:
        info: RequestInfo = request["kcp_info"]
        path = request.path
        if path in ("/healthz", "/livez", "/readyz"):
            return await self._health(path)
        if path == "/version":
            return json_response(VERSION)
        if path == "/metrics":
            return web.Response(body=generate_latest(self.metrics.registry),
                                headers={"Content-Type": CONTENT_TYPE_LATEST})
        assert self.handlers is not None
        if info.is_resource:
            if info.verb == "watch":
                self.metrics.watchers.inc()
                try:
                    return await self.handlers.handle(request, info)
                finally:
                    self.metrics.watchers.dec()
            return await self.handlers.handle(request, info)
        if request.method not in ("GET", "HEAD"):
            raise st.method_not_allowed()
        return self._non_resource(request, info)

    async def _health(self, path: str) -> web.Response:
        if path == "/livez":
            return web.Response(text="ok")
        if not self.ready:
            return web.Response(status=503, text="[-]startup not finished\nreadyz check failed")
        try:
            await asyncio.wait_for(self.storage.current_revision(), 2.0)
        except (StorageError, asyncio.TimeoutError):
            return web.Response(status=503, text="[-]etcd failed: etcd is unreachable\nhealthz check failed")
        return web.Response(text="ok")

    def _non_resource(self, request: web.Request, info: RequestInfo) -> web.Response:
        resources = self.catalog.for_cluster(info.cluster)
        parts = [p for p in info.path.strip("/").split("/") if p]
        aggregated = wants_aggregated_discovery(request)
        if parts == ["api"]:
            if aggregated:
                return self._aggregated(discovery.aggregated(resources, core=True))
            return json_response(discovery.api_versions())
        if parts == ["apis"]:
            if aggregated:
                return self._aggregated(discovery.aggregated(resources, core=False))
            return json_response(discovery.api_group_list(resources))
        groups = discovery.group_versions(resources)
        if len(parts) == 2 and parts[0] == "api" and parts[1] in groups.get("", {}):
            return json_response(discovery.resource_list("", parts[1], groups[""][parts[1]]))
        if len(parts) == 2 and parts[0] == "apis" and parts[1] in groups:
            return json_response(discovery.api_group(parts[1], list(groups[parts[1]])))
        if len(parts) == 3 and parts[0] == "apis" and parts[2] in groups.get(parts[1], {}):
            return json_response(discovery.resource_list(parts[1], parts[2], groups[parts[1]][parts[2]]))
        if parts == ["openapi", "v2"]:
            return self._openapi_v2(request, resources)
        if parts == ["openapi", "v3"]:
            prefix = "" if request.path == info.path else request.path[: -len(info.path)]
            return json_response(openapi.v3_index(resources, prefix))
        if len(parts) > 2 and parts[:2] == ["openapi", "v3"]:
            doc = self._cached(("v3", "/".join(parts[2:]), *resources),
                               lambda: openapi.v3_document(resources, "/".join(parts[2:])))
            if doc is not None:
                return web.Response(body=doc, content_type="application/json",
                                    headers={"Cache-Control": "public, immutable"})
        raise st.APIError(404, "NotFound", "the server could not find the requested resource")

    def _openapi_v2(self, request: web.Request, resources: list) -> web.Response:  # type: ignore[type-arg]
        accept = request.headers.get("Accept", "")
        if PROTOBUF_V2 in accept:
            from kcp_apiserver.endpoints.openapi_proto import encode_swagger

            body = self._cached(("v2pb", *resources), lambda: None, raw=lambda: encode_swagger(
                openapi.swagger(resources)))
            return web.Response(body=body, content_type="application/com.github.proto-openapi.spec.v2.v1.0+protobuf")
        body = self._cached(("v2", *resources), lambda: openapi.swagger(resources))
        assert body is not None
        return web.Response(body=body, content_type="application/json")

    def _cached(self, key: tuple[object, ...], build: Callable[[], object],
                raw: Callable[[], bytes] | None = None) -> bytes | None:
        """OpenAPI documents are built once per distinct set of resources, not per cluster."""
        if key not in self._openapi_cache:
            if raw is not None:
                self._openapi_cache[key] = raw()
            else:
                doc = build()
                if doc is None:
                    return None
                self._openapi_cache[key] = orjson.dumps(doc)
        return self._openapi_cache[key]

    @staticmethod
    def _aggregated(doc: dict) -> web.Response:  # type: ignore[type-arg]
        return web.Response(body=orjson.dumps(doc), headers={"Content-Type": discovery.AGGREGATED_CONTENT_TYPE})
