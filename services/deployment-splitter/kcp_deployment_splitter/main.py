"""`kcp-deployment-splitter`: split Deployments over Ready SyncTargets in every logical cluster."""

from __future__ import annotations

import structlog
from prometheus_client import CollectorRegistry

from kcpcommon.clients import ClientFactory
from kcpcommon.daemon import HealthServer, configure_logging, parse_settings, run_daemon, run_elected
from kcpcommon.version import package_version

from .controller import SplitterController
from .names import COMPONENT
from .settings import SplitterSettings

VERSION = package_version(COMPONENT)

log = structlog.get_logger(COMPONENT)


async def serve(settings: SplitterSettings) -> None:
    registry = CollectorRegistry()
    health = HealthServer(registry=registry, host=settings.health_address, port=settings.health_port)
    async with health, await ClientFactory.load(settings.kubeconfig, context=settings.context, component=COMPONENT,
                                                version=VERSION, qps=settings.qps, burst=settings.burst) as kcp:
        async def lead() -> None:
            controller = SplitterController(kcp, settings, registry)
            health.add_readiness_check("informers", lambda: controller.has_synced)
            log.info("splitting Deployments in every logical cluster", grace_period=settings.grace_period,
                     shard=settings.shard_index, shards=settings.shards)
            await controller.run()

        await run_elected(lead, settings=settings, component=COMPONENT, api_client=kcp.api_client(settings.cluster))


def main() -> None:
    settings = parse_settings(SplitterSettings, prog=COMPONENT)
    configure_logging(settings.log_level)
    raise SystemExit(run_daemon(lambda: serve(settings)))
