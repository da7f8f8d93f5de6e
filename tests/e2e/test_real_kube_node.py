"""The real kube 1.20 control plane with a node that runs containers (kube_fixtures' `kubelet_node`: kubelet on the
project's dockerd): a pod really runs, and the pull-mode syncer runs there as a pod from the image built from this
checkout, makes its SyncTarget Ready and syncs a Deployment whose pods are real containers too; and `helm install`
of deploy/helm there (the last test). One module, so that the session has one kubelet on its dockerd.

Marked real_kube (`make kube-e2e`); needs root for dockerd. Timings on the 2-core machine shared with other work
(images cached under .tools/docker-kubelet): the whole file about 2.5 min; control plane, dockerd and the node
Ready 27 s; a pod Running 3-5 s after it is created; the syncer's image rebuilt from the layer cache 3 s;
SyncTarget Ready through the syncer's pod and a Deployment's 2 real pods 2/2 in kcp 16-19 s; the chart installed
(`--wait`: every pod Ready), a SyncTarget Ready and a Deployment 2/2 through it 24-30 s, `helm uninstall --wait`
21-28 s. The first run also makes the base image (seconds from .tools/images) and builds the four images (pip,
about 2-3 minutes each); after a code change the images' last layers are rebuilt (the chart's test: 120 s).
`make kube-e2e` (this file and test_real_kube.py): 10 tests in 205 s cached, 281 s after a code change.
"""

from __future__ import annotations

import base64
import subprocess
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest
import yaml
from daemon_process import ClusterControllerProcess
from kube_fixtures import (
    BRIDGE_IP,
    NODE_NAME,
    PAUSE_IMAGE,
    BridgeRelay,
    KubeControlPlane,
    KubeletNode,
    kube,
    kubelet_node,
)
from syncer_fixtures import ASSIGNMENT_LABEL, Rest, eventually
from test_real_kube import ST_PATH, condition, logical_cluster

from kcp_process import REPO, KcpServer, free_port, run_kubectl
from kcpsyncer import downstream_namespace

pytestmark = pytest.mark.real_kube
__all__ = ["kube", "kubelet_node"]  # the fixtures, imported so that pytest finds them

PATIENCE = 180.0  # seconds: images start and the syncer comes up on two cores shared with other work
HELM_PATIENCE = 300.0  # seconds: three images start
SYNCER_IMAGE = "kcp-syncer:e2e"  # not `latest`: kube would pull it always, and no registry answers here
RELEASE, NAMESPACE, TAG = "kcp", "kcp", "e2e"
HELM = REPO / ".tools" / "bin" / "helm"


def pod(name: str, image: str) -> dict[str, Any]:
    return {"apiVersion": "v1", "kind": "Pod", "metadata": {"name": name},
            "spec": {"containers": [{"name": "main", "image": image}], "terminationGracePeriodSeconds": 1}}


def kube_chains() -> list[str]:
    rules = subprocess.run(["iptables-save"], capture_output=True, text=True).stdout
    return [line for line in rules.splitlines() if "KUBE-" in line]


def test_a_pod_runs_as_a_container_on_the_real_node(kube: KubeControlPlane, kubelet_node: KubeletNode) -> None:
    down = Rest(kube)  # type: ignore[arg-type]
    down.create("/api/v1/namespaces/default/pods", pod("real", PAUSE_IMAGE))
    try:
        running = eventually(lambda: (p := down.get("/api/v1/namespaces/default/pods/real"))["status"].get("phase")
                             == "Running" and p, "the pod Running on the real node", timeout=PATIENCE)
        assert running["spec"]["nodeName"] == NODE_NAME
        assert running["status"]["podIP"].startswith(BRIDGE_IP.rsplit(".", 1)[0] + "."), running["status"]
        containers = kubelet_node.docker("ps", "-q", "--filter", "label=io.kubernetes.pod.name=real",
                                         "--filter", "label=io.kubernetes.container.name=main").stdout.split()
        assert len(containers) == 1, "the kubelet ran the pod's container in dockerd"
        assert not kube_chains(), "the kubelet left the host's network rules alone"
    finally:
        down.delete("/api/v1/namespaces/default/pods/real")
    eventually(lambda: not kubelet_node.docker("ps", "-q", "--filter", "label=io.kubernetes.pod.name=real").stdout,
               "the pod's containers stopped", timeout=PATIENCE)


@dataclass
class PodPull:
    kcp: KcpServer
    kube: KubeControlPlane
    node: KubeletNode


@pytest.fixture
def pod_pull(kube: KubeControlPlane, kubelet_node: KubeletNode, tmp_path: Path) -> Iterator[PodPull]:
    """kcp (its certificate naming the bridge address, relayed there) and a `--syncer-mode pull` controller that
    installs SYNCER_IMAGE, built from this checkout into the node's dockerd."""
    kubelet_node.build("syncer", SYNCER_IMAGE)
    kcp = KcpServer(tmp_path / "kcp", free_port(), extra_args=["--external-hostname", f"127.0.0.1,{BRIDGE_IP}"])
    kcp.start()
    relay = BridgeRelay(kcp.port)
    controller = ClusterControllerProcess(kcp, tmp_path / "controller.log", [
        "--syncer-mode", "pull", "--no-leader-elect", "--heartbeat-interval", "2", "--syncer-image", SYNCER_IMAGE,
        "--syncer-kcp-server", relay.url])
    try:
        controller.start()
        yield PodPull(kcp, kube, kubelet_node)
        assert controller.stop() == 0, controller.log_tail(60)
    finally:
        controller.stop()
        relay.close()
        kcp.stop()


def bridged_kubeconfig(kube: KubeControlPlane) -> str:
    """The admin kubeconfig naming the kube-apiserver at the bridge address, where the syncer's pod reaches it."""
    config = yaml.safe_load(kube.kubeconfig.read_text())
    for cluster in config["clusters"]:
        cluster["cluster"]["server"] = cluster["cluster"]["server"].replace("127.0.0.1", BRIDGE_IP)
    return yaml.safe_dump(config)


def test_the_pull_mode_syncer_runs_as_a_pod_and_syncs_a_deployment_of_real_containers(pod_pull: PodPull) -> None:
    kubeconfig = logical_cluster(pod_pull.kcp, "pod-pull")
    target = {"apiVersion": "workload.kcp.io/v1alpha1", "kind": "SyncTarget", "metadata": {"name": "kube"},
              "spec": {"kubeconfig": bridged_kubeconfig(pod_pull.kube)}}
    run_kubectl(pod_pull.kcp, "apply", "-f", "-", input_text=yaml.safe_dump(target), kubeconfig=kubeconfig)
    up, down = Rest(pod_pull.kcp).at("pod-pull"), Rest(pod_pull.kube)  # type: ignore[arg-type]
    run_kubectl(pod_pull.kcp, "wait", "synctarget/kube", "--for", "condition=Ready", f"--timeout={int(PATIENCE)}s",
                kubeconfig=kubeconfig, timeout=PATIENCE + 10)
    # Ready follows the pod's heartbeat; SyncerReady follows the installed Deployment's available replicas, which
    # kube's deployment controller may report a reconcile later
    eventually(lambda: condition(up, "kube", "SyncerReady").get("reason") == "SyncerInstalled",
               "the installed syncer Deployment available", timeout=PATIENCE)
    assert up.get(f"{ST_PATH}/kube")["status"]["capacity"]["pods"], "the real node's capacity"
    # the heartbeat comes from the installed Deployment's pod, a container of the image built from this checkout
    syncers = [p for ns in down.get("/api/v1/namespaces")["items"]
               if (ns["metadata"].get("labels") or {}).get("workload.kcp.io/sync-target") == "kube"
               for p in down.get(f"/api/v1/namespaces/{ns['metadata']['name']}/pods")["items"]]
    assert [(p["spec"]["nodeName"], p["status"]["phase"], p["spec"]["containers"][0]["image"]) for p in syncers] == [
        (NODE_NAME, "Running", SYNCER_IMAGE)]

    up.create("/apis/apps/v1/namespaces/default/deployments", {
        "apiVersion": "apps/v1", "kind": "Deployment",
        "metadata": {"name": "web", "labels": {ASSIGNMENT_LABEL: "kube"}},
        "spec": {"replicas": 2, "selector": {"matchLabels": {"app": "web"}},
                 "template": {"metadata": {"labels": {"app": "web"}},
                              "spec": {"containers": [{"name": "web", "image": PAUSE_IMAGE}],
                                       "terminationGracePeriodSeconds": 1}}}})
    eventually(lambda: (up.get("/apis/apps/v1/namespaces/default/deployments/web").get("status") or {})
               .get("readyReplicas") == 2, "2/2 ready in kcp, from real containers", timeout=PATIENCE)
    namespace = downstream_namespace("pod-pull", "default")
    pods = down.get(f"/api/v1/namespaces/{namespace}/pods?labelSelector=app%3Dweb")["items"]
    assert {(p["spec"]["nodeName"], p["status"]["phase"]) for p in pods} == {(NODE_NAME, "Running")}
    containers = pod_pull.node.docker("ps", "-q", "--filter", f"label=io.kubernetes.pod.namespace={namespace}",
                                      "--filter", "label=io.kubernetes.container.name=web").stdout.split()
    assert len(containers) == 2

    run_kubectl(pod_pull.kcp, "delete", "synctarget", "kube", "--timeout=120s", kubeconfig=kubeconfig, timeout=130)
    eventually(lambda: not [ns for ns in down.get("/api/v1/namespaces")["items"]
                            if (ns["metadata"].get("labels") or {}).get("workload.kcp.io/sync-target") == "kube"
                            and not ns["metadata"].get("deletionTimestamp")],
               "the installed syncer removed", timeout=PATIENCE)


# -- helm install of deploy/helm into the real cluster --------------------------------------------------
#
# `helm install` of deploy/helm into the real kube 1.20 cluster (kube_fixtures' `kubelet_node`: real containers),
# with the images built from this checkout; `--wait` until every pod is Ready, then a Deployment through the
# installed kcp, synced back into the same cluster by the chart's cluster controller (push mode).
#
# Without cluster DNS and kube-proxy (no package ships CoreDNS; kube-proxy would write iptables rules) the chart's
# Service names resolve through kube_fixtures' `ServiceDNS`, straight to the endpoints (the chart's Services keep
# port == targetPort, so that is enough); a ClusterIP itself reaches nothing here.
#
# `--wait` finishes on a fresh kcp, with no SyncTarget yet: the daemons are Ready once the informers of the types
# kcp serves have listed (the workload types arrive with a cluster's import and are followed until then), so the
# test installs first and registers the cluster after, as an operator would.

def kubectl_json(kubeconfig: Path, *args: str) -> Any:
    result = subprocess.run(["kubectl", "--kubeconfig", str(kubeconfig), *args, "-o", "json"], capture_output=True,
                            text=True, timeout=60, check=True)
    return yaml.safe_load(result.stdout)


def installed_kcp_kubeconfig(kube: KubeControlPlane, path: Path) -> Path:
    """The chart's admin.kubeconfig, pointed at the apiserver pod (the host reaches pods on the bridge) and still
    checking the certificate against the Service's name."""
    secrets = kubectl_json(kube.kubeconfig, "-n", NAMESPACE, "get", "secrets")["items"]
    pki = next(s for s in secrets if "admin.kubeconfig" in (s.get("data") or {}))
    config = yaml.safe_load(base64.b64decode(pki["data"]["admin.kubeconfig"]))
    pods = kubectl_json(kube.kubeconfig, "-n", NAMESPACE, "get", "pods", "-l",
                        "app.kubernetes.io/component=apiserver")["items"]
    for cluster in config["clusters"]:
        server = cluster["cluster"]["server"]
        cluster["cluster"]["tls-server-name"] = server.split("//")[1].split(":")[0]
        cluster["cluster"]["server"] = f"https://{pods[0]['status']['podIP']}:6443"
    path.write_text(yaml.safe_dump(config))
    return path


@pytest.mark.timeout(900)
def test_helm_installs_kcp_into_the_real_cluster_and_a_deployment_syncs_through_it(
        kube: KubeControlPlane, kubelet_node: KubeletNode, tmp_path: Path) -> None:
    for service in ("apiserver", "cluster-controller", "deployment-splitter"):
        kubelet_node.build(service, f"kcp-{service}:{TAG}")
    etcd_tag = subprocess.run([str(REPO / "scripts" / "base_images.sh"), "docker", "python3", "--etcd-tag"],
                              cwd=REPO, env=kubelet_node.docker_env, capture_output=True, text=True,
                              check=True).stdout.strip()
    repository, _, tag = etcd_tag.rpartition(":")
    try:
        install = subprocess.run([
            str(HELM), "install", RELEASE, str(REPO / "deploy" / "helm" / "kcp"), "--kubeconfig", str(kube.kubeconfig),
            "--namespace", NAMESPACE, "--create-namespace", "--wait", f"--timeout={int(HELM_PATIENCE)}s",
            "--set", f"apiserver.image.tag={TAG}", "--set", f"clusterController.image.tag={TAG}",
            "--set", f"deploymentSplitter.image.tag={TAG}", "--set", f"etcd.image.repository={repository}",
            "--set", f"etcd.image.tag={tag}", "--set", "etcd.persistence.enabled=false",
            "--set", "clusterController.leaderElect=false", "--set", "deploymentSplitter.leaderElect=false"],
            capture_output=True, text=True, timeout=HELM_PATIENCE + 30, check=False)
        pods = kubectl_json(kube.kubeconfig, "-n", NAMESPACE, "get", "pods")["items"]
        assert install.returncode == 0, (install.stdout, install.stderr,
                                         [(p["metadata"]["name"], p["status"].get("containerStatuses")) for p in pods])
        assert len(pods) == 4 and all(p["spec"]["nodeName"] == NODE_NAME for p in pods)
        assert all(c["status"] == "True" for p in pods for c in p["status"]["conditions"] if c["type"] == "Ready")
        kcp = installed_kcp_kubeconfig(kube, tmp_path / "kcp.kubeconfig")
        target = {"apiVersion": "workload.kcp.io/v1alpha1", "kind": "SyncTarget", "metadata": {"name": "kube"},
                  "spec": {"kubeconfig": bridged_kubeconfig(kube)}}
        assert _kubectl(kcp, "apply", "-f", "-", input_text=yaml.safe_dump(target)).returncode == 0
        ready = _kubectl(kcp, "wait", "synctarget/kube", "--for", "condition=Ready", f"--timeout={int(HELM_PATIENCE)}s")
        assert ready.returncode == 0, ready.stderr
        web = {"apiVersion": "apps/v1", "kind": "Deployment",
               "metadata": {"name": "web", "namespace": "default", "labels": {ASSIGNMENT_LABEL: "kube"}},
               "spec": {"replicas": 2, "selector": {"matchLabels": {"app": "web"}},
                        "template": {"metadata": {"labels": {"app": "web"}},
                                     "spec": {"containers": [{"name": "web", "image": PAUSE_IMAGE}],
                                              "terminationGracePeriodSeconds": 1}}}}
        eventually(lambda: _kubectl(kcp, "apply", "-f", "-", input_text=yaml.safe_dump(web)).returncode == 0,
                   "Deployments imported into the chart's kcp", timeout=HELM_PATIENCE)
        rollout = _kubectl(kcp, "rollout", "status", "deployment/web", f"--timeout={int(HELM_PATIENCE)}s")
        assert rollout.returncode == 0, rollout.stderr
        real = kubectl_json(kube.kubeconfig, "-n", downstream_namespace("admin", "default"), "get", "pods",
                            "-l", "app=web")["items"]
        assert {(p["spec"]["nodeName"], p["status"]["phase"]) for p in real} == {(NODE_NAME, "Running")}
        assert len(real) == 2
        assert BRIDGE_IP.rsplit(".", 1)[0] in real[0]["status"]["podIP"]
    finally:
        subprocess.run([str(HELM), "uninstall", RELEASE, "--kubeconfig", str(kube.kubeconfig), "--namespace",
                        NAMESPACE, "--wait", "--timeout=120s"], capture_output=True, timeout=150)
        run_kubectl(kube, "delete", "namespace", NAMESPACE, "--wait=false", check=False)  # type: ignore[arg-type]


def _kubectl(kubeconfig: Path, *args: str, input_text: str | None = None) -> subprocess.CompletedProcess[str]:
    return subprocess.run(["kubectl", "--kubeconfig", str(kubeconfig), *args], capture_output=True, text=True,
                          input=input_text, timeout=HELM_PATIENCE + 30)
