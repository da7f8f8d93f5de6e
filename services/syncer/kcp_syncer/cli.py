"""`kcp-syncer`: settings, logging, the health server, then the engine until SIGTERM."""

from __future__ import annotations

import asyncio
from collections.abc import Sequence

import structlog
from prometheus_client import CollectorRegistry

from kcpcommon.daemon import HealthServer, configure_logging, parse_settings, run_daemon
from kcpsyncer import SyncerOptions, connect, run_syncer, syncer_view

from .settings import SyncerSettings

log = structlog.get_logger("kcp-syncer")


async def serve(settings: SyncerSettings) -> None:
    """Serve health and metrics, connect to both sides, sync until cancelled."""
    registry = CollectorRegistry()
    ready = asyncio.Event()
    health = HealthServer(registry=registry, host=settings.health_address, port=settings.health_port)
    health.add_readiness_check("informers", ready.is_set)
    upstream, downstream = await connect(settings.from_kubeconfig, settings.to_kubeconfig,
                                         sync_target=settings.sync_target, from_context=settings.from_context,
                                         to_context=settings.to_context, qps=settings.qps, burst=settings.burst)
    placed = syncer_view(upstream, logical_cluster=settings.logical_cluster, sync_target=settings.sync_target) \
        if settings.placed_through_view else None
    try:
        async with health:
            log.info("kcp-syncer starting", sync_target=settings.sync_target,
                     logical_cluster=settings.logical_cluster, upstream=upstream.server,
                     downstream=downstream.server, health_port=health.port,
                     placed_workspaces_through=placed.server if placed is not None else upstream.server)
            await run_syncer(SyncerOptions(upstream=upstream, downstream=downstream,
                                           sync_target=settings.sync_target,
                                           logical_cluster=settings.logical_cluster,
                                           resources=settings.resource_list(),
                                           heartbeat_interval=settings.heartbeat_interval,
                                           workers=settings.workers, placed_upstream=placed),
                             registry=registry, ready=ready)
    finally:
        await downstream.close()
        if placed is not None:
            await placed.close()
        await upstream.close()


def main(argv: Sequence[str] | None = None) -> None:
    settings = parse_settings(SyncerSettings, argv, prog="kcp-syncer")
    configure_logging(settings.log_level)
    raise SystemExit(run_daemon(lambda: serve(settings)))
