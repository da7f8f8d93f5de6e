"""Contention at full size (issue 29): 32 clients x 50 blind JSON patches of one object, every one answered
200 and every one in the final object, as kube-apiserver's GuaranteedUpdate retries until the deadline."""

from __future__ import annotations

from collections import Counter
from collections.abc import Iterator
from pathlib import Path

import aiohttp
import pytest
from test_contended_writes import blind_patches

from api import Api, configmap
from kcp_process import KcpServer, free_port

CLIENTS = 32
PATCHES = 50


@pytest.fixture
def kcp(tmp_path: Path) -> Iterator[KcpServer]:
    server = KcpServer(tmp_path / "kcp", free_port(), [])
    server.start()
    yield server
    assert server.stop() == 0, server.log_tail()


async def test_32_clients_x_50_blind_patches_of_one_object_never_conflict(kcp: KcpServer) -> None:
    collection = "/api/v1/namespaces/default/configmaps"
    async with aiohttp.ClientSession(connector=aiohttp.TCPConnector(limit=CLIENTS)) as session:
        api = Api(kcp, session)
        assert (await api.post(collection, configmap("contended", {}))).status == 201
        codes = await blind_patches(api, f"{collection}/contended", clients=CLIENTS, patches=PATCHES)
        assert codes == Counter({200: CLIENTS * PATCHES})
        got = await api.get(f"{collection}/contended")
    assert len(got.body["data"]) == 1 + CLIENTS * PATCHES  # each patch's key, and the one created with
