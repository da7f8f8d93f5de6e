"""A real Kubernetes 1.20 control plane (etcd, kube-apiserver, kube-controller-manager, kube-scheduler) as a
physical cluster for end-to-end tests, from the binaries scripts/kube_build.sh caches under .tools/.

Everything listens on free 127.0.0.1 ports and runs under one root dir; every process is stopped by its PID.
Identities are static tokens (kube's --token-auth-file): the admin is `kcp-admin` in `system:masters`, the
controller manager and the scheduler are the users kube's bootstrap RBAC grants their rights to. The
credentials (CA, serving certificate, admin token, service-account key) come from kcp-apiserver's own PKI
helper, so the kubeconfig works as a SyncTarget's `spec.kubeconfig` unchanged.

`KubeControlPlane` has what tests use of a `KcpServer` (url, token, kubeconfig, ssl_context), so syncer_fixtures'
`Rest` and kcp_process' `run_kubectl` work against it too.
"""

from __future__ import annotations

import os
import secrets
import signal
import ssl
import subprocess
import time
import urllib.error
import urllib.request
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path

import pytest
import yaml

from kcp_apiserver.server.pki import ensure_credentials, write_contexts_kubeconfig
from kcp_apiserver.storage.embedded_etcd import etcd_binary
from kcp_process import REPO, free_port

VERSION = "1.20"
SERVICE_CIDR = "10.0.0.0/24"
SERVING_HOSTS = ["127.0.0.1", "localhost", "10.0.0.1", "kubernetes", "kubernetes.default", "kubernetes.default.svc",
                 "kubernetes.default.svc.cluster.local"]
START_TIMEOUT = 120.0  # seconds for the whole control plane to answer (the machine is shared)
STOP_TIMEOUT = 20.0


def kube_bin_dir() -> Path:
    """The cached binaries (scripts/kube_build.sh path); fails naming how to build them."""
    result = subprocess.run([str(REPO / "scripts" / "kube_build.sh"), "path"], capture_output=True, text=True)
    if result.returncode != 0:
        raise RuntimeError(f"kube {VERSION} is not built: run scripts/kube_build.sh ({result.stderr.strip()})")
    return Path(result.stdout.strip())


def _unverified() -> ssl.SSLContext:
    """For the controller manager's and scheduler's /healthz: they serve a self-signed certificate of their own."""
    context = ssl.create_default_context()
    context.check_hostname = False
    context.verify_mode = ssl.CERT_NONE
    return context


@dataclass
class KubeControlPlane:
    """etcd + kube-apiserver + kube-controller-manager + kube-scheduler under `root`."""

    root: Path
    bin_dir: Path = field(default_factory=kube_bin_dir)
    port: int = field(default_factory=free_port)
    processes: dict[str, subprocess.Popen[bytes]] = field(default_factory=dict)
    health_ports: dict[str, int] = field(default_factory=dict)

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

    def start(self, timeout: float = START_TIMEOUT) -> None:
        """Start every component in order, each once the one it needs answers; stops what started on failure."""
        deadline = time.monotonic() + timeout
        try:
            self._start_all(deadline)
        except BaseException:
            self.stop()
            raise

    def _start_all(self, deadline: float) -> None:
        self.root.mkdir(parents=True, exist_ok=True)
        creds = ensure_credentials(self.root, SERVING_HOSTS)
        tokens = {"kcp-admin": creds.admin_token, "system:kube-controller-manager": secrets.token_urlsafe(32),
                  "system:kube-scheduler": secrets.token_urlsafe(32)}
        token_file = self.root / "tokens.csv"
        groups = {"kcp-admin": ',"system:masters"'}  # token,user,uid[,"group,..."]
        token_file.write_text("".join(f"{token},{user},{user}{groups.get(user, '')}\n" for user, token in tokens.items()))
        write_contexts_kubeconfig(self.kubeconfig, [(f"kube-{VERSION}", self.url)], creds)
        for user in ("system:kube-controller-manager", "system:kube-scheduler"):
            self._user_kubeconfig(user, tokens[user])

        etcd_port, etcd_peer = free_port(), free_port()
        etcd_url = f"http://127.0.0.1:{etcd_port}"
        self._launch("etcd", [etcd_binary(), "--name", "kube", "--data-dir", str(self.root / "etcd"),
                              "--listen-client-urls", etcd_url, "--advertise-client-urls", etcd_url,
                              "--listen-peer-urls", f"http://127.0.0.1:{etcd_peer}",
                              "--initial-advertise-peer-urls", f"http://127.0.0.1:{etcd_peer}",
                              "--initial-cluster", f"kube=http://127.0.0.1:{etcd_peer}", "--log-level", "warn"])
        self._wait("etcd", f"{etcd_url}/health", None, deadline)

        sa_key = str(creds.service_account_key)
        self._launch("kube-apiserver", [
            str(self.bin_dir / "kube-apiserver"), "--etcd-servers", etcd_url,
            "--bind-address", "127.0.0.1", "--advertise-address", "127.0.0.1", "--secure-port", str(self.port),
            "--cert-dir", str(self.root / "apiserver-certs"),
            "--tls-cert-file", str(creds.serving_cert), "--tls-private-key-file", str(creds.serving_key),
            "--client-ca-file", str(creds.ca_cert), "--token-auth-file", str(token_file),
            "--authorization-mode", "RBAC,Node", "--service-cluster-ip-range", SERVICE_CIDR,
            "--service-account-key-file", sa_key, "--service-account-signing-key-file", sa_key,
            "--service-account-issuer", "https://kubernetes.default.svc.cluster.local",
            "--allow-privileged=true", "--profiling=false"])
        self._wait("kube-apiserver", f"{self.url}/readyz", self.ssl_context(), deadline, token=creds.admin_token)

        for name, extra in (("kube-controller-manager", [
                "--use-service-account-credentials=true", "--service-account-private-key-file", sa_key,
                "--root-ca-file", str(creds.ca_cert), "--cluster-signing-cert-file", str(creds.ca_cert),
                "--cluster-signing-key-file", str(self.root / "ca.key")]), ("kube-scheduler", [])):
            user_kubeconfig = str(self.root / f"{name}.kubeconfig")
            self.health_ports[name] = free_port()
            self._launch(name, [
                str(self.bin_dir / name), "--kubeconfig", user_kubeconfig, "--authentication-kubeconfig",
                user_kubeconfig, "--authorization-kubeconfig", user_kubeconfig, "--bind-address", "127.0.0.1",
                "--secure-port", str(self.health_ports[name]), "--port", "0",
                "--cert-dir", str(self.root / f"{name}-certs"), "--leader-elect=false", *extra])
        for name, port in self.health_ports.items():
            self._wait(name, f"https://127.0.0.1:{port}/healthz", _unverified(), deadline)

    def _user_kubeconfig(self, user: str, token: str) -> None:
        """`<component>.kubeconfig` for the controller manager or the scheduler, with its own token."""
        component = user.removeprefix("system:")
        config = yaml.safe_load(self.kubeconfig.read_text())
        config["users"] = [{"name": component, "user": {"token": token}}]
        for context in config["contexts"]:
            context["context"]["user"] = component
        path = self.root / f"{component}.kubeconfig"
        path.write_text(yaml.safe_dump(config))
        path.chmod(0o600)

    def _launch(self, name: str, command: list[str]) -> None:
        with open(self.root / f"{name}.log", "ab") as log:
            self.processes[name] = subprocess.Popen(command, stdout=log, stderr=log, start_new_session=True)

    def _wait(self, name: str, url: str, context: ssl.SSLContext | None, deadline: float, token: str = "") -> None:
        """Poll `url` until it answers 200; fail with the component's log when it exits or the deadline passes."""
        headers = {"Authorization": f"Bearer {token}"} if token else {}
        while True:
            process = self.processes[name]
            if process.poll() is not None:
                raise RuntimeError(f"{name} exited {process.returncode}: {self.log_tail(name)}")
            try:
                with urllib.request.urlopen(urllib.request.Request(url, headers=headers), context=context,
                                            timeout=2) as resp:
                    if resp.status == 200:
                        return
            except (OSError, urllib.error.HTTPError):
                pass
            if time.monotonic() > deadline:
                raise RuntimeError(f"{name} did not answer {url} in time: {self.log_tail(name)}")
            time.sleep(0.2)

    def log_tail(self, name: str, lines: int = 30) -> str:
        path = self.root / f"{name}.log"
        return "\n".join(path.read_text(errors="replace").splitlines()[-lines:]) if path.exists() else ""

    def stop(self) -> None:
        """SIGTERM every component, the last started first; SIGKILL (its process group) what does not stop."""
        for name in reversed(list(self.processes)):
            process = self.processes.pop(name)
            if process.poll() is not None:
                continue
            process.send_signal(signal.SIGTERM)
            try:
                process.wait(STOP_TIMEOUT)
            except subprocess.TimeoutExpired:
                os.killpg(process.pid, signal.SIGKILL)
                process.wait()


@pytest.fixture(scope="session")
def kube(tmp_path_factory: pytest.TempPathFactory) -> Iterator[KubeControlPlane]:
    """One real kube 1.20 control plane for the session (no nodes: pods stay Pending unless an agent adds some)."""
    cluster = KubeControlPlane(tmp_path_factory.mktemp("kube"))
    cluster.start()
    yield cluster
    cluster.stop()
