"""scripts/register_sync_targets.py, the one-shot of `docker compose up` and `make run`, against a real
kcp-apiserver: it waits for the SyncTarget type (installed later, as kcp-cluster-controller does),
creates each SyncTarget with the cluster's kubeconfig pointed at the given server, leaves an
existing one alone on a second run, and gives it the new kubeconfig when its cluster moved."""

from __future__ import annotations

import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path

import pytest
import yaml
from repo_layout import REPO

from kcp_process import KcpServer, free_port, run_kubectl

SCRIPT = REPO / "scripts" / "register_sync_targets.py"
CRD = REPO / "services" / "cluster-controller" / "kcp_cluster_controller" / "synctarget-crd.yaml"


@pytest.fixture(scope="module")
def kcp(tmp_path_factory: pytest.TempPathFactory) -> Iterator[KcpServer]:
    server = KcpServer(tmp_path_factory.mktemp("kcp"), free_port())
    server.start()
    try:
        yield server
    finally:
        server.stop()


def test_registers_once_the_type_is_served_then_leaves_it(kcp: KcpServer, tmp_path: Path) -> None:
    physical = tmp_path / "physical.kubeconfig"
    physical.write_text(kcp.kubeconfig.read_text())  # any kubeconfig will do: only its text is stored
    args = [sys.executable, str(SCRIPT), "--kubeconfig", str(kcp.kubeconfig), "--timeout", "120",
            "--target", f"phys-1={physical}@https://phys-1:7443", "--target", f"phys-2={physical}"]
    first = subprocess.Popen(args, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    try:
        run_kubectl(kcp, "apply", "-f", str(CRD))
        out, err = first.communicate(timeout=120)
    finally:
        if first.poll() is None:
            first.kill()
    assert first.returncode == 0, err
    assert out.splitlines() == ["synctarget.workload.kcp.io/phys-1 created",
                                "synctarget.workload.kcp.io/phys-2 created"]
    stored = yaml.safe_load(run_kubectl(kcp, "get", "synctarget", "phys-1", "-o", "yaml").stdout)
    config = yaml.safe_load(stored["spec"]["kubeconfig"])
    assert {c["cluster"]["server"] for c in config["clusters"]} == {"https://phys-1:7443"}
    kept = yaml.safe_load(yaml.safe_load(run_kubectl(kcp, "get", "synctarget", "phys-2", "-o", "yaml").stdout)[
        "spec"]["kubeconfig"])
    assert kept["clusters"][0]["cluster"]["server"] == kcp.url

    again = subprocess.run(args, capture_output=True, text=True, timeout=120)
    assert again.returncode == 0, again.stderr
    assert "phys-1 unchanged" in again.stdout and "phys-2 unchanged" in again.stdout

    moved = subprocess.run([*args[:-4], "--target", f"phys-1={physical}@https://phys-1:7444", *args[-2:]],
                           capture_output=True, text=True, timeout=120)
    assert moved.returncode == 0, moved.stderr
    assert moved.stdout.splitlines() == ["synctarget.workload.kcp.io/phys-1 configured",
                                         "synctarget.workload.kcp.io/phys-2 unchanged"]
    stored = yaml.safe_load(run_kubectl(kcp, "get", "synctarget", "phys-1", "-o", "yaml").stdout)
    assert yaml.safe_load(stored["spec"]["kubeconfig"])["clusters"][0]["cluster"]["server"] == "https://phys-1:7444"


def test_a_missing_kubeconfig_fails_naming_it(kcp: KcpServer, tmp_path: Path) -> None:
    missing = tmp_path / "nowhere.kubeconfig"
    result = subprocess.run([sys.executable, str(SCRIPT), "--kubeconfig", str(kcp.kubeconfig), "--timeout", "1",
                             "--target", f"x={missing}"], capture_output=True, text=True, timeout=60)
    assert result.returncode != 0
    assert str(missing) in result.stderr
