"""`make e2e-k3s`: the sync and split scenarios against two real k3s clusters started with
testcontainers (a container engine is required; `make e2e-k3s` says which is missing). Not part
of `make test`: pytest.ini's testpaths leave this directory out.

kcp, the cluster controller and the splitter run as `make run SIM=0` runs them; the k3s clusters are
registered as SyncTargets with scripts/register_sync_targets.py, as compose's k3s profile does.
"""

from __future__ import annotations

import json
import subprocess
import sys
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from repo_layout import REPO
from test_run_suite import Running

from kcp_process import free_port

K3S_IMAGE = "rancher/k3s:v1.31.4-k3s1"
PAUSE = "registry.k8s.io/pause:3.10"


def kubectl(kubeconfig: Path, *args: str, stdin: str | None = None) -> str:
    result = subprocess.run(["kubectl", "--kubeconfig", str(kubeconfig), *args], input=stdin, capture_output=True,
                            text=True, timeout=120)
    assert result.returncode == 0, result.stderr
    return result.stdout


def eventually(check: Any, what: str, timeout: float = 300.0) -> Any:
    deadline = time.monotonic() + timeout
    last = None
    while time.monotonic() < deadline:
        last = check()
        if last:
            return last
        time.sleep(1)
    raise AssertionError(f"{what}: not within {timeout}s ({last!r})")


@pytest.fixture(scope="module")
def k3s(tmp_path_factory: pytest.TempPathFactory) -> Iterator[dict[str, Path]]:
    from testcontainers.community.k3s import K3SContainer

    root = tmp_path_factory.mktemp("k3s")
    clusters = {name: K3SContainer(K3S_IMAGE) for name in ("k3s-1", "k3s-2")}
    try:
        for container in clusters.values():
            container.start()
        paths = {}
        for name, container in clusters.items():
            paths[name] = root / f"{name}.kubeconfig"
            paths[name].write_text(container.config_yaml())
        yield paths
    finally:
        for container in clusters.values():
            container.stop()


@pytest.fixture(scope="module")
def kcp(k3s: dict[str, Path], tmp_path_factory: pytest.TempPathFactory) -> Iterator[Path]:
    root = tmp_path_factory.mktemp("kcp")
    suite = Running("--root-dir", str(root), "--port", str(free_port()), "--sims", "0")
    try:
        suite.wait_for("kcp is running")
        kubeconfig = root / "admin.kubeconfig"
        subprocess.run([sys.executable, str(REPO / "scripts" / "register_sync_targets.py"), "--kubeconfig",
                        str(kubeconfig), *[f"--target={n}={p}" for n, p in k3s.items()]], check=True, timeout=300)
        yield kubeconfig
    finally:
        suite.kill()


def ready_targets(kubeconfig: Path) -> list[str]:
    items = json.loads(kubectl(kubeconfig, "get", "synctargets", "-o", "json"))["items"]
    return sorted(t["metadata"]["name"] for t in items if any(
        c["type"] == "Ready" and c["status"] == "True" for c in t.get("status", {}).get("conditions", [])))


def test_sync_a_deployment_down_to_one_k3s_and_its_status_up(kcp: Path, k3s: dict[str, Path]) -> None:
    eventually(lambda: ready_targets(kcp) == ["k3s-1", "k3s-2"], "both k3s clusters Ready")
    kubectl(kcp, "create", "-f", "-", stdin=json.dumps({
        "apiVersion": "apps/v1", "kind": "Deployment",
        "metadata": {"name": "synced", "labels": {"workloads.kcp.io/cluster": "k3s-1"}},
        "spec": {"replicas": 2, "selector": {"matchLabels": {"app": "synced"}},
                 "template": {"metadata": {"labels": {"app": "synced"}},
                              "spec": {"containers": [{"name": "pause", "image": PAUSE}]}}}}))

    def downstream_ready() -> int:
        items = json.loads(kubectl(k3s["k3s-1"], "get", "deployments", "-A", "-o", "json"))["items"]
        return sum(d.get("status", {}).get("readyReplicas", 0) for d in items if d["metadata"]["name"] == "synced")

    eventually(lambda: downstream_ready() == 2, "synced running 2/2 in k3s-1")
    eventually(lambda: json.loads(kubectl(kcp, "get", "deployment", "synced", "-o", "json"))["status"].get(
        "readyReplicas") == 2, "synced's status 2/2 in kcp")


def test_split_a_deployment_over_both_k3s(kcp: Path, k3s: dict[str, Path]) -> None:
    eventually(lambda: ready_targets(kcp) == ["k3s-1", "k3s-2"], "both k3s clusters Ready")
    kubectl(kcp, "create", "deployment", "split", f"--image={PAUSE}", "--replicas=4")
    eventually(lambda: json.loads(kubectl(kcp, "get", "deployment", "split", "-o", "json"))["status"].get(
        "readyReplicas") == 4, "split 4/4 in kcp")
    for kubeconfig in k3s.values():  # one copy of the Deployment per cluster, each with its share
        copies = json.loads(kubectl(kubeconfig, "get", "deployments", "-A", "-o", "json"))["items"]
        assert [d["spec"]["replicas"] for d in copies if d["metadata"]["name"] == "split"] == [2]
