"""`/healthz`, `/readyz` and `/metrics` for a daemon (controller-runtime's probe and metrics servers, in one).

Kubernetes restarts a pod whose liveness probe fails and sends no traffic to
(and a rolling update waits for) a pod that is not ready, so the two answer
different questions: `/healthz` says the process serves at all; `/readyz` says
every registered readiness check passes (caches synced, say). Its body lists
the checks as kube-apiserver's does (`[+]informers ok`, `[-]leader failed`).
"""

from __future__ import annotations

import inspect
from collections.abc import Awaitable, Callable

import structlog
from aiohttp import web
from prometheus_client import CONTENT_TYPE_LATEST, CollectorRegistry, generate_latest

log = structlog.get_logger("kcpcommon.health")

Check = Callable[[], bool | Awaitable[bool]]


class HealthServer:
    """A small aiohttp server; `port=0` binds a free port, readable as `.port` after `start()`."""

    def __init__(self, *, registry: CollectorRegistry, host: str = "0.0.0.0", port: int = 0) -> None:
        self.registry = registry
        self.host = host
        self.port = port
        self._checks: dict[str, Check] = {}
        self._runner: web.AppRunner | None = None

    def add_readiness_check(self, name: str, check: Check) -> None:
        """`/readyz` answers 200 only while `check()` (plain or async) returns True."""
        self._checks[name] = check

    async def start(self) -> None:
        app = web.Application()
        app.router.add_get("/healthz", self._healthz)
        app.router.add_get("/livez", self._healthz)
        app.router.add_get("/readyz", self._readyz)
        app.router.add_get("/metrics", self._metrics)
        self._runner = web.AppRunner(app, access_log=None)
        await self._runner.setup()
        site = web.TCPSite(self._runner, self.host, self.port)
        await site.start()
        self.port = self._runner.addresses[0][1]
        log.info("health server listening", address=self.host, port=self.port)

    async def stop(self) -> None:
        if self._runner is not None:
            await self._runner.cleanup()
            self._runner = None

    async def __aenter__(self) -> HealthServer:
        await self.start()
        return self

    async def __aexit__(self, *exc_info: object) -> None:
        await self.stop()

    async def ready(self) -> dict[str, bool]:
        """Each readiness check's verdict; a check that raises has failed."""
        verdicts = {}
        for name, check in self._checks.items():
            try:
                result = check()
                if inspect.isawaitable(result):
                    result = await result
                verdicts[name] = bool(result)
            except Exception:
                log.warning("readiness check failed", check=name, exc_info=True)
                verdicts[name] = False
        return verdicts

    async def _healthz(self, request: web.Request) -> web.Response:
        return web.Response(text="ok")

    async def _readyz(self, request: web.Request) -> web.Response:
        verdicts = await self.ready()
        lines = [f"[+]{name} ok" if ok else f"[-]{name} failed" for name, ok in verdicts.items()]
        ready = all(verdicts.values())
        lines.append("readyz check passed" if ready else "readyz check failed")
        return web.Response(text="\n".join(lines) + "\n", status=200 if ready else 503)

    async def _metrics(self, request: web.Request) -> web.Response:
        return web.Response(body=generate_latest(self.registry), headers={"Content-Type": CONTENT_TYPE_LATEST})
