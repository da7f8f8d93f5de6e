"""Fixtures the libraries' test suites share (libs/kcpcommon, libs/kcpsyncer): one real kcp-apiserver per
session, and a `TcpProxy` between a client and the server so a test can cut the client's connections
while the server keeps running (a network partition, not a restart).

A suite's conftest imports the fixtures it uses from here.
"""

from __future__ import annotations

import asyncio
import uuid
from collections.abc import AsyncIterator, Awaitable, Callable, Iterator

import pytest
import yaml

from kcp_process import KcpServer, free_port

SERVER_ARGS = ["--watch-bookmark-interval", "1", "--compaction-interval", "0", "--watch-cache-size", "200"]


@pytest.fixture(scope="session")
def kcp(tmp_path_factory: pytest.TempPathFactory) -> Iterator[KcpServer]:
    server = KcpServer(tmp_path_factory.mktemp("kcp"), free_port(), list(SERVER_ARGS))
    server.start()
    yield server
    assert server.stop() == 0, server.log_tail()


@pytest.fixture
def unique() -> str:
    return uuid.uuid4().hex[:8]


@pytest.fixture
async def no_leaked_tasks() -> AsyncIterator[None]:
    """Fails a test that leaves tasks running (request it first, so it checks last)."""
    before = asyncio.all_tasks()
    yield
    for _ in range(3):
        await asyncio.sleep(0)
    current = asyncio.current_task()
    leaked = [t for t in asyncio.all_tasks() - before if t is not current and not t.done()]
    assert not leaked, f"tasks left running: {[t.get_name() for t in leaked]}"


KubeconfigText = Callable[..., str]


@pytest.fixture
def kubeconfig_text() -> KubeconfigText:
    """`kubeconfig_text(server, port=..., token=..., path=...)`: the admin kubeconfig, aimed elsewhere or with
    another token; `path` is appended to the current context's server URL (`/clusters/x`: one logical cluster
    posing as a whole Kubernetes cluster, as a kcp-sim-cluster serves them)."""

    def text(server: KcpServer, *, port: int | None = None, token: str | None = None, path: str = "") -> str:
        content = server.kubeconfig.read_text()
        if path:
            config = yaml.safe_load(content)
            context = next(c for c in config["contexts"] if c["name"] == config["current-context"])
            cluster = next(c for c in config["clusters"] if c["name"] == context["context"]["cluster"])
            cluster["cluster"]["server"] += path
            content = yaml.safe_dump(config)
        if port is not None:
            content = content.replace(f"127.0.0.1:{server.port}", f"127.0.0.1:{port}")
        if token is not None:
            content = content.replace(server.token, token)
        return str(content)

    return text


class TcpProxy:
    """Forwards 127.0.0.1:<port> to the server; `cut()` drops and refuses connections until `restore()`."""

    def __init__(self, target_port: int) -> None:
        self.target_port = target_port
        self.port = 0
        self.blocked = False
        self.connections = 0  # accepted and forwarded, over the proxy's life
        self._server: asyncio.Server | None = None
        self._writers: set[asyncio.StreamWriter] = set()

    async def start(self) -> None:
        self._server = await asyncio.start_server(self._handle, "127.0.0.1", 0)
        self.port = self._server.sockets[0].getsockname()[1]

    def cut(self) -> None:
        self.blocked = True
        for writer in list(self._writers):
            writer.transport.abort()

    def restore(self) -> None:
        self.blocked = False

    async def close(self) -> None:
        self.cut()
        if self._server is not None:
            self._server.close()
            await self._server.wait_closed()
        for _ in range(5):  # let the connection handlers see their aborted transports
            await asyncio.sleep(0)

    async def _handle(self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        if self.blocked:
            writer.transport.abort()
            return
        try:
            up_reader, up_writer = await asyncio.open_connection("127.0.0.1", self.target_port)
        except OSError:
            writer.transport.abort()
            return
        self.connections += 1
        self._writers |= {writer, up_writer}
        try:
            await asyncio.gather(_pump(reader, up_writer), _pump(up_reader, writer))
        finally:
            self._writers -= {writer, up_writer}


async def _pump(reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
    try:
        while data := await reader.read(65536):
            writer.write(data)
            await writer.drain()
    except OSError:
        pass
    finally:
        writer.transport.abort()


@pytest.fixture
async def make_proxy() -> AsyncIterator[Callable[[int], Awaitable[TcpProxy]]]:
    """`await make_proxy(port)`: a cuttable TCP path to a server, closed after the test."""
    proxies: list[TcpProxy] = []

    async def make(port: int) -> TcpProxy:
        proxy = TcpProxy(port)
        await proxy.start()
        proxies.append(proxy)
        return proxy

    yield make
    for proxy in proxies:
        await proxy.close()
