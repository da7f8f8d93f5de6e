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


class HealthChecks:
    """Named checks, answered as kube-apiserver answers `/healthz`, `/livez` and `/readyz`.

    All pass: `ok` (or, with `verbose`, one `[+]name ok` line each and `<endpoint> check passed`);
    any fails: 503 with every line and `<endpoint> check failed`. `/readyz/<name>` asks one check.
    The apiserver serves these on its API port, daemons on their health port: one rendering for both.
    """

    def __init__(self) -> None:
        self._checks: dict[str, Check] = {}

    def add(self, name: str, check: Check) -> None:
        self._checks[name] = check

    def __contains__(self, name: object) -> bool:
        return name in self._checks

    async def verdicts(self, only: str | None = None) -> dict[str, bool]:
        """Each check's verdict; a check that raises has failed."""
        verdicts = {}
        for name, check in self._checks.items():
            if only is not None and name != only:
                continue
            try:
                result = check()
                if inspect.isawaitable(result):
                    result = await result
                verdicts[name] = bool(result)
            except Exception:
                log.warning("health check failed", check=name, exc_info=True)
                verdicts[name] = False
        return verdicts

    async def render(self, endpoint: str, *, only: str | None = None, verbose: bool = False) -> tuple[int, str]:
        """(HTTP status, body) for `endpoint`; `only` names one check (the caller answers 404 if unknown)."""
        verdicts = await self.verdicts(only)
        passed = all(verdicts.values())
        if only is not None:
            return (200, "ok") if passed else (503, f"internal server error: {only} check failed")
        if passed and not verbose:
            return 200, "ok"
        lines = [f"[+]{name} ok" if ok else f"[-]{name} failed" for name, ok in verdicts.items()]
        lines.append(f"{endpoint} check {'passed' if passed else 'failed'}")
        return (200 if passed else 503), "\n".join(lines) + "\n"


class HealthServer:
    """A small aiohttp server; `port=0` binds a free port, readable as `.port` after `start()`."""

    def __init__(self, *, registry: CollectorRegistry, host: str = "0.0.0.0", port: int = 0) -> None:
        self.registry = registry
        self.host = host
        self.port = port
        self.readiness = HealthChecks()
        self._runner: web.AppRunner | None = None

    def add_readiness_check(self, name: str, check: Check) -> None:
        """`/readyz` answers 200 only while `check()` (plain or async) returns True."""
        self.readiness.add(name, check)

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
        return await self.readiness.verdicts()

    async def _healthz(self, request: web.Request) -> web.Response:
        return web.Response(text="ok")

    async def _readyz(self, request: web.Request) -> web.Response:
        status, text = await self.readiness.render("readyz", verbose=True)
        return web.Response(text=text, status=status)

    async def _metrics(self, request: web.Request) -> web.Response:
        return web.Response(body=generate_latest(self.registry), headers={"Content-Type": CONTENT_TYPE_LATEST})
