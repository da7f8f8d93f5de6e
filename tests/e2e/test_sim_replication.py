"""kcp-sim-cluster serves ReplicationControllers and PodTemplates as kube does: `kubectl` creates an RC
(selector and labels defaulted from its template), its replication manager makes pods it owns and reports
their status, `kubectl scale rc` changes the count, `get all` lists it, and a PodTemplate is stored.

Every wait polls a condition with a generous deadline, never a fixed sleep.
"""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import pytest
from sim_fixtures import fetched_when, get, kubectl, running_sim

from kcp_process import KcpServer, run_kubectl

RC = """
apiVersion: v1
kind: ReplicationController
metadata: {name: frontend}
spec:
  replicas: 2
  template:
    metadata: {labels: {app: frontend}}
    spec: {containers: [{name: c, image: nginx}]}
"""

POD_TEMPLATE = """
apiVersion: v1
kind: PodTemplate
metadata: {name: nginx}
template:
  metadata: {labels: {app: web}}
  spec: {containers: [{name: c, image: nginx}]}
"""


@pytest.fixture(scope="module")
def cluster(tmp_path_factory: pytest.TempPathFactory) -> Iterator[KcpServer]:
    with running_sim(tmp_path_factory.mktemp("sim-replication"), "--nodes", "1", "--ready-delay", "0") as server:
        yield server


def owned_pods(server: KcpServer, rc: Any) -> list[Any]:
    return [p for p in get(server, "pods", "-l", "app=frontend")["items"]
            if any(ref.get("uid") == rc["metadata"]["uid"] and ref.get("controller")
                   for ref in p["metadata"].get("ownerReferences") or [])]


def test_replication_controller_makes_its_pods_and_scales(cluster: KcpServer) -> None:
    kubectl(cluster, "apply", "-f", "-", input_text=RC)
    rc = get(cluster, "rc", "frontend")
    assert rc["spec"]["selector"] == {"app": "frontend"}  # defaulted from the template's labels
    assert rc["metadata"]["labels"] == {"app": "frontend"}

    rc = fetched_when(lambda: get(cluster, "replicationcontroller", "frontend"),
                      lambda o: (o.get("status") or {}).get("readyReplicas") == 2, "2 ready replicas")
    assert rc["status"]["replicas"] == 2
    assert rc["status"]["fullyLabeledReplicas"] == 2
    assert rc["status"]["availableReplicas"] == 2
    assert rc["status"]["observedGeneration"] == rc["metadata"]["generation"]
    pods = owned_pods(cluster, rc)
    assert len(pods) == 2
    assert all(p["metadata"]["name"].startswith("frontend-") for p in pods)
    assert "replicationcontroller/frontend" in kubectl(cluster, "get", "all")

    kubectl(cluster, "scale", "rc", "frontend", "--replicas", "3")
    fetched_when(lambda: owned_pods(cluster, rc), lambda p: len(p) == 3, "3 pods after `kubectl scale rc`")


def test_replication_controller_without_matching_selector_is_refused(cluster: KcpServer) -> None:
    bad = RC.replace("name: frontend}", "name: bad}").replace("replicas: 2", "replicas: 2\n  selector: {app: other}")
    result = run_kubectl(cluster, "create", "-f", "-", input_text=bad, check=False)
    assert result.returncode != 0
    assert "`selector` does not match template `labels`" in result.stderr


def test_pod_template_is_stored(cluster: KcpServer) -> None:
    kubectl(cluster, "create", "-f", "-", input_text=POD_TEMPLATE)
    stored = get(cluster, "podtemplate", "nginx")
    assert stored["template"]["metadata"]["labels"] == {"app": "web"}
    assert "nginx" in kubectl(cluster, "get", "podtemplates")
