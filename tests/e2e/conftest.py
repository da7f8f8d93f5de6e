"""One real kcp-apiserver per test session; tests isolate themselves by namespace or logical cluster."""

from __future__ import annotations

import uuid
from collections.abc import Iterator

import pytest

from kcp_process import KcpServer, free_port, kubectl_1_35


@pytest.fixture(scope="session")
def kcp(tmp_path_factory: pytest.TempPathFactory) -> Iterator[KcpServer]:
    server = KcpServer(tmp_path_factory.mktemp("kcp"), free_port(),
                       ["--watch-bookmark-interval", "1", "--compaction-interval", "0", "--watch-cache-size", "300"])
    server.start()
    yield server
    assert server.stop() == 0, server.log_tail()


@pytest.fixture
def unique() -> str:
    return uuid.uuid4().hex[:8]


@pytest.fixture
async def api(kcp: KcpServer):  # type: ignore[no-untyped-def]
    import aiohttp

    from api import Api

    async with aiohttp.ClientSession() as session:
        yield Api(kcp, session)


@pytest.fixture
async def namespace(api, unique: str):  # type: ignore[no-untyped-def]
    """A fresh namespace in the admin logical cluster."""
    name = f"ns-{unique}"
    reply = await api.post("/api/v1/namespaces", {"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": name}})
    assert reply.status == 201, reply.body
    return name


@pytest.fixture(params=["1.32", "1.35"])
def kubectl_version(request: pytest.FixtureRequest, monkeypatch: pytest.MonkeyPatch) -> str:
    """Runs a test once per supported kubectl: the one on PATH (1.32), then 1.35 (`make tools`, $KUBECTL_135).

    `run_kubectl` and `kubectl_binary` honour $KUBECTL, which this sets for the test."""
    if request.param == "1.35":
        monkeypatch.setenv("KUBECTL", kubectl_1_35())
    return str(request.param)
