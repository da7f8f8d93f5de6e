"""kcpcommon's tests run against one real kcp-apiserver per session.

Tests isolate themselves by namespace or logical cluster. `TcpProxy` sits
between a client and the server so a test can cut the client's connections
while the server keeps running (a network partition, not a restart).
"""

from __future__ import annotations

import asyncio
import os
import signal
import subprocess
import sys
import threading
import time
import uuid
from collections.abc import AsyncIterator, Awaitable, Callable, Iterator
from contextlib import suppress
from pathlib import Path

import pytest
import yaml

from kcp_process import KcpServer, free_port
from kcpcommon.clients import ClientFactory

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


@pytest.fixture
async def clients(kcp: KcpServer) -> AsyncIterator[ClientFactory]:
    factory = await ClientFactory.load(kcp.kubeconfig, component="kcpcommon-tests", version="0.1.0", qps=0, burst=0)
    async with factory:
        yield factory


@pytest.fixture
async def namespace(clients: ClientFactory, unique: str) -> str:
    """A fresh namespace in the admin logical cluster."""
    name = f"ns-{unique}"
    namespaces = clients.dynamic("admin").resource("v1", "namespaces", namespaced=False)
    await namespaces.create({"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": name}})
    return name


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


@pytest.fixture
def restartable_kcp(tmp_path: Path) -> Iterator[KcpServer]:
    """A server of the test's own, which the test may stop and start again."""
    server = KcpServer(tmp_path / "kcp", free_port(), list(SERVER_ARGS))
    server.start()
    yield server
    with suppress(Exception):
        server.stop()


# --- leader election candidates: real daemon processes (see le_candidate.py) ---

CANDIDATE_SCRIPT = Path(__file__).with_name("le_candidate.py")


class CandidateProcess:
    """One `le_candidate.py` process; its stdout lines are collected as (word, detail, unix time)."""

    def __init__(self, args: list[str], *, env: dict[str, str], stderr_path: Path) -> None:
        with open(stderr_path, "w") as stderr:
            self.process = subprocess.Popen([sys.executable, str(CANDIDATE_SCRIPT), *args], stdout=subprocess.PIPE,
                                            stderr=stderr, text=True, env=env, start_new_session=True)
        self.stderr_path = stderr_path
        self.lines: list[tuple[str, str, float]] = []
        self._reader = threading.Thread(target=self._read, daemon=True)
        self._reader.start()

    def _read(self) -> None:
        assert self.process.stdout is not None
        for line in self.process.stdout:
            *words, stamp = line.split()
            self.lines.append((words[0], " ".join(words[1:]), float(stamp)))

    def times(self, word: str) -> list[float]:
        return [stamp for w, _, stamp in list(self.lines) if w == word]

    def details(self, word: str) -> list[str]:
        return [detail for w, detail, _ in list(self.lines) if w == word]

    async def wait_for(self, word: str, timeout: float = 15.0) -> float:
        """The time of the first `word` line, waiting for it if need be."""
        deadline = time.monotonic() + timeout
        while not self.times(word):
            if self.process.poll() is not None and not self._reader.is_alive():
                raise AssertionError(f"candidate exited ({self.process.returncode}) before {word}:\n{self.log()}")
            if time.monotonic() > deadline:
                raise AssertionError(f"no {word} within {timeout}s:\n{self.log()}")
            await asyncio.sleep(0.02)
        return self.times(word)[0]

    async def exit_code(self, timeout: float = 15.0) -> int:
        deadline = time.monotonic() + timeout
        while self.process.poll() is None:
            if time.monotonic() > deadline:
                raise AssertionError(f"candidate still running after {timeout}s:\n{self.log()}")
            await asyncio.sleep(0.02)
        self._reader.join(5)
        return self.process.returncode

    def send(self, sig: signal.Signals) -> float:
        """Send a signal; returns when (unix time)."""
        sent = time.time()
        self.process.send_signal(sig)
        return sent

    def log(self) -> str:
        out = "\n".join(" ".join(map(str, line)) for line in self.lines)
        return f"stdout:\n{out}\nstderr:\n{self.stderr_path.read_text()[-4000:]}"


StartCandidate = Callable[..., CandidateProcess]


@pytest.fixture
def start_candidate(kcp: KcpServer, tmp_path: Path) -> Iterator[StartCandidate]:
    """`start_candidate(*flags, env={...})`: a candidate daemon on the session's server, killed after the test.

    Unless `defaults=False`, it gets `--kubeconfig` and `--health-address 127.0.0.1` before `flags`.
    """
    started: list[CandidateProcess] = []

    def start(*flags: str, env: dict[str, str] | None = None, defaults: bool = True) -> CandidateProcess:
        args = [*flags]
        if defaults:
            args = ["--kubeconfig", str(kcp.kubeconfig), "--health-address", "127.0.0.1", *args]
        candidate = CandidateProcess(args, env={**os.environ, **(env or {})},
                                     stderr_path=tmp_path / f"candidate-{len(started)}.log")
        started.append(candidate)
        return candidate

    yield start
    for candidate in started:
        if candidate.process.poll() is None:
            candidate.process.kill()
        candidate.process.wait(10)
        if candidate.process.stdout is not None:
            candidate.process.stdout.close()
