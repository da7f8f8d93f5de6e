"""The apiserver's etcd client over mutual TLS, to one endpoint or to several on one channel."""

from __future__ import annotations

import socket
import subprocess
import time
from collections.abc import Iterator
from pathlib import Path

import pytest

from kcp_apiserver.server.pki import EtcdCredentials, ensure_etcd_credentials
from kcp_apiserver.storage.embedded_etcd import etcd_binary
from kcp_apiserver.storage.etcd_client import TLSFiles, etcd_client, grpc_target
from kcp_process import free_port


def start_etcd(data_dir: Path, ports: list[int], extra: list[str], scheme: str = "https") -> subprocess.Popen[bytes]:
    """An etcd serving clients on 127.0.0.1 at `ports`, once it accepts connections on every one."""
    peer = f"http://127.0.0.1:{free_port()}"
    urls = ",".join(f"{scheme}://127.0.0.1:{p}" for p in ports)
    proc = subprocess.Popen(
        [etcd_binary(), "--data-dir", str(data_dir), "--listen-client-urls", urls, "--advertise-client-urls", urls,
         "--listen-peer-urls", peer, "--initial-advertise-peer-urls", peer, "--initial-cluster", f"default={peer}",
         "--log-level", "error", *extra], stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    deadline = time.monotonic() + 20
    for port in ports:
        while True:
            try:
                socket.create_connection(("127.0.0.1", port), 0.2).close()
                break
            except OSError:
                assert proc.poll() is None and time.monotonic() < deadline, "etcd did not listen"
                time.sleep(0.1)
    return proc


@pytest.fixture
def tls_etcd(tmp_path: Path) -> Iterator[tuple[list[str], EtcdCredentials]]:
    """An etcd serving mutual TLS on two client ports."""
    pki = ensure_etcd_credentials(tmp_path)
    ports = [free_port(), free_port()]
    proc = start_etcd(tmp_path / "data", ports, [
        "--cert-file", str(pki.server_cert), "--key-file", str(pki.server_key), "--trusted-ca-file",
        str(pki.ca_cert), "--client-cert-auth"])
    yield [f"127.0.0.1:{p}" for p in ports], pki
    proc.terminate()
    proc.wait(10)


async def _put_and_get(endpoints: list[str], tls: TLSFiles | None) -> bytes:
    client = etcd_client(endpoints, tls)
    await client.connect()
    try:
        assert client.kv is not None
        for _ in range(4):  # round robin: every endpoint answers at least once
            await client.kv.put("/k", b"v", timeout=10)
        return bytes((await client.kv.get("/k", timeout=10)).kvs[0].value)
    finally:
        await client.close()


async def test_mutual_tls_to_one_endpoint_and_to_several(tls_etcd: tuple[list[str], EtcdCredentials]) -> None:
    endpoints, pki = tls_etcd
    assert await _put_and_get(endpoints[:1], pki.client) == b"v"
    assert await _put_and_get(endpoints, pki.client) == b"v"


async def test_without_a_client_certificate_etcd_refuses(tls_etcd: tuple[list[str], EtcdCredentials]) -> None:
    endpoints, pki = tls_etcd
    with pytest.raises(Exception):  # noqa: B017 - refused in the handshake, however etcd3aio words it
        await _put_and_get(endpoints[:1], TLSFiles(str(pki.ca_cert)))


def test_a_host_name_goes_through_grpcs_resolver_and_ip_literals_are_kept() -> None:
    """etcd3aio's own `ipv4:` target refused any name (compose's `etcd:2379`, a chart's Service)."""
    assert grpc_target(["etcd:2379"]) == "dns:///etcd:2379"
    assert grpc_target(["127.0.0.1:2379"]) == "ipv4:127.0.0.1:2379"
    assert grpc_target(["127.0.0.1:1", "127.0.0.2:2"]) == "ipv4:127.0.0.1:1,127.0.0.2:2"
    assert grpc_target(["[::1]:1", "[::1]:2"]) == "ipv6:[::1]:1,[::1]:2"
    assert grpc_target(["127.0.0.1:1", "localhost:2"]).startswith("ipv4:127.0.0.1:1,127.0.0.1:2")


async def test_an_etcd_addressed_by_name_answers(tmp_path: Path) -> None:
    port = free_port()
    proc = start_etcd(tmp_path / "data", [port], [], scheme="http")
    try:
        # upper case: etcd3aio rewrote the lower-case word `localhost` to 127.0.0.1, which hid the bug for it
        assert await _put_and_get([f"LOCALHOST:{port}"], None) == b"v"
    finally:
        proc.terminate()
        proc.wait(10)
