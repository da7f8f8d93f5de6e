"""External etcd: reached over mutual TLS with kube-apiserver's flags, and served again as soon as it is
back after an outage, however long the outage was."""

from __future__ import annotations

import asyncio
import time
from pathlib import Path
from typing import Any

import aiohttp
import pytest
from etcd3aio import Etcd3Client
from test_process_lifecycle import ExternalEtcd

from api import Api, configmap
from kcp_process import KcpServer, free_port

CONFIGMAPS = "/api/v1/namespaces/default/configmaps"
OUTAGE = 9.0  # long enough that gRPC's default reconnect backoff (1 s x1.6 per attempt) had grown past 5 s
RECOVERY = 2.0


async def _etcd_writable(endpoint: str) -> float:
    """When etcd itself first takes a write, from a client that connects now (its own start-up: leader election)."""
    client = Etcd3Client([endpoint], rpc_max_attempts=1)
    await client.connect()
    try:
        assert client.kv is not None
        while True:
            try:
                await client.kv.put("/recovery-probe", b"x", timeout=1)
                return time.monotonic()
            except Exception:
                await asyncio.sleep(0.02)
    finally:
        await client.close()


async def _api_writable(api: Api) -> float:
    for attempt in range(600):
        reply = await api.post(CONFIGMAPS, configmap(f"after-{attempt}"))
        if reply.status == 201:
            return time.monotonic()
        assert reply.status == 503, reply.body
        await asyncio.sleep(0.05)
    raise AssertionError("the server never took a write again")


async def _first_event_named(api: Api, rv: str, prefix: str) -> float:
    async for event in api.watch(CONFIGMAPS, {"resourceVersion": rv, "timeoutSeconds": "120"}):
        if event["object"]["metadata"]["name"].startswith(prefix):
            return time.monotonic()
    raise AssertionError("the watch ended without the event")


@pytest.mark.timeout(180)
async def test_writes_and_watches_resume_within_two_seconds_of_etcd_coming_back(tmp_path: Path) -> None:
    etcd = ExternalEtcd(tmp_path / "etcd")
    etcd.start()
    server = KcpServer(tmp_path / "kcp", free_port(), ["--etcd-servers", etcd.url])
    try:
        server.start()
        async with aiohttp.ClientSession() as session:
            api = Api(server, session)
            rv = (await api.post(CONFIGMAPS, configmap("before"))).body["metadata"]["resourceVersion"]
            watched = asyncio.create_task(_first_event_named(api, rv, "after-"))
            etcd.stop()
            down = time.monotonic()
            while time.monotonic() - down < OUTAGE:  # the outage, during which every read fails as kube's 503
                reply = await api.get(f"{CONFIGMAPS}/before")
                assert reply.status == 503 and reply.body["kind"] == "Status", reply.body
                await asyncio.sleep(0.5)
            assert not watched.done()  # the watch rode out the outage

            etcd.start()  # returns once etcd accepts connections
            back = time.monotonic()
            etcd_ready, api_ready = await asyncio.gather(_etcd_writable(f"127.0.0.1:{etcd.port}"), _api_writable(api))
            watch_ready = await asyncio.wait_for(watched, 30)
    finally:
        server.stop()
        etcd.stop()
    timings: dict[str, Any] = {"etcd itself": etcd_ready - back, "writes": api_ready - back,
                               "watch": watch_ready - back}
    print("seconds after etcd listened:", {k: round(v, 2) for k, v in timings.items()})
    # etcd elects itself leader ~1-1.5 s after it listens; on a shared machine the server's own reconnect and
    # watch restart can take a few hundred ms more. The defect was a lag that grew with the outage (7 s after
    # 9 s away): the server must follow etcd's own first write closely, whatever the outage lasted.
    bound = max(RECOVERY, timings["etcd itself"] + 1.5)
    assert timings["writes"] < bound and timings["watch"] < bound, timings


async def test_external_etcd_over_mutual_tls_with_kube_apiservers_flags(tmp_path: Path) -> None:
    from kcp_apiserver.server.pki import ensure_etcd_credentials

    pki = ensure_etcd_credentials(tmp_path / "pki")
    etcd = ExternalEtcd(tmp_path / "etcd", tls=(pki.ca_cert, pki.server_cert, pki.server_key))
    etcd.start()
    server = KcpServer(tmp_path / "kcp", free_port(),
                       ["--etcd-servers", etcd.url, "--etcd-cafile", str(pki.ca_cert),
                        "--etcd-certfile", str(pki.client_cert), "--etcd-keyfile", str(pki.client_key)])
    try:
        server.start()
        async with aiohttp.ClientSession() as session:
            api = Api(server, session)
            assert (await api.post(CONFIGMAPS, configmap("over-tls"))).status == 201
            assert (await api.get(f"{CONFIGMAPS}/over-tls")).body["data"] == {"k": "v"}
        assert server.stop() == 0, server.log_tail()
    finally:
        server.stop()
        etcd.stop()
