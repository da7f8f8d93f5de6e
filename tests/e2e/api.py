"""A thin raw-HTTP client for asserting exact API behaviour (codes, Status bodies, headers)."""

from __future__ import annotations

import asyncio
import json
from collections.abc import AsyncIterator
from dataclasses import dataclass
from typing import Any

import aiohttp

from kcp_process import KcpServer


@dataclass
class Reply:
    status: int
    body: Any
    headers: Any


class Api:
    def __init__(self, server: KcpServer, session: aiohttp.ClientSession, token: str | None = None) -> None:
        self.server = server
        self.session = session
        self.token = server.token if token is None else token

    def _headers(self, extra: dict[str, str] | None = None) -> dict[str, str]:
        headers = {"Accept": "application/json"}
        if self.token:
            headers["Authorization"] = f"Bearer {self.token}"
        headers.update(extra or {})
        return headers

    async def request(self, method: str, path: str, body: Any = None, *, content_type: str = "application/json",
                      headers: dict[str, str] | None = None, params: dict[str, str] | None = None,
                      raw: bytes | None = None) -> Reply:
        data = raw if raw is not None else (json.dumps(body).encode() if body is not None else None)
        hdrs = self._headers(headers)
        if data is not None:
            hdrs["Content-Type"] = content_type
        async with self.session.request(method, self.server.url + path, data=data, headers=hdrs,
                                        params=params, ssl=self.server.ssl_context()) as resp:
            text = await resp.read()
            try:
                parsed = json.loads(text) if text else None
            except ValueError:
                parsed = text.decode(errors="replace")
            return Reply(resp.status, parsed, resp.headers)

    async def get(self, path: str, **kw: Any) -> Reply:
        return await self.request("GET", path, **kw)

    async def post(self, path: str, body: Any, **kw: Any) -> Reply:
        return await self.request("POST", path, body, **kw)

    async def put(self, path: str, body: Any, **kw: Any) -> Reply:
        return await self.request("PUT", path, body, **kw)

    async def patch(self, path: str, body: Any, content_type: str, **kw: Any) -> Reply:
        return await self.request("PATCH", path, body, content_type=content_type, **kw)

    async def delete(self, path: str, body: Any = None, **kw: Any) -> Reply:
        return await self.request("DELETE", path, body, **kw)

    async def watch(self, path: str, params: dict[str, str], headers: dict[str, str] | None = None, *,
                    opened: asyncio.Event | None = None) -> AsyncIterator[dict[str, Any]]:
        """Yield watch events until the server ends the stream.

        `opened` is set once the server has answered: the watch's starting revision is fixed then, so every
        write made afterwards reaches it (the event to wait for instead of sleeping).
        """
        async with self.session.get(self.server.url + path, params={**params, "watch": "1"},
                                    headers=self._headers(headers), ssl=self.server.ssl_context(),
                                    timeout=aiohttp.ClientTimeout(total=None, sock_read=None)) as resp:
            assert resp.status == 200, await resp.text()
            if opened is not None:
                opened.set()
            async for line in resp.content:
                if line.strip():
                    yield json.loads(line)


def configmap(name: str, data: dict[str, str] | None = None, labels: dict[str, str] | None = None) -> dict[str, Any]:
    meta: dict[str, Any] = {"name": name}
    if labels:
        meta["labels"] = labels
    return {"apiVersion": "v1", "kind": "ConfigMap", "metadata": meta, "data": data or {"k": "v"}}


async def collect(api: Api, path: str, params: dict[str, str], count: int, timeout: float = 10,
                  opened: asyncio.Event | None = None) -> list[dict[str, Any]]:
    """The first `count` events of a watch; fails after `timeout` seconds."""
    events: list[dict[str, Any]] = []

    async def run() -> None:
        async for event in api.watch(path, params, opened=opened):
            events.append(event)
            if len(events) >= count:
                return

    await asyncio.wait_for(run(), timeout)
    return events


async def watching(api: Api, path: str, params: dict[str, str], count: int,
                   timeout: float = 10) -> asyncio.Task[list[dict[str, Any]]]:
    """Collect `count` events (within `timeout` s) in the background; returns once the server opened the watch."""
    opened = asyncio.Event()
    task = asyncio.create_task(collect(api, path, params, count, timeout, opened=opened))
    waiter = asyncio.create_task(opened.wait())
    await asyncio.wait([task, waiter], timeout=10, return_when=asyncio.FIRST_COMPLETED)
    waiter.cancel()
    if task.done() and task.exception() is not None:
        task.result()  # the watch failed: say why
    assert opened.is_set(), f"the watch of {path} did not open within 10s"
    return task
