"""The API server assembled from a `ServerConfig`: storage, watch caches, admission,
the generic registry, the HTTP filters and endpoints, and the in-process controllers."""

from __future__ import annotations

import asyncio
from dataclasses import dataclass

import structlog
from aiohttp import web

from kcp_apiserver.apimachinery import status as st
from kcp_apiserver.apimachinery.request import RequestContext
from kcp_apiserver.endpoints.apiexports import ExportViewHandlers
from kcp_apiserver.endpoints.fieldvalidation import FieldValidator
from kcp_apiserver.endpoints.handlers import ResourceHandlers
from kcp_apiserver.endpoints.initializing import InitializingViewHandlers
from kcp_apiserver.endpoints.nonresource import NonResourceHandlers
from kcp_apiserver.endpoints.syncerview import SyncerViewHandlers
from kcp_apiserver.endpoints.wire import request_context
from kcp_apiserver.filters.audit import AuditLog, add_audit_id_header, audit
from kcp_apiserver.filters.authentication import authentication
from kcp_apiserver.filters.authorization import authorization
from kcp_apiserver.filters.errors import errors_to_status
from kcp_apiserver.filters.impersonation import impersonation
from kcp_apiserver.filters.inflight import max_inflight
from kcp_apiserver.filters.observability import Metrics, observe
from kcp_apiserver.filters.pretty import pretty
from kcp_apiserver.filters.requestinfo import request_info
from kcp_apiserver.filters.timeout import request_timeout
from kcp_apiserver.filters.tokenreview import TokenReviewer
from kcp_apiserver.registry.admission import AdmissionChain
from kcp_apiserver.registry.builtin.reviews import AUTHENTICATION
from kcp_apiserver.registry.catalog import Catalog, WatchCaches
from kcp_apiserver.registry.clusters import DEFAULT_CLUSTER, LogicalClusters
from kcp_apiserver.registry.informers import Informers
from kcp_apiserver.registry.store import Registry
from kcp_apiserver.server.config import Runnable, ServerConfig, ServerParts
from kcp_apiserver.storage.election import LeaderElection
from kcp_apiserver.storage.etcd import Storage
from kcp_apiserver.storage.etcd_client import etcd_client
from kcpcommon.backoff import Backoff
from kcpcommon.tasks import cancel_and_wait, spawn

log = structlog.get_logger("apiserver")

MAX_REQUEST_BYTES = 4 * 1024 * 1024
CONTROLLERS_ELECTION = "kcp-apiserver-controllers"
STARTUP_RETRY_MIN, STARTUP_RETRY_MAX = 0.2, 5.0  # seconds between tries to reach etcd at startup
RESOURCE_METHODS = frozenset({"GET", "HEAD", "POST", "PUT", "PATCH", "DELETE"})


@dataclass(frozen=True)
class RequestLimits:
    """kube-apiserver's defaults: --max-requests-inflight, --max-mutating-requests-inflight (0: no limit)
    and --request-timeout (seconds) for requests that are not long-running."""

    max_requests_inflight: int = 400
    max_mutating_requests_inflight: int = 200
    request_timeout: float = 60.0


class APIServer:
    """Owns the etcd client and everything built on it; `app()` serves it over HTTP."""

    def __init__(self, config: ServerConfig) -> None:
        self.config = config
        self.metrics = Metrics()
        self.client = etcd_client(config.etcd_endpoints, config.etcd_tls)
        self.storage = Storage(self.client)
        self.catalog = Catalog(config.resources, config.custom_actions)
        self.caches = WatchCaches(self.client, self.storage, capacity=config.watch_cache_size)
        self.informers = Informers(self.caches)
        self.clusters = LogicalClusters(self.storage, stamp_cluster=config.cluster_annotation)
        self.registry: Registry | None = None
        self.handlers: ResourceHandlers | None = None
        self.export_views: ExportViewHandlers | None = None
        self.initializing_views: InitializingViewHandlers | None = None
        self.syncer_views: SyncerViewHandlers | None = None
        self.non_resource = NonResourceHandlers(self.catalog, metrics=self.metrics.registry,
                                                ping_storage=self.storage.current_revision,
                                                is_ready=lambda: self.ready, live_checks=config.live_checks,
                                                service_accounts=config.service_accounts, jwks_uri=config.jwks_uri,
                                                version=config.version)
        self.audit = AuditLog(config.audit_log_path) if config.audit_log_path else None
        self._plugins: list[object] = []
        self._running: list[Runnable] = []
        self.election: LeaderElection | None = None
        self._leading: asyncio.Task[None] | None = None
        self.ready = False

    def _token_reviews(self) -> dict[tuple[str, str], TokenReviewer]:
        """TokenReviews are answered by the server's own token authenticators (the list as it stands then)."""
        tokens = self.config.service_accounts
        return {(AUTHENTICATION, "tokenreviews"): TokenReviewer(self.config.authenticators,
                                                                tokens.api_audiences if tokens is not None else ())}

    async def start(self) -> None:
        config = self.config
        if self.audit is not None:
            await self.audit.start()
        await self.client.connect()
        for res in self.catalog.builtins:
            await self.caches.get(res)
        parts = ServerParts(self.storage, self.caches, self.catalog, run_controllers=config.run_controllers,
                            informers=self.informers,
                            metrics=self.metrics.registry)
        self._plugins = [await build(parts) for build in config.admission]
        self.registry = parts.registry = Registry(self.storage, admit=AdmissionChain(self._plugins),
                                                  ensure_cluster=self.clusters.ensure,
                                                  track_managed_fields=config.track_managed_fields,
                                                  caches=self.caches, stamp_cluster=config.cluster_annotation)
        self.handlers = ResourceHandlers(self.catalog, self.registry, self.caches, watch=config.watch,
                                         fields=FieldValidator(), tokens=config.service_accounts,
                                         answers={**self._token_reviews(), **config.answers},
                                         visibility=config.visibility)
        if config.export_views is not None:
            self.export_views = ExportViewHandlers(self.handlers, self.non_resource, config.export_views(parts))
        if config.initializing_views is not None:
            self.initializing_views = InitializingViewHandlers(self.handlers, self.non_resource,
                                                               config.initializing_views(parts))
        if config.syncer_views is not None:
            self.syncer_views = SyncerViewHandlers(self.handlers, self.non_resource, await config.syncer_views(parts))
        for build_extension in config.extensions:
            await self._run(build_extension(parts))
        backoff = Backoff(initial=STARTUP_RETRY_MIN, cap=STARTUP_RETRY_MAX)
        while True:
            try:
                await self.clusters.ensure(DEFAULT_CLUSTER)
                break
            except st.APIError as exc:
                delay = backoff.next()
                log.warning("etcd unavailable at startup, retrying", error=exc.message, retry_in=round(delay, 2))
                await asyncio.sleep(delay)
        if config.run_controllers and config.controllers:
            self.election = LeaderElection(self.client, CONTROLLERS_ELECTION, config.identity)
            self._leading = spawn(self.election.run(lambda: self._lead(parts)), name="controllers")
        self.ready = True

    async def _lead(self, parts: ServerParts) -> None:
        """The controllers run while this replica leads, and stop when it no longer does."""
        started: list[Runnable] = []
        try:
            for build_controller in self.config.controllers:
                controller = build_controller(parts)
                await controller.start()
                started.append(controller)
            await asyncio.Event().wait()
        finally:
            for controller in reversed(started):
                await controller.stop()

    async def _run(self, runnable: Runnable) -> None:
        await runnable.start()
        self._running.append(runnable)

    async def stop(self) -> None:
        self.ready = False
        if self._leading is not None:
            await cancel_and_wait(self._leading)
        for runnable in reversed(self._running):
            await runnable.stop()
        for plugin in reversed(self._plugins):
            stop = getattr(plugin, "stop", None)
            if stop is not None:
                await stop()
        await self.informers.stop()
        await self.caches.stop()
        await self.client.close()
        if self.audit is not None:
            await self.audit.stop()

    # -- HTTP -------------------------------------------------------------------------------

    def app(self, limits: RequestLimits | None = None) -> web.Application:
        """Filters outermost first, in kube's order: observe, pretty JSON, errors as Status, request info, audit, the
        request timeout, authentication, impersonation, the in-flight limits, authorization."""
        limits = limits or RequestLimits()
        audited = [audit(self.audit)] if self.audit is not None else []
        app = web.Application(middlewares=[observe(self.metrics), pretty, errors_to_status, request_info, *audited,
                                           request_timeout(limits.request_timeout),
                                           authentication(self.config.authenticators),
                                           impersonation(self.config.authorizer),
                                           max_inflight(limits.max_requests_inflight,
                                                        limits.max_mutating_requests_inflight,
                                                        gauge=self.metrics.inflight),
                                           authorization(self.config.authorizer)],
                              client_max_size=MAX_REQUEST_BYTES)
        if self.audit is not None:
            app.on_response_prepare.append(add_audit_id_header)
        app.router.add_route("*", "/{tail:.*}", self._dispatch)
        return app

    async def _dispatch(self, request: web.Request) -> web.StreamResponse:
        ctx = request_context(request)
        info = ctx.info
        if ctx.export is not None and self.export_views is None:
            raise st.APIError(404, "NotFound", "the server could not find the requested resource")
        if ctx.syncer is not None and self.syncer_views is None:
            raise st.APIError(404, "NotFound", "the server could not find the requested resource")
        if ctx.initializer:
            if self.initializing_views is None:
                raise st.APIError(404, "NotFound", "the server could not find the requested resource")
            if not info.wildcard:  # one logical cluster: the ordinary handlers, as its owner
                await self.initializing_views.enter(ctx)
        if not info.is_resource:
            if self.syncer_views is not None and ctx.syncer is not None:
                return await self.syncer_views.handle(request, ctx)
            if self.export_views is not None and ctx.export is not None:
                return await self.export_views.handle(request, ctx)
            if self.initializing_views is not None and ctx.initializer and info.wildcard:
                return await self.initializing_views.handle_wildcard(request, ctx)
            return await self.non_resource.handle(request, info)
        if request.method not in RESOURCE_METHODS:  # TRACE, OPTIONS, ...: kube's router has no route for them
            raise st.method_not_allowed()
        if info.verb != "watch":
            return await self._resource(request, ctx)
        self.metrics.watchers.inc()
        try:
            return await self._resource(request, ctx)
        finally:
            self.metrics.watchers.dec()

    async def _resource(self, request: web.Request, ctx: RequestContext) -> web.StreamResponse:
        """A resource request: the catalog's, or through an APIExport's virtual workspace."""
        if ctx.export is not None and self.export_views is not None:
            return await self.export_views.handle(request, ctx)
        if ctx.syncer is not None and self.syncer_views is not None:
            return await self.syncer_views.handle(request, ctx)
        if ctx.initializer and ctx.info.wildcard and self.initializing_views is not None:
            return await self.initializing_views.handle_wildcard(request, ctx)
        assert self.handlers is not None
        return await self.handlers.handle(request, ctx.info)
