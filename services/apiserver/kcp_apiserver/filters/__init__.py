"""HTTP filters, outermost first: observability -> errors -> request info (logical-cluster routing)
-> request timeout -> authentication -> impersonation -> in-flight limits -> authorization. Each is one aiohttp
middleware with one job."""

from __future__ import annotations

from collections.abc import Awaitable, Callable

from aiohttp import web

Handler = Callable[[web.Request], Awaitable[web.StreamResponse]]
