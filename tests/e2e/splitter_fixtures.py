"""The deployment splitter as a process, and the API moves its end-to-end tests make.

The splitter only sees the kcp API, so tests of its logic play the other components' parts through
the same API: they set SyncTargets' Ready conditions (the cluster controller's job) and children's
statuses (the syncer's, from the physical cluster's deployment controller).
"""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import urllib.request
from dataclasses import dataclass, field
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

from syncer_fixtures import Rest, eventually

from kcp_process import REPO, KcpServer, free_port

DEPLOYMENTS = "/apis/apps/v1/namespaces/default/deployments"
TARGETS = "/apis/workload.kcp.io/v1alpha1/synctargets"


def splitter_env() -> dict[str, str]:
    path = [str(REPO / "services" / "deployment-splitter"), str(REPO / "libs" / "kcpcommon"),
            *filter(None, os.environ.get("PYTHONPATH", "").split(os.pathsep))]
    return {**os.environ, "PYTHONPATH": os.pathsep.join(path)}


@dataclass
class SplitterProcess:
    """`python -m kcp_deployment_splitter` against one kcp."""

    kcp: KcpServer
    log_path: Path
    extra: list[str] = field(default_factory=list)
    health_port: int = field(default_factory=free_port)
    process: subprocess.Popen[bytes] | None = None

    def start(self, *, wait_ready: bool = True) -> SplitterProcess:
        log = open(self.log_path, "ab")
        self.process = subprocess.Popen(
            [sys.executable, "-m", "kcp_deployment_splitter", "--kubeconfig", str(self.kcp.kubeconfig),
             "--health-port", str(self.health_port), "--health-address", "127.0.0.1", *self.extra],
            stdout=log, stderr=log, env=splitter_env(), start_new_session=True)
        log.close()
        if wait_ready:
            eventually(self.ready, f"splitter ready ({self.log_tail()})")
        return self

    def alive(self) -> bool:
        return self.process is not None and self.process.poll() is None

    def ready(self) -> bool:
        if not self.alive():
            raise AssertionError(f"splitter exited: {self.log_tail()}")
        try:
            with urllib.request.urlopen(f"http://127.0.0.1:{self.health_port}/readyz", timeout=2) as resp:
                return resp.status == 200
        except OSError:
            return False

    def healthy(self) -> bool:
        """/healthz answers (a standby is healthy, and ready, without leading)."""
        try:
            with urllib.request.urlopen(f"http://127.0.0.1:{self.health_port}/healthz", timeout=2) as resp:
                return resp.status == 200
        except OSError:
            return False

    def metrics(self) -> str:
        """The /metrics text ("" while the health server is not listening yet)."""
        try:
            with urllib.request.urlopen(f"http://127.0.0.1:{self.health_port}/metrics", timeout=5) as resp:
                return str(resp.read().decode())
        except OSError:
            return ""

    def log_tail(self, lines: int = 30) -> str:
        if not self.log_path.exists():
            return ""
        return "\n".join(self.log_path.read_text(errors="replace").splitlines()[-lines:])

    def stop(self) -> int:
        if self.process is None or self.process.poll() is not None:
            return self.process.returncode if self.process else 0
        self.process.send_signal(signal.SIGTERM)
        try:
            return self.process.wait(30)
        except subprocess.TimeoutExpired:
            self.process.kill()
            return self.process.wait()

    def kill(self) -> None:
        assert self.process is not None
        self.process.kill()
        self.process.wait()


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
