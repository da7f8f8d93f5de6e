"""kcpcommon's tests run against one real kcp-apiserver per session (the fixtures in tests/e2e/kcp_fixtures.py).

Tests isolate themselves by namespace or logical cluster. `make_proxy` gives a cuttable TCP path to a
server (a network partition, not a restart).
"""

from __future__ import annotations

import asyncio
import os
import signal
import subprocess
import sys
import threading
import time
from collections.abc import AsyncIterator, Callable, Iterator
from contextlib import suppress
from pathlib import Path

import pytest

from kcp_fixtures import SERVER_ARGS, kcp, kubeconfig_text, make_proxy, no_leaked_tasks, unique
from kcp_process import KcpServer, free_port
from kcpcommon.clients import ClientFactory

# the fixtures shared with libs/kcpsyncer, imported so that pytest finds them
__all__ = ["kcp", "kubeconfig_text", "make_proxy", "no_leaked_tasks", "unique"]


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
