"""kcp's controller daemons (syncer, splitter, cluster controller) as processes under test.

Each is `python -m <package>` with its log in a file and its health server on a port of its own;
this is what they share: starting in a session of its own, /readyz, /healthz and /metrics, the log's
tail for assertion messages, a clean SIGTERM (exit code 0 expected) and kill -9.
"""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import urllib.request
from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path

from kcp_process import REPO, KcpServer, free_port

STOP_TIMEOUT = 30.0  # seconds a daemon gets to stop on SIGTERM before it is killed


def package_env(*services: str) -> dict[str, str]:
    """The environment to run `python -m` on these services' packages from the source tree (with the libraries)."""
    path = [*(str(REPO / "services" / s) for s in services),
            *(str(REPO / "libs" / lib) for lib in ("kcpcommon", "kcpsyncer")),
            *filter(None, os.environ.get("PYTHONPATH", "").split(os.pathsep))]
    return {**os.environ, "PYTHONPATH": os.pathsep.join(path)}


class DaemonProcess:
    """The process handling every daemon shares; subclasses say what they run (`launch`)."""

    name = "daemon"
    log_path: Path
    health_port: int
    process: subprocess.Popen[bytes] | None

    def launch(self, module: str, args: Sequence[str], env: dict[str, str]) -> None:
        """`python -m module args...` with its health server on `health_port`, logging to `log_path`."""
        with open(self.log_path, "ab") as log:
            self.process = subprocess.Popen(
                [sys.executable, "-m", module, *args, "--health-port", str(self.health_port),
                 "--health-address", "127.0.0.1"],
                stdout=log, stderr=log, env=env, start_new_session=True)

    def alive(self) -> bool:
        return self.process is not None and self.process.poll() is None

    def _get(self, path: str, timeout: float) -> tuple[int, str]:
        with urllib.request.urlopen(f"http://127.0.0.1:{self.health_port}{path}", timeout=timeout) as resp:
            return resp.status, resp.read().decode()

    def ready(self) -> bool:
        """/readyz answers 200; an exited daemon fails the test with its log."""
        if not self.alive():
            code = self.process.returncode if self.process is not None else None
            raise AssertionError(f"{self.name} exited {code}: {self.log_tail()}")
        try:
            return self._get("/readyz", 2)[0] == 200
        except OSError:
            return False

    def healthy(self) -> bool:
        """/healthz answers (a standby is healthy, and ready, without leading)."""
        try:
            return self._get("/healthz", 2)[0] == 200
        except OSError:
            return False

    def metrics(self) -> str:
        """The /metrics text ("" while the health server is not listening yet)."""
        try:
            return self._get("/metrics", 5)[1]
        except OSError:
            return ""

    def log_tail(self, lines: int = 30) -> str:
        if not self.log_path.exists():
            return ""
        return "\n".join(self.log_path.read_text(errors="replace").splitlines()[-lines:])

    def stop(self) -> int:
        """SIGTERM; the exit code (0 is a clean stop). Killed if it does not stop in time."""
        if self.process is None or self.process.poll() is not None:
            return self.process.returncode if self.process else 0
        self.process.send_signal(signal.SIGTERM)
        try:
            return self.process.wait(STOP_TIMEOUT)
        except subprocess.TimeoutExpired:
            os.killpg(self.process.pid, signal.SIGKILL)
            return self.process.wait()

    def holds(self, holder_identity: str) -> bool:
        """Whether a Lease's holder is this process (kcpcommon's identities are `<host>_<pid>_<random>`)."""
        parts = holder_identity.rsplit("_", 2)
        return self.process is not None and len(parts) == 3 and parts[1] == str(self.process.pid)

    def kill(self) -> None:
        """kill -9: no cleanup at all."""
        assert self.process is not None
        self.process.kill()
        self.process.wait()


@dataclass
class ClusterControllerProcess(DaemonProcess):
    """`python -m kcp_cluster_controller` against one kcp (push mode unless `args` say otherwise)."""

    kcp: KcpServer
    log_path: Path
    args: list[str] = field(default_factory=list)
    health_port: int = field(default_factory=free_port)
    process: subprocess.Popen[bytes] | None = None
    name = "cluster controller"

    def start(self) -> ClusterControllerProcess:
        self.launch("kcp_cluster_controller", ["--kubeconfig", str(self.kcp.kubeconfig), *self.args],
                    package_env("cluster-controller", "syncer"))
        return self
