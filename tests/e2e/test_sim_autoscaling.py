"""kcp-sim-cluster's HorizontalPodAutoscalers, through kubectl: `kubectl autoscale deployment` makes one,
`get hpa` shows kube's columns (served as autoscaling/v2, and as v1 with its cpu target), load declared on
the pod template (`sim.kcp.io/cpu-usage`) makes the autoscaler scale the Deployment up to its maximum with
SuccessfulRescale events in `describe hpa`, and when the load goes it scales back down after the (here
shortened) stabilization window. A bad HPA is refused in kube's words.

Every wait polls a condition with a generous deadline, never a fixed sleep.
"""

from __future__ import annotations

import json
from collections.abc import Iterator

import pytest
from sim_fixtures import fetched_when, get, kubectl, running_sim

from kcp_process import KcpServer, run_kubectl

DEPLOYMENT = """
apiVersion: apps/v1
kind: Deployment
metadata: {name: web}
spec:
  replicas: 1
  selector: {matchLabels: {app: web}}
  template:
    metadata: {labels: {app: web}}
    spec: {containers: [{name: c, image: nginx, resources: {requests: {cpu: 100m}}}]}
"""

BAD_HPA = """
apiVersion: autoscaling/v2
kind: HorizontalPodAutoscaler
metadata: {name: bad}
spec:
  scaleTargetRef: {apiVersion: apps/v1, kind: Deployment, name: web}
  minReplicas: 3
  maxReplicas: 2
"""


@pytest.fixture(scope="module")
def cluster(tmp_path_factory: pytest.TempPathFactory) -> Iterator[KcpServer]:
    with running_sim(tmp_path_factory.mktemp("sim-autoscaling"), "--nodes", "1", "--ready-delay", "0",
                     "--horizontal-pod-autoscaler-sync-period", "0.5",
                     "--horizontal-pod-autoscaler-downscale-stabilization", "2") as server:
        yield server


def load(server: KcpServer, usage: str) -> None:
    patch = {"spec": {"template": {"metadata": {"annotations": {"sim.kcp.io/cpu-usage": usage}}}}}
    kubectl(server, "patch", "deployment", "web", "-p", json.dumps(patch))


def test_kubectl_autoscale_and_load_scale_a_deployment_up_and_down(cluster: KcpServer) -> None:
    kubectl(cluster, "apply", "-f", "-", input_text=DEPLOYMENT)
    # --cpu-percent: what kubectl 1.32 knows (1.35 also takes --cpu=50%)
    assert "autoscaled" in kubectl(cluster, "autoscale", "deployment", "web", "--min=1", "--max=4", "--cpu-percent=50")

    idle = fetched_when(lambda: kubectl(cluster, "get", "hpa", "web"), lambda out: "cpu: 10%/50%" in out,
                        "the idle pod's usage in TARGETS")
    header, row = idle.splitlines()[:2]
    assert header.split() == ["NAME", "REFERENCE", "TARGETS", "MINPODS", "MAXPODS", "REPLICAS", "AGE"]
    assert row.split()[:7] == ["web", "Deployment/web", "cpu:", "10%/50%", "1", "4", "1"]
    v1 = get(cluster, "horizontalpodautoscalers.v1.autoscaling", "web")
    assert v1["apiVersion"] == "autoscaling/v1" and v1["spec"]["targetCPUUtilizationPercentage"] == 50

    load(cluster, "100%")
    fetched_when(lambda: get(cluster, "deployment", "web"), lambda d: d["spec"]["replicas"] == 4,
                 "the autoscaler to scale the Deployment to its maximum")
    hpa = fetched_when(lambda: get(cluster, "hpa", "web"),
                       lambda h: (h["status"].get("currentReplicas"), h["status"].get("desiredReplicas")) == (4, 4),
                       "the HPA's status to count 4 replicas")
    assert hpa["status"]["lastScaleTime"]
    conditions = {c["type"]: c for c in hpa["status"]["conditions"]}
    assert conditions["ScalingActive"]["reason"] == "ValidMetricFound"
    described = fetched_when(lambda: kubectl(cluster, "describe", "hpa", "web"),
                             lambda out: "New size: 4" in out, "the last rescale in describe's events")
    assert "SuccessfulRescale" in described
    assert "reason: cpu resource utilization (percentage of request) above target" in described
    assert "horizontal-pod-autoscaler" in described

    load(cluster, "1%")
    fetched_when(lambda: get(cluster, "deployment", "web"), lambda d: d["spec"]["replicas"] == 1,
                 "the autoscaler to scale back down once the stabilization window passed")
    assert "All metrics below target" in fetched_when(
        lambda: kubectl(cluster, "describe", "hpa", "web"), lambda out: "New size: 1" in out, "the scale-down event")


def test_an_invalid_hpa_is_refused_in_kubes_words(cluster: KcpServer) -> None:
    refused = run_kubectl(cluster, "create", "-f", "-", input_text=BAD_HPA, check=False)
    assert refused.returncode != 0
    assert 'The HorizontalPodAutoscaler "bad" is invalid' in refused.stderr
    assert "spec.maxReplicas: Invalid value: 2: must be greater than or equal to `minReplicas`" in refused.stderr

