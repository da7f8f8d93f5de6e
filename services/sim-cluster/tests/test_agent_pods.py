"""The agent's pod lifecycle, one reconcile at a time, against a fake pods API fed through a real informer cache:
what it writes for a pod bound to its node, and what it leaves alone."""

from __future__ import annotations

import ipaddress
import time
from collections.abc import Mapping
from typing import Any

import pytest
from prometheus_client import CollectorRegistry

from kcp_sim_cluster.agent.nodes import host_ip, pod_cidr
from kcp_sim_cluster.agent.pods import PodAgent
from kcpcommon.controller import Result
from kcpcommon.informer_factory import SharedInformerFactory
from kcpcommon.keys import ObjectKey

CLUSTER = "cluster"
NODE = "n-1"


class FakePods:
    """What PodAgent calls on the pods resource, recorded."""

    def __init__(self) -> None:
        self.replaced: list[dict[str, Any]] = []
        self.deleted: list[tuple[str, str | None, dict[str, Any]]] = []

    async def replace(self, body: Mapping[str, Any], *, subresource: str | None = None, **_: Any) -> Any:
        assert subresource == "status"
        self.replaced.append(dict(body))
        return body

    async def delete(self, name: str, *, namespace: str | None = None, **options: Any) -> Any:
        self.deleted.append((name, namespace, options))
        return {}


class FakeClients:
    name = CLUSTER
    server = "https://fake"

    def __init__(self) -> None:
        self.pods = FakePods()

    def dynamic(self, cluster: str | None = None) -> Any:
        return self

    def resource(self, api_version: str, plural: str, *, namespaced: bool) -> Any:
        return self.pods


def pod(name: str = "p", *, node: str = NODE, annotations: dict[str, str] | None = None,
        status: dict[str, Any] | None = None, **spec: Any) -> dict[str, Any]:
    return {"apiVersion": "v1", "kind": "Pod",
            "metadata": {"name": name, "namespace": "default", "uid": f"uid-{name}", "resourceVersion": "5",
                         "annotations": annotations or {}},
            "spec": {"nodeName": node, "containers": [{"name": "c", "image": "nginx"}], **spec},
            "status": status or {"phase": "Pending"}}


class Events:
    def __init__(self) -> None:
        self.recorded: list[tuple[str, str, str | None]] = []

    def record(self, obj: Mapping[str, Any], type_: str, reason: str, message: str, *, cluster: str | None = None,
               component: str | None = None, host: str | None = None) -> None:
        self.recorded.append((type_, reason, host))


def agent_with(*pods: dict[str, Any], ready_delay: float = 1.0) -> tuple[PodAgent, FakePods]:
    clients = FakeClients()
    agent = PodAgent(clients, SharedInformerFactory(clients), indexes={NODE: 1}, ready_delay=ready_delay,  # type: ignore[arg-type]
                     registry=CollectorRegistry(), recorder=Events())
    agent.informer.replace(list(pods), "5")
    return agent, clients.pods


def key(name: str = "p") -> ObjectKey:
    return ObjectKey(CLUSTER, "default", name)


async def test_a_bound_pod_starts_running_on_its_nodes_addresses_and_turns_ready_after_the_delay() -> None:
    agent, api = agent_with(pod())
    result = await agent.reconcile(key())
    (written,) = api.replaced
    status = written["status"]
    assert status["phase"] == "Running" and status["hostIP"] == host_ip(1)
    assert ipaddress.ip_address(status["podIP"]) in ipaddress.ip_network(pod_cidr(1))
    assert written["metadata"]["resourceVersion"] == "5"  # a stale cache makes the PUT a 409, retried
    assert status["containerStatuses"][0]["ready"] is False
    assert isinstance(result, Result) and 0 < (result.requeue_after or 0) <= 1.0
    assert isinstance(agent.recorder, Events)
    assert agent.recorder.recorded == [("Normal", "Pulled", NODE), ("Normal", "Created", NODE),
                                       ("Normal", "Started", NODE)]

    agent.informer.apply("MODIFIED", {**written, "metadata": {**written["metadata"], "resourceVersion": "6"}})
    agent.started["uid-p"] = time.time() - 2  # the delay has passed
    await agent.reconcile(key())
    ready = api.replaced[-1]["status"]
    assert ready["containerStatuses"][0]["ready"] is True
    assert {c["type"]: c["status"] for c in ready["conditions"]}["Ready"] == "True"


async def test_pods_of_other_nodes_are_left_alone() -> None:
    agent, api = agent_with(pod(node="someone-elses"), pod("unbound", node=""))
    assert await agent.reconcile(key()) is None
    assert await agent.reconcile(key("unbound")) is None
    assert api.replaced == [] and api.deleted == []


async def test_a_crash_annotated_pod_waits_in_crash_loop_back_off() -> None:
    agent, api = agent_with(pod(annotations={"sim.kcp.io/crash": "true"}), ready_delay=0)
    await agent.reconcile(key())
    (container,) = api.replaced[-1]["status"]["containerStatuses"]
    assert container["state"]["waiting"]["reason"] == "CrashLoopBackOff" and container["restartCount"] == 1

    agent.informer.apply("MODIFIED", api.replaced[-1])
    agent.started["uid-p"] = time.time() - 11  # the first back-off (10 s) is over: it crashes again
    await agent.reconcile(key())
    assert api.replaced[-1]["status"]["containerStatuses"][0]["restartCount"] == 2
    assert isinstance(agent.recorder, Events) and agent.recorder.recorded[-1] == ("Warning", "BackOff", NODE)


async def test_a_pod_that_does_not_restart_always_completes() -> None:
    running = pod(restartPolicy="Never", status={"phase": "Running", "startTime": "2020-01-01T00:00:00Z",
                                                 "containerStatuses": [{"name": "c", "ready": True}]})
    agent, api = agent_with(running, ready_delay=0)
    await agent.reconcile(key())
    status = api.replaced[-1]["status"]
    assert status["phase"] == "Succeeded"
    assert status["containerStatuses"][0]["state"]["terminated"]["reason"] == "Completed"


@pytest.mark.parametrize(("grace", "deletes"), [(30, True), (0, False)])
async def test_a_deleting_pod_gets_the_kubelets_final_delete_once(grace: int, deletes: bool) -> None:
    deleting = pod(status={"phase": "Running", "startTime": "2020-01-01T00:00:00Z"})
    deleting["metadata"].update({"deletionTimestamp": "2020-01-01T00:01:00Z", "deletionGracePeriodSeconds": grace})
    agent, api = agent_with(deleting)
    await agent.reconcile(key())
    expected = [("p", "default", {"grace_period_seconds": 0, "preconditions": {"uid": "uid-p"}})] if deletes else []
    assert api.deleted == expected
    assert api.replaced == []
