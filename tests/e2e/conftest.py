"""One real kcp-apiserver per test session (kcp_fixtures' `kcp`, shared with the libraries' suites); tests
isolate themselves by namespace or logical cluster."""

from __future__ import annotations

import pytest
from physical_fixtures import physical

from kcp_fixtures import kcp, unique
from kcp_process import KcpServer, kubectl_1_32, kubectl_1_35

# the fixtures shared with the libraries' suites, and the physical clusters' (sim, real kube), imported so that
# pytest finds them
__all__ = ["kcp", "physical", "unique"]


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
    """Runs a test once per supported kubectl: the machine's 1.32 (found on PATH even behind `make tools`' 1.35),
    then 1.35 (`make tools`, $KUBECTL_135).

    `run_kubectl` and `kubectl_binary` honour $KUBECTL, which this sets for the test."""
    if request.param == "1.35":
        monkeypatch.setenv("KUBECTL", kubectl_1_35())
    else:
        older = kubectl_1_32()
        if older is None:
            pytest.skip("no kubectl older than 1.35 on PATH (the machine's 1.32) nor $KUBECTL_132")
        monkeypatch.setenv("KUBECTL", older)
    return str(request.param)
