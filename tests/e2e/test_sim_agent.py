"""`kcp-sim-cluster agent` against a kcp-sim-cluster that has no nodes of its own (`--nodes 0`), as two
processes that meet only through the Kubernetes API: the agent's Nodes register Ready with Leases that
renew, the server's scheduler binds a Deployment's pods to them and the agent runs those pods (Ready,
then gone on scale to zero), a crash annotation shows CrashLoopBackOff, a Job completes, and SIGTERM
stops the agent at once.

Every wait is on a condition (`kubectl rollout status`, `kubectl wait`, or a polled state with a generous
deadline), never a fixed sleep.
"""

from __future__ import annotations

import ipaddress
import json
import subprocess
import time
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, TypeVar

import pytest
from daemon_process import DaemonProcess
from sim_fixtures import get, kubectl

from kcp_process import KcpServer, free_port, sim_cluster_command, sim_cluster_env

T = TypeVar("T")
PATIENCE = 60.0  # seconds: generous, the machine is shared
NODES = 3
LEASE_SECONDS = 8  # renewed every 2 s (kube's default 40 s: every 10 s)
PREFIX = "agent-node-"
STOP_WITHIN = 10.0  # seconds from SIGTERM to exit: "not stalled", not a performance bound


@dataclass
class AgentProcess(DaemonProcess):
    """`python -m kcp_sim_cluster agent` against one server's kubeconfig."""

    kubeconfig: Path
    log_path: Path
    args: list[str] = field(default_factory=list)
    health_port: int = field(default_factory=free_port)
    process: subprocess.Popen[bytes] | None = None
    name = "node agent"

    def start(self) -> AgentProcess:
        self.launch("kcp_sim_cluster", ["agent", "--kubeconfig", str(self.kubeconfig), *self.args], sim_cluster_env())
        return self


def eventually(check: Callable[[], T | None], what: str, timeout: float = PATIENCE) -> T:
    deadline = time.monotonic() + timeout
    while True:
        value = check()
        if value:
            return value
        if time.monotonic() > deadline:
            raise AssertionError(f"timed out waiting for {what}")
        time.sleep(0.2)


def condition(obj: Any, type_: str) -> Any:
    return next((c for c in (obj.get("status") or {}).get("conditions") or [] if c["type"] == type_), None)


def agent_nodes(server: KcpServer, prefix: str = PREFIX) -> list[Any]:
    return [n for n in get(server, "nodes")["items"] if n["metadata"]["name"].startswith(prefix)]


@pytest.fixture(scope="module")
def cluster(tmp_path_factory: pytest.TempPathFactory) -> Iterator[KcpServer]:
    server = KcpServer(tmp_path_factory.mktemp("sim-agent"), free_port(), ["--nodes", "0", "--ready-delay", "0.5"],
                       command=sim_cluster_command(), env=sim_cluster_env())
    server.start(timeout=120)
    try:
        yield server
    finally:
        assert server.stop() == 0, server.log_tail()


@pytest.fixture(scope="module")
def agent(cluster: KcpServer) -> Iterator[AgentProcess]:
    process = AgentProcess(cluster.kubeconfig, cluster.root / "agent.log",
                           ["--nodes", str(NODES), "--node-name-prefix", PREFIX, "--ready-delay", "0.5",
                            "--node-lease-duration-seconds", str(LEASE_SECONDS),
                            "--node-capacity", "cpu=8,memory=32Gi,pods=50"]).start()
    try:
        eventually(process.ready, "the agent's /readyz (informers synced, every node registered)")
        yield process
    finally:
        assert process.stop() == 0, process.log_tail()


def test_the_agents_nodes_register_ready_as_the_servers_release_with_leases_that_renew(
        cluster: KcpServer, agent: AgentProcess) -> None:
    nodes = {n["metadata"]["name"]: n for n in agent_nodes(cluster)}
    assert sorted(nodes) == [f"{PREFIX}{i}" for i in range(1, NODES + 1)]
    server_minor = json.loads(kubectl(cluster, "get", "--raw", "/version"))["minor"].rstrip("+")
    for node in nodes.values():
        status = node["status"]
        assert condition(node, "Ready")["status"] == "True", status
        assert status["capacity"]["cpu"] == "8" and status["allocatable"]["pods"] == "50"
        assert {a["type"] for a in status["addresses"]} == {"InternalIP", "Hostname"}
        assert status["nodeInfo"]["kubeletVersion"].split(".")[1] == server_minor
        assert node["spec"]["podCIDR"]
    leases = {item["metadata"]["name"]: item for item in get(cluster, "-n", "kube-node-lease", "leases")["items"]}
    assert set(nodes) <= set(leases)
    first = leases[f"{PREFIX}1"]
    assert first["spec"]["holderIdentity"] == f"{PREFIX}1"
    assert first["spec"]["leaseDurationSeconds"] == LEASE_SECONDS
    assert first["metadata"]["ownerReferences"][0]["uid"] == nodes[f"{PREFIX}1"]["metadata"]["uid"]
    eventually(lambda: get(cluster, "-n", "kube-node-lease", "lease", f"{PREFIX}1")["spec"]["renewTime"]
               != first["spec"]["renewTime"], "the node lease renewed (every quarter of its duration)", timeout=40)


def test_a_deployments_pods_run_ready_on_the_agents_nodes_and_go_when_scaled_to_zero(
        cluster: KcpServer, agent: AgentProcess) -> None:
    kubectl(cluster, "create", "namespace", "web")
    kubectl(cluster, "-n", "web", "create", "deployment", "web", "--image", "nginx:1.25", "--replicas", "5")
    kubectl(cluster, "-n", "web", "rollout", "status", "deployment/web", "--timeout", f"{int(PATIENCE)}s",
            timeout=PATIENCE + 10)
    nodes = {n["metadata"]["name"]: n for n in agent_nodes(cluster)}
    pods = get(cluster, "-n", "web", "pods", "-l", "app=web")["items"]
    assert len(pods) == 5
    ips = set()
    for pod in pods:
        status, node = pod["status"], nodes[pod["spec"]["nodeName"]]
        internal_ip = next(a["address"] for a in node["status"]["addresses"] if a["type"] == "InternalIP")
        assert status["phase"] == "Running"
        assert status["hostIP"] == internal_ip  # written by the agent, not by the server's in-process kubelet
        assert ipaddress.ip_address(status["podIP"]) in ipaddress.ip_network(node["spec"]["podCIDR"])
        ips.add(status["podIP"])
        assert status["startTime"]
        (container,) = status["containerStatuses"]
        assert (container["ready"], container["started"], container["restartCount"]) == (True, True, 0)
        assert container["state"]["running"]["startedAt"] and "@sha256:" in container["imageID"]
        for type_ in ("PodScheduled", "Initialized", "ContainersReady", "Ready"):
            assert condition(pod, type_)["status"] == "True", (type_, status["conditions"])
    assert len(ips) == 5

    def started_events() -> Any:
        events = [e for e in get(cluster, "-n", "web", "events")["items"] if e["reason"] == "Started"]
        return events if len(events) >= 5 else None

    for event in eventually(started_events, "the kubelet's Started events"):
        assert event["source"]["component"] == "kubelet" and event["source"]["host"] in nodes

    kubectl(cluster, "-n", "web", "scale", "deployment/web", "--replicas", "0")
    kubectl(cluster, "-n", "web", "wait", "--for=delete", "pods", "-l", "app=web", f"--timeout={int(PATIENCE)}s",
            timeout=PATIENCE + 10)
    assert get(cluster, "-n", "web", "pods")["items"] == []
    assert agent.healthy() and 'controller="sim-agent-pods"' in agent.metrics()


def test_a_deleted_node_registers_again(cluster: KcpServer, agent: AgentProcess) -> None:
    name = f"{PREFIX}{NODES}"
    old_uid = get(cluster, "node", name)["metadata"]["uid"]
    kubectl(cluster, "delete", "node", name)

    def back() -> Any:
        node = next((n for n in agent_nodes(cluster) if n["metadata"]["name"] == name), None)
        fresh = node is not None and node["metadata"]["uid"] != old_uid
        return node if fresh and (condition(node, "Ready") or {}).get("status") == "True" else None

    eventually(back, f"{name} registered again, Ready")


PINNED = """
apiVersion: v1
kind: Pod
metadata: {name: pinned, namespace: sick}
spec: {nodeName: agent-node-2, containers: [{name: c, image: nginx}]}
"""


def test_a_not_ready_annotation_plays_a_sick_kubelet_until_removed(cluster: KcpServer, agent: AgentProcess) -> None:
    kubectl(cluster, "create", "namespace", "sick")
    kubectl(cluster, "apply", "-f", "-", input_text=PINNED)
    kubectl(cluster, "-n", "sick", "wait", "--for=condition=Ready", "pod/pinned", f"--timeout={int(PATIENCE)}s",
            timeout=PATIENCE + 10)

    def ready(*what: str) -> str:
        return str((condition(get(cluster, *what), "Ready") or {}).get("status"))

    kubectl(cluster, "annotate", "node", "agent-node-2", "sim.kcp.io/not-ready=true")
    eventually(lambda: ready("node", "agent-node-2") == "False", "the node NotReady")
    eventually(lambda: ready("-n", "sick", "pod", "pinned") == "False", "its pod unready (the node controller's)")
    kubectl(cluster, "annotate", "node", "agent-node-2", "sim.kcp.io/not-ready-")
    eventually(lambda: ready("node", "agent-node-2") == "True", "the node Ready again")
    eventually(lambda: ready("-n", "sick", "pod", "pinned") == "True", "its pod Ready again")


CRASHING = """
apiVersion: v1
kind: Pod
metadata: {name: crasher, namespace: crash, annotations: {sim.kcp.io/crash: "true"}}
spec: {containers: [{name: c, image: busybox}]}
"""


def test_a_crash_annotated_pod_shows_crash_loop_back_off(cluster: KcpServer, agent: AgentProcess) -> None:
    kubectl(cluster, "create", "namespace", "crash")
    kubectl(cluster, "apply", "-f", "-", input_text=CRASHING)

    def crashing() -> Any:
        pod = get(cluster, "-n", "crash", "pod", "crasher")
        statuses = pod["status"].get("containerStatuses") or []
        return pod if statuses and "waiting" in statuses[0]["state"] else None

    pod = eventually(crashing, "the crasher's container waiting")
    (container,) = pod["status"]["containerStatuses"]
    assert container["state"]["waiting"]["reason"] == "CrashLoopBackOff"
    assert container["restartCount"] >= 1 and container["ready"] is False
    assert pod["spec"]["nodeName"].startswith(PREFIX)
    assert condition(pod, "Ready")["status"] == "False"


def test_a_jobs_pods_complete(cluster: KcpServer, agent: AgentProcess) -> None:
    kubectl(cluster, "create", "namespace", "batch")
    kubectl(cluster, "-n", "batch", "create", "job", "once", "--image", "busybox")
    kubectl(cluster, "-n", "batch", "wait", "--for=condition=Complete", "job/once", f"--timeout={int(PATIENCE)}s",
            timeout=PATIENCE + 10)
    (pod,) = get(cluster, "-n", "batch", "pods", "-l", "job-name=once")["items"]
    assert pod["status"]["phase"] == "Succeeded"
    assert pod["status"]["containerStatuses"][0]["state"]["terminated"]["reason"] == "Completed"


def test_sigterm_stops_the_agent_within_seconds_and_it_can_delete_its_nodes(cluster: KcpServer) -> None:
    prefix = "leaving-node-"
    process = AgentProcess(cluster.kubeconfig, cluster.root / "leaving-agent.log",
                           ["--nodes", "2", "--node-name-prefix", prefix, "--delete-nodes-on-exit"]).start()
    try:
        eventually(process.ready, "the second agent's /readyz")
        assert len(agent_nodes(cluster, prefix)) == 2
        assert process.process is not None
        process.process.terminate()
        assert process.process.wait(STOP_WITHIN) == 0, process.log_tail()
    finally:
        process.stop()
    assert agent_nodes(cluster, prefix) == []
