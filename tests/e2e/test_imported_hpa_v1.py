"""kcp serves an imported HorizontalPodAutoscaler at autoscaling/v1 as well as v2, as kube does (issues 21
and 28): real kcp, a kcp-sim-cluster attached as a SyncTarget by `python -m kcp_cluster_controller` (push
mode), which imports the HPA type at v2, and real kubectl, whose `kubectl autoscale` posts a v1 HPA."""

from __future__ import annotations

import json
import urllib.error
import urllib.request
from collections.abc import Iterator
from dataclasses import dataclass
from typing import Any

import pytest
import yaml
from daemon_process import ClusterControllerProcess
from syncer_fixtures import eventually, sim_cluster

from kcp_process import KcpServer, free_port, kubectl_binary, run_kubectl
from kcpsyncer import downstream_namespace

HPAS = "/apis/autoscaling/{version}/namespaces/default/horizontalpodautoscalers"
IMPORTED = ["deployments.apps", "horizontalpodautoscalers.autoscaling"]


@dataclass
class Env:
    kcp: KcpServer
    sim: KcpServer


def get(server: KcpServer, path: str) -> tuple[int, Any]:
    req = urllib.request.Request(server.url + path, headers={"Authorization": f"Bearer {server.token}",
                                                              "Accept": "application/json"})
    try:
        with urllib.request.urlopen(req, context=server.ssl_context(), timeout=30) as resp:
            return resp.status, json.loads(resp.read())
    except urllib.error.HTTPError as exc:
        return exc.code, None


@pytest.fixture(scope="module")
def env(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Env]:
    root = tmp_path_factory.mktemp("hpa-v1")
    kcp, sim = KcpServer(root / "kcp", free_port()), sim_cluster(root / "sim")
    controller = ClusterControllerProcess(kcp, root / "controller.log", [
        "--syncer-mode", "push", "--no-leader-elect", "--discovery-interval", "5"])
    started: list[KcpServer] = []
    try:
        for server in (kcp, sim):
            server.start()
            started.append(server)
        controller.start()
        eventually(lambda: get(kcp, "/apis/workload.kcp.io/v1alpha1/synctargets")[0] == 200, "SyncTargets served")
        run_kubectl(kcp, "apply", "-f", "-", input_text=yaml.safe_dump({
            "apiVersion": "workload.kcp.io/v1alpha1", "kind": "SyncTarget", "metadata": {"name": "sim"},
            "spec": {"kubeconfig": sim.kubeconfig.read_text(), "resources": IMPORTED}}))
        eventually(lambda: get(kcp, HPAS.format(version="v2"))[0] == 200, "HPAs imported into kcp", timeout=60)
        yield Env(kcp, sim)
        assert controller.stop() == 0, controller.log_tail(60)
    finally:
        controller.stop()
        for server in started:
            server.stop()


def test_kubectl_autoscale_creates_a_v1_hpa_that_is_read_at_v2_too(env: Env, kubectl_version: str) -> None:
    assert f"v{kubectl_version}." in json.loads(run_kubectl(env.kcp, "version", "--client", "-o", "json").stdout)[
        "clientVersion"]["gitVersion"], kubectl_binary()
    versions = run_kubectl(env.kcp, "api-versions").stdout.split()
    assert "autoscaling/v1" in versions and "autoscaling/v2" in versions
    x = f"x-{kubectl_version.replace('.', '-')}"
    run_kubectl(env.kcp, "create", "deployment", x, "--image=nginx:1.27", "--replicas=2")
    out = run_kubectl(env.kcp, "autoscale", f"deployment/{x}", "--max=3", "--cpu-percent=60")
    assert f"horizontalpodautoscaler.autoscaling/{x} autoscaled" in out.stdout, out.stdout + out.stderr
    # the full resource name: kubectl 1.32 maps the short name with a version (hpa.v1.autoscaling) to v2
    v1 = json.loads(run_kubectl(env.kcp, "get", "horizontalpodautoscalers.v1.autoscaling", x, "-o", "json").stdout)
    assert v1["apiVersion"] == "autoscaling/v1", v1
    assert v1["spec"]["targetCPUUtilizationPercentage"] == 60 and v1["spec"]["maxReplicas"] == 3
    assert v1["spec"]["scaleTargetRef"] == {"apiVersion": "apps/v1", "kind": "Deployment", "name": x}
    v2 = json.loads(run_kubectl(env.kcp, "get", "horizontalpodautoscalers.v2.autoscaling", x, "-o", "json").stdout)
    assert v2["apiVersion"] == "autoscaling/v2" and v2["metadata"]["uid"] == v1["metadata"]["uid"]
    assert v2["spec"]["metrics"] == [{"type": "Resource", "resource": {
        "name": "cpu", "target": {"type": "Utilization", "averageUtilization": 60}}}]
    # the plain name is v2, kube's preferred version
    assert json.loads(run_kubectl(env.kcp, "get", "hpa", x, "-o", "json").stdout)["apiVersion"] == "autoscaling/v2"
    assert run_kubectl(env.kcp, "get", "deployment", x, "-o", "jsonpath={.spec.replicas}").stdout == "2"


def test_kubectl_explain_describes_v1(env: Env) -> None:
    out = run_kubectl(env.kcp, "explain", "horizontalpodautoscalers.spec.targetCPUUtilizationPercentage",
                      "--api-version=autoscaling/v1").stdout
    assert "targetCPUUtilizationPercentage" in out and "<integer>" in out, out


def test_a_v1_write_kube_refuses_is_refused(env: Env) -> None:
    bad = yaml.safe_dump({"apiVersion": "autoscaling/v1", "kind": "HorizontalPodAutoscaler", "metadata": {"name": "zero"},
                          "spec": {"scaleTargetRef": {"apiVersion": "apps/v1", "kind": "Deployment", "name": "zero"},
                                   "maxReplicas": 3, "targetCPUUtilizationPercentage": 0}})
    refused = run_kubectl(env.kcp, "create", "-f", "-", input_text=bad, check=False)
    assert refused.returncode != 0, refused.stdout
    assert "spec.metrics[0].resource.target.averageUtilization: Invalid value: 0: must be greater than 0" in \
        refused.stderr, refused.stderr


def test_a_v1_hpa_syncs_to_the_physical_cluster(env: Env) -> None:
    run_kubectl(env.kcp, "create", "deployment", "z", "--image=nginx:1.27")
    run_kubectl(env.kcp, "autoscale", "deployment/z", "--max=4", "--cpu-percent=55")
    run_kubectl(env.kcp, "label", "hpa", "z", "workloads.kcp.io/cluster=sim")
    path = f"/apis/autoscaling/v1/namespaces/{downstream_namespace('admin', 'default')}/horizontalpodautoscalers/z"
    eventually(lambda: get(env.sim, path)[0] == 200, "the HPA synced to the sim", timeout=60)
    assert get(env.sim, path)[1]["spec"]["targetCPUUtilizationPercentage"] == 55
