"""The deployment splitter as a process, and the API moves its end-to-end tests make.

The splitter only sees the kcp API, so tests of its logic play the other components' parts through
the same API: they set SyncTargets' Ready conditions (the cluster controller's job) and each share's
status annotation on the root (the syncer's, from the physical cluster's deployment controller).
"""

from __future__ import annotations

import json
import subprocess
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import yaml
from daemon_process import DaemonProcess, package_env
from kcp_cluster_controller.controller import DEFAULT_RESOURCES as CLUSTER_DEFAULT_RESOURCES
from syncer_fixtures import Rest, eventually

from kcp_process import REPO, KcpServer, ServedFromRoot, cluster_kubeconfig, free_port, run_kubectl

DEPLOYMENTS = "/apis/apps/v1/namespaces/default/deployments"
TARGETS = "/apis/workload.kcp.io/v1alpha1/synctargets"


@dataclass
class SplitterProcess(DaemonProcess):
    """`python -m kcp_deployment_splitter` against one kcp."""

    kcp: KcpServer
    log_path: Path
    extra: list[str] = field(default_factory=list)
    health_port: int = field(default_factory=free_port)
    process: subprocess.Popen[bytes] | None = None
    name = "splitter"

    def start(self, *, wait_ready: bool = True) -> SplitterProcess:
        self.launch("kcp_deployment_splitter", ["--kubeconfig", str(self.kcp.kubeconfig), *self.extra],
                    package_env("deployment-splitter"))
        if wait_ready:
            eventually(self.ready, f"splitter ready ({self.log_tail()})")
        return self


def stamp() -> str:
    return datetime.now(UTC).strftime("%Y-%m-%dT%H:%M:%SZ")


def set_ready(kcp: Rest, target: str, ready: bool, **status: Any) -> None:
    """What the cluster controller writes: the Ready condition (and allocatable, when given)."""
    kcp.patch(f"{TARGETS}/{target}/status", {"status": {
        "conditions": [{"type": "Ready", "status": "True" if ready else "False",
                        "reason": "SyncerHeartbeating" if ready else "SyncerHeartbeatMissing",
                        "lastTransitionTime": stamp()}], **status}})


def deployment(name: str, replicas: int, image: str = "nginx:1", **annotations: str) -> dict[str, Any]:
    return {"apiVersion": "apps/v1", "kind": "Deployment",
            "metadata": {"name": name, "labels": {"app": name}, "annotations": annotations},
            "spec": {"replicas": replicas, "selector": {"matchLabels": {"app": name}},
                     "template": {"metadata": {"labels": {"app": name}},
                                  "spec": {"containers": [{"name": "main", "image": image}]}}}}


SPEC_DIFF = "experimental.spec-diff.workload.kcp.io/"
STATUS = "experimental.status.workload.kcp.io/"
STATE = "state.workload.kcp.io/"


def shares_on(obj: dict[str, Any]) -> dict[str, int]:
    """A root's shares as it carries them: per `Sync` state label, the replicas its spec diff sets."""
    meta = obj.get("metadata") or {}
    labels, annotations = meta.get("labels") or {}, meta.get("annotations") or {}
    found: dict[str, int] = {}
    for key, value in annotations.items():
        target = key.removeprefix(SPEC_DIFF)
        if key.startswith(SPEC_DIFF) and labels.get(STATE + target) == "Sync":
            ops = json.loads(value)
            found[target] = next(op["value"] for op in ops if op["path"] == "/replicas")
    return found


def replicas_of(kcp: Rest, root: str) -> dict[str, int]:
    return shares_on(kcp.get(f"{DEPLOYMENTS}/{root}") or {})


def available_shares(obj: dict[str, Any]) -> dict[str, int]:
    """Available replicas per target of a root's shares, as each target's syncer reported its copy."""
    annotations = (obj.get("metadata") or {}).get("annotations") or {}
    return {target: int(json.loads(annotations.get(STATUS + target) or "{}").get("availableReplicas") or 0)
            for target in shares_on(obj)}


def ready_shares(kcp: Rest, root: str, namespace: str = "default") -> dict[str, str]:
    """`<ready>/<share>` per target, as each target's syncer reported its copy on the root (what `kubectl get
    deployments` showed per child before the shares moved onto the root)."""
    obj = kcp.get(f"/apis/apps/v1/namespaces/{namespace}/deployments/{root}") or {}
    annotations = (obj.get("metadata") or {}).get("annotations") or {}
    found = {}
    for target, share in shares_on(obj).items():
        status = json.loads(annotations.get(STATUS + target) or "{}")
        found[target] = f"{status.get('readyReplicas') or 0}/{share}"
    return found


def report(kcp: Rest, root: str, target: str, *, ready: int | None = None, updated: int | None = None) -> None:
    """What `target`'s syncer brings up from its physical cluster: its copy's status, written as the root's
    `experimental.status.workload.kcp.io/<target>` annotation, its observedGeneration in the root's terms."""
    obj = kcp.get(f"{DEPLOYMENTS}/{root}")
    want = replicas_of(kcp, root)[target]
    ready = want if ready is None else ready
    updated = want if updated is None else updated
    done = ready == want and updated == want
    status = {
        "observedGeneration": obj["metadata"]["generation"], "replicas": want, "updatedReplicas": updated,
        "readyReplicas": ready, "availableReplicas": ready, "unavailableReplicas": want - ready,
        "conditions": [
            {"type": "Available", "status": "True" if ready >= want - want // 4 else "False",
             "reason": "MinimumReplicasAvailable"},
            {"type": "Progressing", "status": "True",
             "reason": "NewReplicaSetAvailable" if done else "ReplicaSetUpdated"}]}
    kcp.patch(f"{DEPLOYMENTS}/{root}", {"metadata": {"annotations": {STATUS + target: json.dumps(status)}}})


def events_about(kcp: Rest, name: str) -> list[dict[str, Any]]:
    items = kcp.get("/api/v1/namespaces/default/events")["items"]
    return [e for e in items if e["involvedObject"].get("name") == name]


def event_with(kcp: Rest, name: str, text: str) -> dict[str, Any]:
    return eventually(lambda: next((e for e in events_about(kcp, name) if text in e["message"]), None),
                      f"an Event on {name} saying {text!r}")


CRD_FILE = REPO / "services/cluster-controller/kcp_cluster_controller/synctarget-crd.yaml"
# what multi-cluster Services need a SyncTarget to sync besides its defaults (deployment-splitter's README)
WITH_ENDPOINT_SLICES = (*CLUSTER_DEFAULT_RESOURCES, "endpointslices.discovery.k8s.io")


def logical_cluster(kcp: KcpServer, name: str) -> Path:
    """A logical cluster serving SyncTargets; its kubeconfig."""
    kubeconfig = cluster_kubeconfig(kcp, name, name)
    run_kubectl(kcp, "apply", "-f", str(CRD_FILE), kubeconfig=kubeconfig)
    eventually(lambda: run_kubectl(kcp, "get", "synctargets", kubeconfig=kubeconfig, check=False).returncode == 0,
               f"SyncTargets served in {name}")
    return kubeconfig


def sync_target(name: str, physical: ServedFromRoot, resources: Sequence[str] = ()) -> str:
    """A SyncTarget of `physical` (`resources`: its spec.resources; none: the default ones)."""
    spec: dict[str, Any] = {"kubeconfig": physical.kubeconfig.read_text()}
    if resources:
        spec["resources"] = list(resources)
    return yaml.safe_dump({"apiVersion": "workload.kcp.io/v1alpha1", "kind": "SyncTarget",
                           "metadata": {"name": name}, "spec": spec})


def connect_targets(kcp: KcpServer, kubeconfig: Path, targets: Mapping[str, ServedFromRoot],
                    resources: Sequence[str] = ()) -> None:
    """SyncTargets for `targets`, Ready, and the Deployment type imported."""
    for name, physical in targets.items():
        run_kubectl(kcp, "apply", "-f", "-", input_text=sync_target(name, physical, resources),
                    kubeconfig=kubeconfig)
    for name in targets:
        run_kubectl(kcp, "wait", f"synctarget/{name}", "--for", "condition=Ready", "--timeout=90s",
                    kubeconfig=kubeconfig, timeout=100)
    eventually(lambda: run_kubectl(kcp, "get", "deployments", kubeconfig=kubeconfig,
                                   check=False).returncode == 0, "Deployments imported into kcp", timeout=90)


def pods_in_kcp(kcp: KcpServer, kubeconfig: Path, selector: str) -> dict[str, tuple[str, str]]:
    """name -> (STATUS, CLUSTER) of `kubectl get pods -l selector` through kcp."""
    table = run_kubectl(kcp, "get", "pods", "-l", selector, kubeconfig=kubeconfig, check=False)
    if table.returncode != 0 or not table.stdout.strip():
        return {}
    header, *rows = table.stdout.splitlines()
    columns = header.split()
    assert columns[:6] == ["NAME", "READY", "STATUS", "RESTARTS", "AGE", "CLUSTER"], header
    if any(len(row.split()) != len(columns) for row in rows):  # a copy whose status is not up yet: no STATUS
        return {}
    return {row.split()[0]: (row.split()[2], row.split()[5]) for row in rows}
