"""`helm install --wait` and `helm upgrade --wait` through kcp of a chart whose Deployment runs on two
simulated clusters, fronted by a ClusterIP and a LoadBalancer Service: with both of helm 4's wait modes
(`watcher`, kstatus; `legacy`, helm 3's readiness checks).

Every real process runs: kcp, two kcp-sim-clusters (each with its own load-balancer range), the cluster
controller (push mode: it imports the types and runs both syncers) and the deployment splitter, which
places the Services on every cluster that runs a share of the Deployment. helm waits for the Services'
cluster IPs (kcp's own) and for the LoadBalancer's ingress, which kcp shows as the union of the
addresses the clusters gave it; `kubectl get svc` through kcp reads as on one cluster. Both modes read
ReplicaSets for a Deployment (kstatus lists them; legacy looks for the Deployment's new one, which the
splitter's revisions keep in kcp), so the SyncTargets import `replicasets.apps`. Scaled down to one
cluster, the Service shows that cluster's address only.
"""

from __future__ import annotations

import json
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest
import yaml
from daemon_process import ClusterControllerProcess
from splitter_fixtures import SplitterProcess
from syncer_fixtures import Rest, eventually, sim_cluster
from test_helm import Helm

from kcp_process import REPO, KcpServer, cluster_kubeconfig, free_port, run_kubectl
from kcpsyncer import downstream_namespace

CRD_FILE = REPO / "services/cluster-controller/kcp_cluster_controller/synctarget-crd.yaml"
LOGICAL_CLUSTER = "helmwait"
RESOURCES = ["deployments.apps", "replicasets.apps", "services", "configmaps"]
LB_RANGES = {"east": "172.18.1.0/24", "west": "172.18.2.0/24"}

TEMPLATES = """\
apiVersion: apps/v1
kind: Deployment
metadata:
  name: {{ .Release.Name }}-web
spec:
  replicas: {{ .Values.replicas }}
  selector:
    matchLabels: {app: {{ .Release.Name }}-web}
  template:
    metadata:
      labels: {app: {{ .Release.Name }}-web}
    spec:
      containers:
      - name: web
        image: {{ .Values.image | quote }}
        ports: [{containerPort: 8080}]
---
apiVersion: v1
kind: Service
metadata:
  name: {{ .Release.Name }}-internal
spec:
  selector: {app: {{ .Release.Name }}-web}
  ports: [{port: 80, targetPort: 8080}]
---
apiVersion: v1
kind: Service
metadata:
  name: {{ .Release.Name }}-public
spec:
  type: LoadBalancer
  selector: {app: {{ .Release.Name }}-web}
  ports: [{port: 443, targetPort: 8080}]
"""


@dataclass
class Fleet:
    kcp: KcpServer
    clusters: dict[str, KcpServer]  # SyncTarget name -> physical cluster
    kubeconfig: Path

    def kubectl(self, *args: str, **kwargs: Any) -> str:
        return run_kubectl(self.kcp, *args, kubeconfig=self.kubeconfig, **kwargs).stdout


def sync_target(name: str, physical: KcpServer) -> str:
    return yaml.safe_dump({"apiVersion": "workload.kcp.io/v1alpha1", "kind": "SyncTarget", "metadata": {"name": name},
                           "spec": {"kubeconfig": physical.kubeconfig.read_text(), "resources": RESOURCES}})


@pytest.fixture(scope="module")
def fleet(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Fleet]:
    root = tmp_path_factory.mktemp("helmwait")
    kcp = KcpServer(root / "kcp", free_port())
    physical = {name: sim_cluster(root / name, "--load-balancer-ip-range", cidr) for name, cidr in LB_RANGES.items()}
    controller = ClusterControllerProcess(kcp, root / "controller.log", [
        "--syncer-mode", "push", "--no-leader-elect", "--heartbeat-interval", "2", "--heartbeat-threshold", "8",
        "--discovery-interval", "5"])
    splitter = SplitterProcess(kcp, root / "splitter.log", ["--no-leader-elect", "--grace-period", "3"])
    started: list[KcpServer] = []
    try:
        for server in (kcp, *physical.values()):
            server.start()
            started.append(server)
        controller.start()
        splitter.start(wait_ready=False)
        kubeconfig = cluster_kubeconfig(kcp, LOGICAL_CLUSTER, LOGICAL_CLUSTER)
        fleet = Fleet(kcp, physical, kubeconfig)
        fleet.kubectl("apply", "-f", str(CRD_FILE))
        eventually(lambda: run_kubectl(kcp, "get", "synctargets", kubeconfig=kubeconfig, check=False).returncode == 0,
                   "SyncTargets served")
        for name, server in physical.items():
            fleet.kubectl("apply", "-f", "-", input_text=sync_target(name, server))
        for name in physical:
            fleet.kubectl("wait", f"synctarget/{name}", "--for", "condition=Ready", "--timeout=90s", timeout=100)
        eventually(lambda: run_kubectl(kcp, "get", "deployments,services", kubeconfig=kubeconfig,
                                       check=False).returncode == 0, "the types imported into kcp", timeout=90)
        yield fleet
        assert splitter.stop() == 0, splitter.log_tail()
        assert controller.stop() == 0, controller.log_tail(60)
    finally:
        splitter.stop()
        controller.stop()
        for server in started:
            server.stop()


def write_chart(root: Path) -> Path:
    chart = root / "chart"
    (chart / "templates").mkdir(parents=True)
    (chart / "Chart.yaml").write_text("apiVersion: v2\nname: lbdemo\nversion: 0.1.0\n")
    (chart / "values.yaml").write_text("image: nginx:1.26\nreplicas: 2\n")
    (chart / "templates" / "all.yaml").write_text(TEMPLATES)
    return chart


def downstream_addresses(fleet: Fleet, ns: str, name: str) -> dict[str, list[str]]:
    """The load-balancer addresses each physical cluster gave its copy of Service `name`."""
    found = {}
    for target, server in fleet.clusters.items():
        svc = Rest(server).get(f"/api/v1/namespaces/{downstream_namespace(LOGICAL_CLUSTER, ns)}/services/{name}")
        if svc is not None:
            found[target] = [p["ip"] for p in ((svc.get("status") or {}).get("loadBalancer") or {}).get("ingress", [])]
    return found


def downstream_images(fleet: Fleet, ns: str, app: str) -> set[str]:
    images = set()
    for server in fleet.clusters.values():
        pods = Rest(server).get(f"/api/v1/namespaces/{downstream_namespace(LOGICAL_CLUSTER, ns)}/pods"
                                f"?labelSelector=app%3D{app}") or {}
        images |= {c["image"] for p in pods.get("items") or [] if not p["metadata"].get("deletionTimestamp")
                   for c in p["spec"]["containers"]}
    return images


@pytest.mark.parametrize("mode", ["watcher", "legacy"])
def test_helm_install_and_upgrade_wait_for_services_and_deployments_across_two_clusters(
        fleet: Fleet, tmp_path: Path, mode: str) -> None:
    helm, chart = Helm(tmp_path, fleet.kubeconfig), write_chart(tmp_path)
    ns, release = f"wait-{mode}", f"r{mode}"
    fleet.kubectl("create", "namespace", ns)

    helm("install", release, str(chart), "-n", ns, f"--wait={mode}", "--timeout=120s")
    public = json.loads(fleet.kubectl("-n", ns, "get", "service", f"{release}-public", "-o", "json"))
    if mode == "legacy":  # helm's legacy check waits for an ingress point (kstatus, the watcher's, does not)
        assert public["status"]["loadBalancer"]["ingress"], public["status"]

    def both_clusters_shown() -> tuple[Any, list[str]] | None:
        svc = json.loads(fleet.kubectl("-n", ns, "get", "service", f"{release}-public", "-o", "json"))
        ips = [p["ip"] for p in ((svc.get("status") or {}).get("loadBalancer") or {}).get("ingress", [])]
        by_cluster = downstream_addresses(fleet, ns, f"{release}-public")
        # the Deployment runs on both clusters: so do its Services, and kcp shows both clusters' addresses
        union = sorted(ip for found in by_cluster.values() for ip in found)
        return (svc, ips) if set(by_cluster) == set(LB_RANGES) and ips == union and len(ips) == 2 else None
    public, shown = eventually(both_clusters_shown, "both clusters' ingress points, summarized in kcp's Service")

    # kubectl get svc through kcp: kube's columns, every cluster's address under EXTERNAL-IP
    internal = json.loads(fleet.kubectl("-n", ns, "get", "service", f"{release}-internal", "-o", "json"))
    node_port = public["spec"]["ports"][0]["nodePort"]
    rows = {line.split()[0]: line.split()[:5] for line in fleet.kubectl("-n", ns, "get", "svc").splitlines()}
    assert rows == {"NAME": ["NAME", "TYPE", "CLUSTER-IP", "EXTERNAL-IP", "PORT(S)"],
                    f"{release}-internal": [f"{release}-internal", "ClusterIP", internal["spec"]["clusterIP"],
                                            "<none>", "80/TCP"],
                    f"{release}-public": [f"{release}-public", "LoadBalancer", public["spec"]["clusterIP"],
                                          ",".join(shown), f"443:{node_port}/TCP"]}

    helm("upgrade", release, str(chart), "-n", ns, "--set", "image=nginx:1.27", f"--wait={mode}", "--timeout=120s")
    deployment = json.loads(fleet.kubectl("-n", ns, "get", "deployment", f"{release}-web", "-o", "json"))
    assert deployment["status"].get("updatedReplicas") == deployment["status"].get("readyReplicas") == 2
    # helm's wait (as kube's rollout status) is for the new ReplicaSet's pods: the old ones may still be going
    eventually(lambda: downstream_images(fleet, ns, f"{release}-web") == {"nginx:1.27"},
               "only the upgraded image runs downstream")
    [listed] = json.loads(helm("list", "-n", ns, "-o", "json"))
    assert (listed["revision"], listed["status"]) == ("2", "deployed")

    # down to one replica: one cluster runs the Deployment, and the Service shows that cluster's address only
    helm("upgrade", release, str(chart), "-n", ns, "--reuse-values", "--set", "replicas=1", f"--wait={mode}",
         "--timeout=120s")

    def settled() -> bool:
        svc = json.loads(fleet.kubectl("-n", ns, "get", "service", f"{release}-public", "-o", "json"))
        ips = [p["ip"] for p in ((svc.get("status") or {}).get("loadBalancer") or {}).get("ingress", [])]
        still = downstream_addresses(fleet, ns, f"{release}-public")
        return len(still) == 1 and list(still.values()) == [ips] and len(ips) == 1
    eventually(settled, "the Service, on one cluster now, shows that cluster's address only")
