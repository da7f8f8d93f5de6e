"""`kcp-deployment-splitter`: split Deployments over Ready SyncTargets in every logical cluster."""

from __future__ import annotations

import structlog
from prometheus_client import CollectorRegistry

from kcpcommon.clients import ClientFactory
from kcpcommon.daemon import HealthServer, configure_logging, parse_settings, run_daemon, serve_controller
from kcpcommon.version import package_version

from .controller import SplitterController
from .names import COMPONENT
from .settings import SplitterSettings

VERSION = package_version(COMPONENT)

log = structlog.get_logger(COMPONENT)


async def serve(settings: SplitterSettings) -> None:
    async def lead(kcp: ClientFactory, health: HealthServer, registry: CollectorRegistry) -> None:
        controller = SplitterController(kcp, settings, registry)
        health.add_readiness_check("informers", lambda: controller.ready)
        log.info("splitting Deployments in every logical cluster", grace_period=settings.grace_period,
                 shard=settings.shard_index, shards=settings.shards)
        await controller.run()

    await serve_controller(settings, component=COMPONENT, version=VERSION, lead=lead)


def main() -> None:
    settings = parse_settings(SplitterSettings, prog=COMPONENT)
    configure_logging(settings.log_level)
    raise SystemExit(run_daemon(lambda: serve(settings)))
