"""scripts/run_suite.py (`make run`): the whole suite started for real, seed 004's Deployment split over
the two simulated clusters it registers, Ctrl-C stopping every process it started; a port in use
named, with nothing left running; SIM=0 starting no simulated cluster."""

from __future__ import annotations

import json
import os
import queue
import re
import signal
import socket
import subprocess
import sys
import threading
import time
from pathlib import Path

import pytest
from repo_layout import REPO

from kcp_process import free_port, free_port_block

SCRIPT = REPO / "scripts" / "run_suite.py"
def service_env() -> dict[str, str]:
    """Every service's package importable, installed or not (the suite falls back to `python -m`)."""
    paths = [str(REPO / d) for d in ("services/apiserver", "libs/kcpcommon", "services/sim-cluster",
                                     "services/cluster-controller", "services/deployment-splitter", "services/syncer")]
    return {**os.environ, "PYTHONPATH": os.pathsep.join([*paths, os.environ.get("PYTHONPATH", "")])}


class Running:
    """run_suite.py as a child, its output read line by line so tests wait on what it says."""

    def __init__(self, *args: str) -> None:
        self.process = subprocess.Popen([sys.executable, str(SCRIPT), *args], stdout=subprocess.PIPE,
                                        stderr=subprocess.STDOUT, text=True, env=service_env())
        self.lines: queue.Queue[str] = queue.Queue()
        self.seen: list[str] = []
        threading.Thread(target=self._read, daemon=True).start()

    def _read(self) -> None:
        assert self.process.stdout is not None
        for line in self.process.stdout:
            self.lines.put(line.rstrip("\n"))

    def wait_for(self, text: str, timeout: float = 180.0) -> None:
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            try:
                line = self.lines.get(timeout=1)
            except queue.Empty:
                continue
            self.seen.append(line)
            if text in line:
                return
        raise AssertionError(f"{text!r} not said in {timeout}s:\n" + "\n".join(self.seen))

    def finish(self, timeout: float = 60.0) -> int:
        code = self.process.wait(timeout)
        while not self.lines.empty():
            self.seen.append(self.lines.get())
        return code

    def pids(self) -> list[int]:
        return [int(m.group(1)) for line in self.seen if (m := re.search(r"^started .* \(pid (\d+)\)", line))]

    def kill(self) -> None:
        if self.process.poll() is None:
            self.process.send_signal(signal.SIGTERM)
            self.process.wait(60)


def alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    return True


def kubectl(kubeconfig: Path, *args: str, stdin: str | None = None) -> str:
    result = subprocess.run(["kubectl", "--kubeconfig", str(kubeconfig), *args], input=stdin, capture_output=True,
                            text=True, timeout=60)
    assert result.returncode == 0, result.stderr
    return result.stdout


def eventually(check, what: str, timeout: float = 180.0):  # type: ignore[no-untyped-def]
    deadline = time.monotonic() + timeout
    last = None
    while time.monotonic() < deadline:
        last = check()
        if last:
            return last
        time.sleep(0.5)
    raise AssertionError(f"{what}: not within {timeout}s ({last!r})")


def test_the_whole_suite_runs_seed_004s_demo_and_ctrl_c_stops_it_all(tmp_path: Path) -> None:
    root = tmp_path / "kcp"
    first_sim = free_port_block(2)  # sim-2 binds first_sim + 1
    suite = Running("--root-dir", str(root), "--port", str(free_port()), "--sim-port", str(first_sim))
    try:
        suite.wait_for("kcp is running")
        assert len(suite.pids()) == 5
        kubeconfig = root / "admin.kubeconfig"

        def ready_targets() -> list[str]:
            items = json.loads(kubectl(kubeconfig, "get", "synctargets", "-o", "json"))["items"]
            return sorted(t["metadata"]["name"] for t in items if any(
                c["type"] == "Ready" and c["status"] == "True" for c in t.get("status", {}).get("conditions", [])))

        assert eventually(lambda: ready_targets() == ["sim-1", "sim-2"], "both sim clusters Ready")
        demo = subprocess.run([sys.executable, str(REPO / "scripts" / "demo.py"), "--kubeconfig", str(kubeconfig)],
                              capture_output=True, text=True, timeout=300)
        assert demo.returncode == 0, demo.stdout + demo.stderr
        assert "$ kubectl create -f deployment.yaml\ndeployment.apps/my-deployment created" in demo.stdout
        final = demo.stdout.rsplit("$ kubectl get deployments", 1)[1]  # the demo ends on the aggregated status
        assert re.search(r"^my-deployment +15/15 ", final, re.M), demo.stdout
        names = kubectl(kubeconfig, "get", "deployments", "-o", "name").split()
        assert sorted(names) == ["deployment.apps/my-deployment", "deployment.apps/my-deployment--sim-1",
                                 "deployment.apps/my-deployment--sim-2"]
        pids = suite.pids()
        suite.process.send_signal(signal.SIGINT)  # Ctrl-C
        assert suite.finish() == 0
        assert not [pid for pid in pids if alive(pid)]
        assert [line for line in suite.seen if line.startswith("stopped ")][-1].startswith("stopped kcp-apiserver")
    finally:
        suite.kill()


@pytest.mark.parametrize("taken_by", ["kcp-apiserver", "kcp-sim-cluster sim-1"])
def test_a_port_in_use_is_named_and_nothing_is_left_running(tmp_path: Path, taken_by: str) -> None:
    with socket.socket() as taken:
        taken.bind(("127.0.0.1", 0))
        taken.listen()
        port = taken.getsockname()[1]
        ports = {"--port": str(port if taken_by == "kcp-apiserver" else free_port()),
                 "--sim-port": str(port if taken_by != "kcp-apiserver" else free_port())}
        suite = Running("--root-dir", str(tmp_path / "kcp"), "--sims", "1", *[w for kv in ports.items() for w in kv])
        try:
            code = suite.finish(120)
        finally:
            suite.kill()
    assert code == 1
    said = "\n".join(suite.seen)
    assert f"port {port} is in use ({taken_by} would serve on it)" in said
    assert not suite.pids()


def test_sim_0_starts_no_simulated_cluster(tmp_path: Path) -> None:
    suite = Running("--root-dir", str(tmp_path / "kcp"), "--port", str(free_port()), "--sims", "0")
    try:
        suite.wait_for("kcp is running")
        started = [line.split()[1] for line in suite.seen if line.startswith("started ")]
        assert started == ["kcp-apiserver", "kcp-cluster-controller", "kcp-deployment-splitter"]
        pids = suite.pids()
        suite.process.send_signal(signal.SIGTERM)
        assert suite.finish() == 0
        assert not [pid for pid in pids if alive(pid)]
    finally:
        suite.kill()
