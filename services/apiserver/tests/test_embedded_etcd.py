"""The embedded etcd's supervisor: a dead etcd comes back on its ports and data; one that cannot
come back fails the liveness check once the grace period is over."""

from __future__ import annotations

import asyncio
import os
import signal
from collections.abc import AsyncIterator, Callable
from pathlib import Path

import pytest

from kcp_apiserver.server.pki import EtcdCredentials, ensure_etcd_credentials
from kcp_apiserver.storage.embedded_etcd import EmbeddedEtcd
from kcp_apiserver.storage.etcd_client import etcd_client


class Clock:
    def __init__(self) -> None:
        self.now = 1000.0

    def __call__(self) -> float:
        return self.now


async def _until(condition: Callable[[], bool], within: float = 30.0) -> None:
    async with asyncio.timeout(within):
        while not condition():
            await asyncio.sleep(0.05)


@pytest.fixture
def creds(tmp_path: Path) -> EtcdCredentials:
    return ensure_etcd_credentials(tmp_path)


@pytest.fixture
async def etcd(tmp_path: Path, creds: EtcdCredentials) -> AsyncIterator[tuple[EmbeddedEtcd, Clock]]:
    clock = Clock()
    server = EmbeddedEtcd(tmp_path, tls=creds.server, grace_period=5.0, clock=clock)
    await server.start()
    yield server, clock
    await server.stop()


async def _get_when_back(endpoint: str, creds: EtcdCredentials, key: str) -> bytes:
    client = etcd_client([endpoint], creds.client)
    await client.connect()
    try:
        assert client.kv is not None
        async with asyncio.timeout(30):
            while True:
                try:
                    resp = await client.kv.get(key, timeout=1)
                    return bytes(resp.kvs[0].value)
                except Exception:
                    await asyncio.sleep(0.05)
    finally:
        await client.close()


async def test_a_killed_etcd_is_started_again_on_the_same_port_and_data(
        etcd: tuple[EmbeddedEtcd, Clock], creds: EtcdCredentials) -> None:
    server, _ = etcd
    client = etcd_client([server.endpoint], creds.client)
    await client.connect()
    assert client.kv is not None
    await client.kv.put("/kept", b"yes")
    await client.close()
    endpoint, first = server.endpoint, server.process
    assert first is not None
    os.kill(first.pid, signal.SIGKILL)
    await _until(lambda: server.restarts == 1)
    assert server.endpoint == endpoint and server.process is not first and server.live()
    assert await _get_when_back(endpoint, creds, "/kept") == b"yes"


async def test_liveness_fails_only_once_etcd_stays_down_past_the_grace_period(
        etcd: tuple[EmbeddedEtcd, Clock], tmp_path: Path) -> None:
    server, clock = etcd
    assert server.process is not None
    server.data_dir.rename(tmp_path / "aside")
    server.data_dir.write_text("not a data dir")  # every restart fails
    os.kill(server.process.pid, signal.SIGKILL)
    await _until(lambda: server.down_since is not None)
    clock.now += 4.9
    assert server.live()
    clock.now += 0.2
    assert not server.live()
    server.data_dir.unlink()
    (tmp_path / "aside").rename(server.data_dir)
    await _until(lambda: server.restarts == 1)
    assert server.live() and server.down_since is None


async def test_stop_ends_the_supervision_with_the_process(tmp_path: Path, creds: EtcdCredentials) -> None:
    server = EmbeddedEtcd(tmp_path, tls=creds.server)
    await server.start()
    process = server.process
    assert process is not None
    await server.stop()
    assert process.returncode is not None and server.process is process and server.restarts == 0


async def test_an_etcd_that_exits_at_start_because_its_port_was_taken_starts_again_on_new_ports(
        tmp_path: Path, creds: EtcdCredentials, monkeypatch: pytest.MonkeyPatch) -> None:
    """A port picked free can be taken before etcd binds it (seen in CI): etcd exits 1, and is started again."""
    import socket

    from kcp_apiserver.storage import embedded_etcd

    taken = socket.socket()
    taken.bind(("127.0.0.1", 0))
    taken.listen()
    ports = iter([taken.getsockname()[1]])
    real = embedded_etcd.free_port
    monkeypatch.setattr(embedded_etcd, "free_port", lambda host="127.0.0.1": next(ports, None) or real(host))
    server = EmbeddedEtcd(tmp_path, tls=creds.server, grace_period=5.0)
    try:
        await server.start()
        assert server.client_port != taken.getsockname()[1]
        assert "address already in use" in server.log_path.read_text()  # the first etcd did exit for it
    finally:
        await server.stop()
        taken.close()
