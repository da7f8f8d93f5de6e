"""A leader election candidate for the tests: a tiny kcp daemon that says what it does on stdout.

Each line is `WORD [detail] <unix time>`: CANDIDATE when it starts campaigning,
NEW-LEADER <identity> when it sees a leader, LEADING / STOPPED around the
leading work (a controller reconciling one key over and over), RECONCILING /
RECONCILED around each reconcile, STEPPED-DOWN after the lease is released.
"""

from __future__ import annotations

import asyncio
import time

from kubernetes_asyncio.client import CoordinationV1Api
from prometheus_client import CollectorRegistry
from pydantic import Field

from kcpcommon.clients import ClientFactory
from kcpcommon.controller import Controller, Result
from kcpcommon.daemon import (
    DaemonSettings,
    HealthServer,
    configure_logging,
    parse_settings,
    run_daemon,
    run_elected,
    settings_config,
)
from kcpcommon.errors import translate

COMPONENT = "le-candidate"


class CandidateSettings(DaemonSettings):
    """A leader election candidate that reconciles one key over and over."""

    model_config = settings_config(COMPONENT)

    work_seconds: float = Field(0.3, ge=0, description="how long each reconcile takes")


def say(*words: object) -> None:
    print(*words, f"{time.time():.3f}", flush=True)


async def serve(settings: CandidateSettings) -> None:
    registry = CollectorRegistry()
    clients = await ClientFactory.load(settings.kubeconfig, context=settings.context, component=COMPONENT,
                                       version="0.0.0", qps=settings.qps, burst=settings.burst)
    async with clients, HealthServer(registry=registry, host=settings.health_address,
                                     port=settings.health_port) as health:
        api = clients.api_client(settings.cluster)

        async def api_reachable() -> bool:
            async with translate():
                await CoordinationV1Api(api).list_namespaced_lease(settings.lease_namespace, limit=1)
            return True

        health.add_readiness_check("api", api_reachable)
        say("HEALTH", health.port)

        async def reconcile(key: str) -> Result:
            say("RECONCILING", key)
            await asyncio.sleep(settings.work_seconds)
            say("RECONCILED", key)
            return Result(requeue_after=0.05)

        controller: Controller[str] = Controller("ticker", reconcile, registry=registry, component=COMPONENT)

        async def lead() -> None:
            say("LEADING")
            controller.enqueue("tick")
            try:
                await controller.start()
            finally:
                say("STOPPED")

        say("CANDIDATE")
        await run_elected(lead, settings=settings, component=COMPONENT, api_client=api,
                          on_stopped_leading=lambda: say("STEPPED-DOWN"),
                          on_new_leader=lambda identity: say("NEW-LEADER", identity))


def main() -> None:
    settings = parse_settings(CandidateSettings, prog=COMPONENT)
    configure_logging(settings.log_level)
    raise SystemExit(run_daemon(lambda: serve(settings)))


if __name__ == "__main__":
    main()
