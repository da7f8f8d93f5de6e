"""The agent's node registration and status reports, one reconcile at a time, against a fake nodes API fed
through a real informer cache."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from prometheus_client import CollectorRegistry

from kcp_sim_cluster.agent.nodes import AGENT_LABEL, LEASE_RENEW_SECONDS, STATUS_REPORT_SECONDS, NodeAgent, host_ip
from kcp_sim_cluster.agent.server import ServerFacts
from kcpcommon.informer_factory import SharedInformerFactory
from kcpcommon.keys import ObjectKey

CLUSTER = "cluster"


class FakeNodes:
    def __init__(self) -> None:
        self.created: list[dict[str, Any]] = []
        self.patched: list[tuple[str, dict[str, Any]]] = []

    async def create(self, body: Mapping[str, Any], **_: Any) -> Any:
        self.created.append(dict(body))
        return body

    async def patch(self, name: str, patch: Any, *, subresource: str | None = None, **_: Any) -> Any:
        assert subresource == "status"
        self.patched.append((name, patch))
        return patch


class FakeClients:
    name = CLUSTER
    server = "https://fake"

    def __init__(self) -> None:
        self.nodes = FakeNodes()

    def dynamic(self, cluster: str | None = None) -> Any:
        return self

    def resource(self, api_version: str, plural: str, *, namespaced: bool) -> Any:
        return self.nodes


def agent_for(*, leases: bool = True) -> tuple[NodeAgent, FakeNodes]:
    clients = FakeClients()
    agent = NodeAgent(clients, SharedInformerFactory(clients), indexes={"n-1": 1},  # type: ignore[arg-type]
                      capacity={"cpu": "4", "pods": "10"}, facts=ServerFacts("v1.20.2", serves_leases=leases),
                      registry=CollectorRegistry())
    agent.informer.replace([], "1")
    return agent, clients.nodes


KEY = ObjectKey(CLUSTER, "", "n-1")


async def test_a_missing_node_is_registered_then_reports_a_ready_status() -> None:
    agent, api = agent_for()
    assert await agent.reconcile(KEY) is None
    (node,) = api.created
    assert node["metadata"]["name"] == "n-1" and node["metadata"]["labels"][AGENT_LABEL] == "true"
    assert node["spec"]["podCIDR"]

    agent.informer.apply("ADDED", {**node, "metadata": {**node["metadata"], "uid": "u1", "resourceVersion": "2"}})
    result = await agent.reconcile(KEY)
    ((name, patch),) = api.patched
    status = patch["status"]
    assert name == "n-1" and not agent.registered()  # its Lease is not held yet
    agent.held["n-1"] = {"metadata": {"name": "n-1"}}
    assert agent.registered()
    assert status["capacity"] == status["allocatable"] and status["capacity"]["cpu"] == "4"
    assert status["nodeInfo"]["kubeletVersion"] == "v1.20.2"
    assert {"type": "InternalIP", "address": host_ip(1)} in status["addresses"]
    assert {c["type"]: c["status"] for c in status["conditions"]}["Ready"] == "True"
    assert result is not None and STATUS_REPORT_SECONDS - 5 < (result.requeue_after or 0) <= STATUS_REPORT_SECONDS

    agent.informer.apply("MODIFIED", {**node, "metadata": {**node["metadata"], "uid": "u1", "resourceVersion": "3"},
                                      "status": status})
    again = await agent.reconcile(KEY)  # nothing changed and no report is due: no write
    assert len(api.patched) == 1
    assert again is not None and (again.requeue_after or 0) < STATUS_REPORT_SECONDS  # due when the report is


async def test_without_leases_the_status_is_the_heartbeat() -> None:
    agent, _ = agent_for(leases=False)
    assert agent.report_every == LEASE_RENEW_SECONDS
