"""The deployment splitter as a process, and the API moves its end-to-end tests make.

The splitter only sees the kcp API, so tests of its logic play the other components' parts through
the same API: they set SyncTargets' Ready conditions (the cluster controller's job) and children's
statuses (the syncer's, from the physical cluster's deployment controller).
"""

from __future__ import annotations

import subprocess
from dataclasses import dataclass, field
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

from daemon_process import DaemonProcess, package_env
from syncer_fixtures import Rest, eventually

from kcp_process import KcpServer, free_port

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


def children(kcp: Rest, root: str) -> dict[str, dict[str, Any]]:
    """The root's children by target."""
    items = kcp.get(f"{DEPLOYMENTS}?labelSelector=splitter.kcp.io/root%3D{root}")["items"]
    return {c["metadata"]["labels"]["workloads.kcp.io/cluster"]: c for c in items}


def replicas_of(kcp: Rest, root: str) -> dict[str, int]:
    return {t: c["spec"]["replicas"] for t, c in children(kcp, root).items()}


def report(kcp: Rest, name: str, *, ready: int | None = None, updated: int | None = None) -> None:
    """What the syncer brings up from a physical cluster: the child's deployment controller's status."""
    child = kcp.get(f"{DEPLOYMENTS}/{name}")
    want = child["spec"]["replicas"]
    ready = want if ready is None else ready
    updated = want if updated is None else updated
    done = ready == want and updated == want
    kcp.patch(f"{DEPLOYMENTS}/{name}/status", {"status": {
        "observedGeneration": child["metadata"]["generation"], "replicas": want, "updatedReplicas": updated,
        "readyReplicas": ready, "availableReplicas": ready, "unavailableReplicas": want - ready,
        "conditions": [
            {"type": "Available", "status": "True" if ready >= want - want // 4 else "False",
             "reason": "MinimumReplicasAvailable"},
            {"type": "Progressing", "status": "True",
             "reason": "NewReplicaSetAvailable" if done else "ReplicaSetUpdated"}]}})


def events_about(kcp: Rest, name: str) -> list[dict[str, Any]]:
    items = kcp.get("/api/v1/namespaces/default/events")["items"]
    return [e for e in items if e["involvedObject"].get("name") == name]


def event_with(kcp: Rest, name: str, text: str) -> dict[str, Any]:
    return eventually(lambda: next((e for e in events_about(kcp, name) if text in e["message"]), None),
                      f"an Event on {name} saying {text!r}")
