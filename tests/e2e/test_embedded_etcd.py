"""The embedded etcd: only the apiserver (by its client certificate) reaches it, and it is brought
back when it dies; /livez fails when it cannot be."""

from __future__ import annotations

import asyncio
import os
import signal
import stat
import time
from pathlib import Path

import aiohttp
import pytest
from etcd3aio import Etcd3Client
from etcd3aio.kv import prefix_range_end
from test_process_lifecycle import _alive, _children_of

from api import Api, configmap, watching
from kcp_process import KcpServer, free_port

CONFIGMAPS = "/api/v1/namespaces/default/configmaps"


def _etcd_child(server: KcpServer) -> tuple[int, dict[str, str]]:
    """The embedded etcd's pid and its `--flag value` pairs."""
    assert server.process is not None
    children = _children_of(server.process.pid)
    assert len(children) == 1, f"expected the embedded etcd as the only child, got {children}"
    argv = Path(f"/proc/{children[0]}/cmdline").read_bytes().decode().split("\0")
    flags = {arg: value for arg, value in zip(argv, [*argv[1:], ""], strict=True) if arg.startswith("--")}
    return children[0], flags


async def _reads(client: Etcd3Client) -> list[bytes]:
    """Every key under /registry/, through `client`; raises if etcd refuses it."""
    await client.connect()
    try:
        assert client.kv is not None
        resp = await client.kv.get("/registry/", prefix_range_end(b"/registry/"), keys_only=True, timeout=5)
        return [kv.key for kv in resp.kvs]
    finally:
        await client.close()


async def _write_until_created(api: Api, name: str, within: float = 30.0) -> float:
    """POST a ConfigMap until it is created; the seconds that took."""
    started = time.monotonic()
    while True:
        reply = await api.post(CONFIGMAPS, configmap(name))
        if reply.status == 201:
            return time.monotonic() - started
        assert reply.status == 503, reply.body
        assert time.monotonic() - started < within, f"no write succeeded within {within}s: {reply.body}"
        await asyncio.sleep(0.1)


async def test_only_clients_with_a_certificate_from_the_etcd_ca_reach_the_embedded_etcd(tmp_path: Path) -> None:
    server = KcpServer(tmp_path / "kcp", free_port())
    server.start()
    try:
        async with aiohttp.ClientSession() as session:
            assert (await Api(server, session).post(CONFIGMAPS, configmap("secret-ish"))).status == 201
        _, flags = _etcd_child(server)
        url = flags["--listen-client-urls"]
        assert url.startswith("https://127.0.0.1:") and "--client-cert-auth" in flags
        assert flags["--listen-peer-urls"].startswith("https://127.0.0.1:") and "--peer-client-cert-auth" in flags
        endpoint = url.removeprefix("https://")

        pki = server.root / "etcd-pki"
        assert stat.S_IMODE(pki.stat().st_mode) == 0o700
        files = {p.name: stat.S_IMODE(p.stat().st_mode) for p in pki.iterdir()}
        assert {"ca.crt", "ca.key", "server.crt", "server.key", "client.crt", "client.key"} <= set(files)
        assert set(files.values()) == {0o600}, files

        ca = (pki / "ca.crt").read_bytes()
        with pytest.raises(Exception):  # noqa: B017 - refused in plain text, however the client words it
            await _reads(Etcd3Client([endpoint], rpc_max_attempts=1))
        with pytest.raises(Exception):  # noqa: B017 - TLS, but no client certificate
            await _reads(Etcd3Client([endpoint], rpc_max_attempts=1, ca_cert=ca))
        from kcp_apiserver.server.pki import ensure_etcd_credentials

        stranger = ensure_etcd_credentials(tmp_path / "stranger")  # a certificate from another CA
        with pytest.raises(Exception):  # noqa: B017
            await _reads(Etcd3Client([endpoint], rpc_max_attempts=1, ca_cert=ca,
                                     cert_chain=stranger.client_cert.read_bytes(),
                                     cert_key=stranger.client_key.read_bytes()))
        keys = await _reads(Etcd3Client([endpoint], rpc_max_attempts=1, ca_cert=ca,
                                        cert_chain=(pki / "client.crt").read_bytes(),
                                        cert_key=(pki / "client.key").read_bytes()))
        assert any(key.endswith(b"/default/secret-ish") for key in keys), keys
    finally:
        assert server.stop() == 0, server.log_tail()


@pytest.mark.timeout(120)
async def test_a_killed_embedded_etcd_is_restarted_and_the_server_serves_again(tmp_path: Path) -> None:
    server = KcpServer(tmp_path / "kcp", free_port())
    server.start()
    try:
        async with aiohttp.ClientSession() as session:
            api = Api(server, session)
            rv = (await api.post(CONFIGMAPS, configmap("before"))).body["metadata"]["resourceVersion"]
            watch = await watching(api, CONFIGMAPS, {"resourceVersion": rv, "timeoutSeconds": "60"}, 1, timeout=60)
            pid, flags = _etcd_child(server)
            os.kill(pid, signal.SIGKILL)

            await _write_until_created(api, "after")
            events = await asyncio.wait_for(watch, 30)
            assert [e["object"]["metadata"]["name"] for e in events] == ["after"]
            assert (await api.get(f"{CONFIGMAPS}/before")).status == 200  # the same data dir
            new_pid, new_flags = _etcd_child(server)
            assert new_pid != pid and not _alive(pid)
            assert new_flags == flags  # the same ports, data dir and TLS
            live = await api.get("/livez", params={"verbose": "1"})
            assert live.status == 200 and "[+]embedded-etcd ok" in live.body
    finally:
        assert server.stop() == 0, server.log_tail()


@pytest.mark.timeout(120)
async def test_livez_fails_while_the_embedded_etcd_stays_down_past_its_grace_period(tmp_path: Path) -> None:
    server = KcpServer(tmp_path / "kcp", free_port(), ["--embedded-etcd-grace-period", "2"])
    server.start()
    try:
        async with aiohttp.ClientSession() as session:
            api = Api(server, session)
            assert (await api.get("/livez")).status == 200
            data_dir = server.root / "etcd"
            pid, _ = _etcd_child(server)
            data_dir.rename(server.root / "etcd-aside")  # the running etcd keeps its open files
            data_dir.write_text("not a data dir")  # so no restart can succeed
            os.kill(pid, signal.SIGKILL)

            deadline = time.monotonic() + 30
            while (live := await api.get("/livez", params={"verbose": "1"})).status == 200:
                assert time.monotonic() < deadline, "/livez kept passing with etcd down"
                await asyncio.sleep(0.2)
            assert live.status == 503 and "[-]embedded-etcd failed" in live.body, live.body
            assert (await api.get("/readyz")).status == 503

            data_dir.unlink()  # repaired: the next restart succeeds and /livez passes again
            (server.root / "etcd-aside").rename(data_dir)
            await _write_until_created(api, "after-repair")
            assert (await api.get("/livez")).status == 200
    finally:
        assert server.stop() == 0, server.log_tail()
