"""kcp-sim-cluster's kube-controller-manager policies, judged with the real kubectl: a Node whose kubelet
never posted status turns Unknown after its startup grace period; ResourceQuotas are counted and enforced;
PodDisruptionBudgets count their pods; /openapi/v2 and single health checks are served as kube serves them.

Waits are on conditions (`kubectl wait`, or a polled state with a generous deadline), never fixed sleeps.
"""

from __future__ import annotations

import json
import time
from collections.abc import Callable, Iterator
from typing import Any, TypeVar

import aiohttp
import pytest
from sim_fixtures import get, kubectl

from api import Api
from kcp_process import KcpServer, free_port, run_kubectl, sim_cluster_command, sim_cluster_env

T = TypeVar("T")
PATIENCE = 60.0  # seconds: generous, the machine is shared

HAND_MADE_NODE = """
apiVersion: v1
kind: Node
metadata: {name: 127.0.0.1, labels: {kubernetes.io/hostname: 127.0.0.1}}
status:
  capacity: {memory: 1Gi}
"""


@pytest.fixture(scope="module")
def cluster(tmp_path_factory: pytest.TempPathFactory) -> Iterator[KcpServer]:
    server = KcpServer(tmp_path_factory.mktemp("sim-policy"), free_port(),
                       ["--nodes", "1", "--ready-delay", "0", "--node-startup-grace-period", "1"],
                       command=sim_cluster_command(), env=sim_cluster_env())
    server.start(timeout=120)
    try:
        yield server
    finally:
        assert server.stop() == 0, server.log_tail()


def eventually(check: Callable[[], T | None], what: str, timeout: float = PATIENCE) -> T:
    """Poll `check` until it returns something truthy; fail with `what` after `timeout`."""
    deadline = time.monotonic() + timeout
    while True:
        value = check()
        if value:
            return value
        if time.monotonic() > deadline:
            raise AssertionError(f"timed out waiting for {what}")
        time.sleep(0.2)


def conditions(obj: Any) -> dict[str, Any]:
    return {c["type"]: c for c in (obj.get("status") or {}).get("conditions") or []}


def test_a_node_that_never_posted_status_turns_unknown(cluster: KcpServer) -> None:
    kubectl(cluster, "create", "-f", "-", input_text=HAND_MADE_NODE)
    kubectl(cluster, "wait", "--for=condition=Ready=Unknown", "node/127.0.0.1", f"--timeout={int(PATIENCE)}s",
            timeout=PATIENCE + 10)
    node = get(cluster, "node", "127.0.0.1")
    found = conditions(node)
    assert node["status"]["capacity"] == {"memory": "1Gi"}  # a Node keeps the status it was created with
    assert set(found) == {"Ready", "MemoryPressure", "DiskPressure", "PIDPressure"}
    for cond in found.values():
        assert (cond["status"], cond["reason"], cond["message"]) == (
            "Unknown", "NodeStatusNeverUpdated", "Kubelet never posted node status.")
        assert cond["lastHeartbeatTime"] == node["metadata"]["creationTimestamp"]
    eventually(lambda: {(t["key"], t["effect"]) for t in get(cluster, "node", "127.0.0.1")["spec"].get("taints", [])}
               == {("node.kubernetes.io/unreachable", "NoSchedule"), ("node.kubernetes.io/unreachable", "NoExecute")},
               "the unreachable taints")
    described = kubectl(cluster, "describe", "node", "127.0.0.1")
    assert "Conditions:" in described and "NodeStatusNeverUpdated" in described
    # the simulated kubelet's own node posts its status and stays Ready
    assert conditions(get(cluster, "node", "sim-node-1"))["Ready"]["status"] == "True"


def pod(name: str, cpu: str) -> str:
    return f"""
apiVersion: v1
kind: Pod
metadata: {{name: {name}}}
spec:
  containers: [{{name: c, image: nginx, resources: {{requests: {{cpu: "{cpu}"}}, limits: {{memory: 512Mi}}}}}}]
"""


def refusal(server: KcpServer, *args: str, input_text: str | None = None) -> str:
    result = run_kubectl(server, *args, input_text=input_text, check=False)
    assert result.returncode != 0, result.stdout
    return result.stderr


def test_a_quota_counts_what_its_namespace_uses_and_refuses_what_exceeds_it(cluster: KcpServer) -> None:
    ns = "quotas"
    kubectl(cluster, "create", "namespace", ns)
    kubectl(cluster, "-n", ns, "create", "quota", "compute",
            "--hard=pods=2,requests.cpu=1,limits.memory=1Gi,count/deployments.apps=1")
    quota = eventually(lambda: (q := get(cluster, "-n", ns, "quota", "compute")).get("status", {}).get("used") and q,
                       "the quota controller to count")
    assert quota["status"] == {"hard": quota["spec"]["hard"], "used": {
        "pods": "0", "requests.cpu": "0", "limits.memory": "0", "count/deployments.apps": "0"}}

    kubectl(cluster, "-n", ns, "create", "-f", "-", input_text=pod("first", "500m"))
    used = get(cluster, "-n", ns, "quota", "compute")["status"]["used"]  # charged by admission, at once
    assert used == {"pods": "1", "requests.cpu": "500m", "limits.memory": "512Mi", "count/deployments.apps": "0"}
    assert 'pods "second" is forbidden: exceeded quota: compute, requested: requests.cpu=600m, used: ' \
           'requests.cpu=500m, limited: requests.cpu=1' in refusal(cluster, "-n", ns, "create", "-f", "-",
                                                                 input_text=pod("second", "600m"))
    assert 'pods "bare" is forbidden: failed quota: compute: must specify limits.memory,requests.cpu' in refusal(
        cluster, "-n", ns, "run", "bare", "--image", "nginx")
    kubectl(cluster, "-n", ns, "create", "deployment", "one", "--image", "nginx", "--replicas", "0")
    assert 'deployments.apps "two" is forbidden: exceeded quota: compute, requested: count/deployments.apps=1, ' \
           'used: count/deployments.apps=1, limited: count/deployments.apps=1' in refusal(
               cluster, "-n", ns, "create", "deployment", "two", "--image", "nginx")
    table = kubectl(cluster, "-n", ns, "get", "quota")
    assert "count/deployments.apps: 1/1, pods: 1/2, requests.cpu: 500m/1" in table and "limits.memory: 512Mi/1Gi" in table

    kubectl(cluster, "-n", ns, "delete", "pod", "first", "--grace-period=0", "--force")
    eventually(lambda: get(cluster, "-n", ns, "quota", "compute")["status"]["used"]["pods"] == "0",
               "the deleted pod to be given back")
    kubectl(cluster, "-n", ns, "create", "-f", "-", input_text=pod("second", "600m"))


def test_a_disruption_budget_counts_its_healthy_pods(cluster: KcpServer) -> None:
    ns = "budgets"
    kubectl(cluster, "create", "namespace", ns)
    kubectl(cluster, "-n", ns, "create", "deployment", "web", "--image", "nginx", "--replicas", "3")
    kubectl(cluster, "-n", ns, "rollout", "status", "deployment/web", f"--timeout={int(PATIENCE)}s",
            timeout=PATIENCE + 10)
    kubectl(cluster, "-n", ns, "create", "pdb", "min", "--selector", "app=web", "--min-available", "2")
    kubectl(cluster, "-n", ns, "create", "pdb", "none", "--selector", "app=web", "--max-unavailable", "0")

    def counted(name: str) -> Any:
        return eventually(lambda: (b := get(cluster, "-n", ns, "pdb", name))["status"].get("observedGeneration")
                          and b["status"]["currentHealthy"] == 3 and b, f"pdb {name} to count the pods")

    status = counted("min")["status"]
    assert (status["expectedPods"], status["desiredHealthy"], status["disruptionsAllowed"]) == (3, 2, 1)
    assert (conditions({"status": status})["DisruptionAllowed"]["status"],
            conditions({"status": status})["DisruptionAllowed"]["reason"]) == ("True", "SufficientPods")
    status = counted("none")["status"]  # maxUnavailable: expects the Deployment's replicas
    assert (status["expectedPods"], status["desiredHealthy"], status["disruptionsAllowed"]) == (3, 3, 0)
    assert (conditions({"status": status})["DisruptionAllowed"]["status"],
            conditions({"status": status})["DisruptionAllowed"]["reason"]) == ("False", "InsufficientPods")
    kubectl(cluster, "-n", ns, "scale", "deployment/web", "--replicas", "4")
    eventually(lambda: get(cluster, "-n", ns, "pdb", "min")["status"]["disruptionsAllowed"] == 2,
               "a fourth healthy pod to allow a second disruption")


def test_openapi_v2_describes_list_types_and_parameters_as_kube_does(cluster: KcpServer) -> None:
    """kube's run_swagger_tests greps these out of /openapi/v2."""
    doc = json.loads(kubectl(cluster, "get", "--raw", "/openapi/v2"))
    assert doc["definitions"]["io.k8s.api.core.v1.ServiceList"]["properties"]["items"]["description"] == \
        "List of services"
    listing = doc["paths"]["/api/v1/namespaces/{namespace}/services"]["get"]
    assert listing["description"] == "list or watch objects of kind Service"
    assert listing["responses"]["200"]["schema"] == {"$ref": "#/definitions/io.k8s.api.core.v1.ServiceList"}
    described = {p["name"]: p.get("description", "") for p in listing["parameters"]}
    assert described["labelSelector"] == "A selector to restrict the list of returned objects by their labels. " \
                                         "Defaults to everything."
    assert described["watch"].startswith("Watch for changes to the described resources")
    reading = doc["paths"]["/apis/apps/v1/namespaces/{namespace}/deployments/{name}"]["get"]
    assert reading["description"] == "read the specified Deployment"
    assert reading["responses"]["200"]["schema"] == {"$ref": "#/definitions/io.k8s.api.apps.v1.Deployment"}


async def test_a_single_health_check_is_forbidden_to_anonymous_users_as_in_kube(cluster: KcpServer) -> None:
    async with aiohttp.ClientSession() as session:
        anonymous, admin = Api(cluster, session, token=""), Api(cluster, session)
        assert ((await anonymous.get("/healthz")).status, (await admin.get("/healthz/ping")).status) == (200, 200)
        reply = await anonymous.get("/healthz/ping")
        assert (reply.status, reply.body["message"]) == (
            403, 'forbidden: User "system:anonymous" cannot get path "/healthz/ping"')
