"""Daemon scaffolding: settings, logging, health, signals and leader election wired the same way everywhere.

A kcp controller's console script is:

    def main() -> None:
        settings = parse_settings(SplitterSettings, prog=COMPONENT)
        configure_logging(settings.log_level)
        raise SystemExit(run_daemon(lambda: serve_controller(settings, component=COMPONENT, version=VERSION,
                                                             lead=lead)))

where `lead(kcp, health, registry)` runs the controllers while this replica leads.

`run_daemon` turns SIGTERM and SIGINT into a cancellation of the main task.
Cancellation unwinds in the order a clean handover needs: controllers stop
taking work and finish the keys they hold, then the leader elector releases
the lease (so a standby takes over at once), then the process exits 0.
"""

from __future__ import annotations

import asyncio
import signal
from collections.abc import Awaitable, Callable, Coroutine
from typing import Any

import structlog
from kubernetes_asyncio.client import ApiClient
from prometheus_client import CollectorRegistry

from .clients import ClientFactory
from .health import HealthServer
from .leaderelection import LeaderElector, LeadershipLost
from .logs import configure_logging
from .rlimits import raise_open_files_limit
from .settings import DaemonSettings, ShardedDaemonSettings, env_var, parse_settings, settings_config
from .tlsbuffers import shrink_tls_read_buffers

__all__ = ["DaemonSettings", "HealthServer", "ShardedDaemonSettings", "configure_logging", "env_var",
           "parse_settings", "run_daemon", "run_elected", "serve_controller", "settings_config"]

log = structlog.get_logger("kcpcommon.daemon")

STOP_SIGNALS = (signal.SIGTERM, signal.SIGINT)


def run_daemon(main: Callable[[], Coroutine[Any, Any, Any]]) -> int:
    """Run `main()` in a new event loop until it ends or a stop signal arrives; returns the exit code.

    0 when `main` returns or a signal stopped it; 1 when it failed (lost
    leadership included, so the orchestrator restarts it as a fresh candidate).
    A second signal cancels again, abandoning work still draining.
    """
    raise_open_files_limit()
    shrink_tls_read_buffers()  # its watches: 84 KiB each instead of 310 KiB
    return asyncio.run(_supervise(main))


async def _supervise(main: Callable[[], Coroutine[Any, Any, Any]]) -> int:
    loop = asyncio.get_running_loop()
    task = loop.create_task(main(), name="main")
    received: list[signal.Signals] = []

    def on_signal(sig: signal.Signals) -> None:
        received.append(sig)
        log.info("stop signal received: finishing work in hand", signal=sig.name, count=len(received))
        task.cancel()

    for sig in STOP_SIGNALS:
        loop.add_signal_handler(sig, on_signal, sig)
    try:
        await asyncio.wait([task])
    finally:
        for sig in STOP_SIGNALS:
            loop.remove_signal_handler(sig)
    if task.cancelled():
        if received:
            log.info("stopped")
            return 0
        log.error("main task cancelled without a stop signal")
        return 1
    error = task.exception()
    if error is None:
        return 0
    if isinstance(error, LeadershipLost):
        log.error("leadership lost, exiting", error=str(error))
    else:
        log.error("daemon failed", exc_info=error)
    return 1


async def run_elected(run: Callable[[], Awaitable[Any]], *, settings: DaemonSettings, component: str,
                      api_client: ApiClient, on_stopped_leading: Callable[[], Any] | None = None,
                      on_new_leader: Callable[[str], Any] | None = None) -> None:
    """Run `run()` while this replica leads (always, with `--no-leader-elect`).

    Raises `LeadershipLost` if the lease slips away: the daemon should exit and
    campaign again from a clean state, as client-go's controllers do.
    """
    if not settings.leader_elect:
        await run()
        return
    elector = LeaderElector(api_client, settings.leader_election(component), on_started_leading=run,
                            on_stopped_leading=on_stopped_leading, on_new_leader=on_new_leader)
    await elector.run()


Lead = Callable[[ClientFactory, HealthServer, CollectorRegistry], Awaitable[Any]]


async def serve_controller(settings: DaemonSettings, *, component: str, version: str, lead: Lead) -> None:
    """What every controller does around its work: a metrics registry, /healthz, /readyz and /metrics, one
    client factory for kcp (User-Agent `component/version`, the settings' qps and burst), and `lead` run
    while this replica is elected (its readiness checks go on `health`)."""
    registry = CollectorRegistry()
    health = HealthServer(registry=registry, host=settings.health_address, port=settings.health_port)
    async with health, await ClientFactory.load(settings.kubeconfig, context=settings.context, component=component,
                                                version=version, qps=settings.qps, burst=settings.burst) as kcp:
        await run_elected(lambda: lead(kcp, health, registry), settings=settings, component=component,
                          api_client=kcp.api_client(settings.cluster))
