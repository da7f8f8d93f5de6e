"""Push mode: each SyncTarget's syncer runs inside this process, supervised and restarted when it fails.

The syncer reaches kcp with the controller's credentials (it addresses its logical cluster itself) and the
physical cluster through the SyncTarget's kubeconfig, each with a request budget and connections of its own,
as its own process would have: sharing the controller's budget throttled every syncer to 50 requests a second
together, and a burst of deletes on one cluster held up the others."""

from __future__ import annotations

import asyncio
from collections.abc import Callable
from dataclasses import dataclass

import structlog
from prometheus_client import CollectorRegistry

from kcpcommon.backoff import Backoff
from kcpcommon.clients import ClientFactory, KubeClientFactory
from kcpcommon.keys import ObjectKey
from kcpcommon.tasks import cancel_and_wait, spawn

from . import VERSION

log = structlog.get_logger("kcp-cluster-controller.push")


@dataclass
class _Running:
    fingerprint: str
    task: asyncio.Task[None] | None = None
    error: str = ""
    restarts: int = 0


class PushSyncers:
    """One supervised syncer task per SyncTarget."""

    def __init__(self, kcp: ClientFactory, *, heartbeat_interval: float, registry: CollectorRegistry,
                 on_change: Callable[[ObjectKey], None]) -> None:
        self.kcp = kcp
        self.heartbeat_interval = heartbeat_interval
        self.registry = registry
        self.on_change = on_change
        self._running: dict[ObjectKey, _Running] = {}

    def ensure(self, key: ObjectKey, kubeconfig: str, resources: tuple[str, ...]) -> None:
        """Run the syncer for `key` with this configuration (restarting it if the configuration changed)."""
        fingerprint = f"{hash(kubeconfig)}:{','.join(resources)}"
        running = self._running.get(key)
        if running is not None and running.fingerprint == fingerprint and running.task and not running.task.done():
            return
        if running is not None and running.task is not None:
            running.task.cancel()
        state = _Running(fingerprint)
        state.task = spawn(self._supervise(key, kubeconfig, resources, state), name=f"syncer:{key}")
        self._running[key] = state

    def status(self, key: ObjectKey) -> tuple[bool, str]:
        """(healthy, why not) of the syncer for `key`."""
        running = self._running.get(key)
        if running is None:
            return False, "no syncer is running"
        if running.error:
            return False, f"the syncer failed ({running.restarts} restarts): {running.error}"
        return True, ""

    async def stop(self, key: ObjectKey) -> None:
        running = self._running.pop(key, None)
        if running is not None and running.task is not None:
            await cancel_and_wait(running.task)
            log.info("syncer stopped", sync_target=str(key))

    async def stop_all(self) -> None:
        tasks = [r.task for r in self._running.values() if r.task is not None]
        self._running.clear()
        await cancel_and_wait(*tasks)

    async def _supervise(self, key: ObjectKey, kubeconfig: str, resources: tuple[str, ...], state: _Running) -> None:
        from kcpsyncer import BURST, QPS, SyncerOptions, run_syncer

        delays = Backoff(initial=1.0, cap=30.0)
        while True:
            try:  # each syncer has the request budget its own process would have, on both sides
                async with self.kcp.with_budget(component="kcp-syncer", qps=QPS, burst=BURST) as upstream, \
                        await KubeClientFactory.from_text(kubeconfig, name=key.name, component="kcp-syncer",
                                                          version=VERSION, qps=QPS, burst=BURST) as downstream:
                    options = SyncerOptions(upstream=upstream, downstream=downstream, sync_target=key.name,
                                            logical_cluster=key.cluster, resources=resources,
                                            heartbeat_interval=self.heartbeat_interval)
                    log.info("syncer starting", sync_target=key.name, cluster=key.cluster)
                    if state.error:
                        state.error = ""
                        self.on_change(key)
                    await run_syncer(options, registry=self.registry)
                    raise RuntimeError("the syncer returned")
            except asyncio.CancelledError:
                raise
            except Exception as exc:
                state.error = str(exc) or type(exc).__name__
                state.restarts += 1
                log.warning("syncer failed; restarting", sync_target=key.name, cluster=key.cluster,
                            error=state.error, restarts=state.restarts)
                self.on_change(key)
            await asyncio.sleep(delays.next())
