"""A real Kubernetes 1.20 control plane (etcd, kube-apiserver, kube-controller-manager, kube-scheduler) as a
physical cluster for end-to-end tests, from the binaries scripts/kube_build.sh caches under .tools/.

Everything listens on free 127.0.0.1 ports and runs under one root dir; every process is stopped by its PID.
Identities are static tokens (kube's --token-auth-file): the admin is `kcp-admin` in `system:masters`, the
controller manager and the scheduler are the users kube's bootstrap RBAC grants their rights to. The
credentials (CA, serving certificate, admin token, service-account key) come from kcp-apiserver's own PKI
helper, so the kubeconfig works as a SyncTarget's `spec.kubeconfig` unchanged.

`KubeControlPlane` shares what tests use of a `KcpServer` (url, token, kubeconfig, ssl_context: `ServedFromRoot`), so syncer_fixtures'
`Rest` and kcp_process' `run_kubectl` work against it too.

`KubeletNode` (fixture `kubelet_node`) gives it a node that really runs containers: kubelet 1.20 on a dockerd of
its own (scripts/dockerd.sh with KCP_DOCKERD_ROOT=.tools/docker-kubelet, its images cached there) through the
dockershim. What this sandbox needs, and why:
- runc behind scripts/runc_no_negative_oom.sh: the kubelet gives every pod sandbox oomScoreAdj -998, which needs
  CAP_SYS_RESOURCE (the sandbox has none);
- a docker0 bridge (BRIDGE_CIDR) and still no iptables: pods reach the host at the bridge address only, so
  `bridge_relays` forward that address's ports to servers listening on 127.0.0.1 (kube-apiserver, kcp), whose
  certificates name the bridge address too;
- no cluster DNS package and no kube-proxy (it would write iptables rules): `ServiceDNS` on the bridge address
  (the kubelet's --cluster-dns) answers Service and pod names with endpoint addresses;
- the pause image is made locally (PAUSE_IMAGE, from the Python base image) and images are used as present
  (pods must name a tag other than `latest`, which kube would pull always and no registry answers here);
- no cgroups per QoS class, no node-allocatable enforcement, no image garbage collection or disk eviction on a
  machine shared with other work.
"""

from __future__ import annotations

import os
import secrets
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
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path

import pytest
import yaml

from kcp_apiserver.server.pki import ensure_credentials, write_contexts_kubeconfig
from kcp_apiserver.storage.embedded_etcd import etcd_binary
from kcp_process import REPO, ServedFromRoot, free_port

VERSION = "1.20"
SERVICE_CIDR = "10.0.0.0/24"
BRIDGE_CIDR = "172.31.255.1/24"  # the kubelet's dockerd's docker0: pods reach the host at this address
BRIDGE_IP = BRIDGE_CIDR.split("/")[0]
NODE_NAME = "kube-node"
PAUSE_IMAGE = "kcp-pause:e2e"
BASE_IMAGE = "python:3.11-slim"  # scripts/base_images.sh makes it locally
SERVING_HOSTS = ["127.0.0.1", "localhost", BRIDGE_IP, "10.0.0.1", "kubernetes", "kubernetes.default", "kubernetes.default.svc",
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
class KubeControlPlane(ServedFromRoot):
    """etcd + kube-apiserver + kube-controller-manager + kube-scheduler under `root`."""

    root: Path
    bin_dir: Path = field(default_factory=kube_bin_dir)
    port: int = field(default_factory=free_port)
    processes: dict[str, subprocess.Popen[bytes]] = field(default_factory=dict)
    health_ports: dict[str, int] = field(default_factory=dict)

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
        node = f"system:node:{NODE_NAME}"  # the Node authorizer's name for a kubelet (KubeletNode)
        tokens = {"kcp-admin": creds.admin_token, "system:kube-controller-manager": secrets.token_urlsafe(32),
                  "system:kube-scheduler": secrets.token_urlsafe(32), node: secrets.token_urlsafe(32)}
        token_file = self.root / "tokens.csv"
        groups = {"kcp-admin": ',"system:masters"', node: ',"system:nodes"'}  # token,user,uid[,"group,..."]
        token_file.write_text("".join(f"{token},{user},{user}{groups.get(user, '')}\n" for user, token in tokens.items()))
        write_contexts_kubeconfig(self.kubeconfig, [(f"kube-{VERSION}", self.url)], creds)
        for user in ("system:kube-controller-manager", "system:kube-scheduler", node):
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
        """`<component>.kubeconfig` for the controller manager, the scheduler or the node, with its own token."""
        component = user.removeprefix("system:").replace(":", "-")
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


class BridgeRelay:
    """Forwards BRIDGE_IP:port to 127.0.0.1:port: pods reach the host only at the bridge address, and the servers
    of the tests listen on loopback (the bridge address is the host's own: nothing leaves the machine)."""

    def __init__(self, port: int) -> None:
        self.port = port
        self._listener = socket.create_server((BRIDGE_IP, port))
        self._connections: list[socket.socket] = []
        self._closed = False
        threading.Thread(target=self._accept, name=f"relay:{port}", daemon=True).start()

    @property
    def url(self) -> str:
        return f"https://{BRIDGE_IP}:{self.port}"

    def _accept(self) -> None:
        while not self._closed:
            try:
                client, _ = self._listener.accept()
                server = socket.create_connection(("127.0.0.1", self.port))
            except OSError:
                continue
            self._connections += [client, server]
            for source, sink in ((client, server), (server, client)):
                threading.Thread(target=self._pump, args=(source, sink), daemon=True).start()

    @staticmethod
    def _pump(source: socket.socket, sink: socket.socket) -> None:
        try:
            while data := source.recv(65536):
                sink.sendall(data)
        except OSError:
            pass
        finally:
            for sock in (source, sink):
                try:
                    sock.shutdown(socket.SHUT_RDWR)
                except OSError:
                    pass

    def close(self) -> None:
        self._closed = True
        self._listener.close()
        for sock in self._connections:
            sock.close()


class ServiceDNS:
    """A stand-in for cluster DNS on BRIDGE_IP:53 (no CoreDNS package here, and no kube-proxy: iptables stay
    untouched): `<service>.<namespace>.svc[.cluster.local]` answers the Service's endpoint addresses, as a
    headless Service's name would, and `<hostname>.<service>.<namespace>.svc...` one pod's. So a Service works
    for pods only where its port is its target port (the chart's are). Anything else is NXDOMAIN."""

    def __init__(self, cluster: KubeControlPlane) -> None:
        self.cluster = cluster
        self._socket = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
        self._socket.bind((BRIDGE_IP, 53))
        threading.Thread(target=self._serve, name="service-dns", daemon=True).start()

    def close(self) -> None:
        self._socket.close()

    def _serve(self) -> None:
        while True:
            try:
                query, client = self._socket.recvfrom(512)
            except OSError:
                return
            try:
                self._socket.sendto(self._answer(query), client)
            except (OSError, ValueError, IndexError):
                continue

    def _answer(self, query: bytes) -> bytes:
        labels, offset = [], 12
        while query[offset]:
            length = query[offset]
            labels.append(query[offset + 1:offset + 1 + length].decode().lower())
            offset += 1 + length
        qtype = int.from_bytes(query[offset + 1:offset + 3], "big")
        question = query[12:offset + 5]
        addresses = self.lookup(labels)
        if addresses is None:  # NXDOMAIN
            return query[:2] + b"\x81\x83" + b"\x00\x01\x00\x00\x00\x00\x00\x00" + question
        answers = [ip for ip in addresses if qtype == 1]  # A only: no IPv6 here
        records = b"".join(b"\xc0\x0c\x00\x01\x00\x01\x00\x00\x00\x05\x00\x04" + socket.inet_aton(ip)
                           for ip in answers)
        return (query[:2] + b"\x81\x80" + b"\x00\x01" + len(answers).to_bytes(2, "big") + b"\x00\x00\x00\x00"
                + question + records)

    def lookup(self, labels: list[str]) -> list[str] | None:
        if labels[-2:] == ["cluster", "local"]:
            labels = labels[:-2]
        if not labels or labels[-1] != "svc" or len(labels) not in (3, 4):
            return None
        *host, service, namespace = labels[:-1]
        request = urllib.request.Request(f"{self.cluster.url}/api/v1/namespaces/{namespace}/endpoints/{service}",
                                         headers={"Authorization": f"Bearer {self.cluster.token}"})
        try:
            with urllib.request.urlopen(request, context=self.cluster.ssl_context(), timeout=5) as resp:
                endpoints = yaml.safe_load(resp.read())
        except (OSError, urllib.error.HTTPError):
            return None
        found = [address for subset in endpoints.get("subsets") or []
                 for address in [*(subset.get("addresses") or []), *(subset.get("notReadyAddresses") or [])]]
        if host:
            found = [a for a in found if a.get("hostname") == host[0]]
            return [a["ip"] for a in found] or None
        return sorted({a["ip"] for a in found})


@dataclass
class KubeletNode:
    """kubelet 1.20 on the project's dockerd (a root and a docker0 of its own), registered as Node NODE_NAME of
    `cluster`: see the module docstring for what the sandbox needs."""

    cluster: KubeControlPlane
    root: Path
    docker_root: Path = REPO / ".tools" / "docker-kubelet"
    process: subprocess.Popen[bytes] | None = None
    started_dockerd: bool = False
    logs_before: set[Path] = field(default_factory=set)  # the kubelet's fixed /var/log dirs, as they were

    @property
    def docker_env(self) -> dict[str, str]:
        return {**os.environ, "KCP_DOCKERD_ROOT": str(self.docker_root), "KCP_DOCKERD_BRIDGE": BRIDGE_CIDR,
                "KCP_DOCKERD_RUNC": str(REPO / "scripts" / "runc_no_negative_oom.sh"),
                "DOCKER_HOST": f"unix://{self.docker_root}/docker.sock"}

    def docker(self, *args: str, input_text: str | None = None, check: bool = True) -> subprocess.CompletedProcess[str]:
        return subprocess.run(["docker", *args], env=self.docker_env, capture_output=True, text=True,
                              input=input_text, check=check, timeout=600)

    def start(self, timeout: float = START_TIMEOUT) -> None:
        deadline = time.monotonic() + timeout
        try:
            self._start(deadline)
        except BaseException:
            self.stop()
            raise

    def _start(self, deadline: float) -> None:
        dockerd = str(REPO / "scripts" / "dockerd.sh")
        if subprocess.run([dockerd, "status"], env=self.docker_env, capture_output=True).returncode != 0:
            subprocess.run([dockerd, "start"], env=self.docker_env, check=True, capture_output=True, timeout=120)
            self.started_dockerd = True
        # the base images (python:3.11-slim made locally), each only when this dockerd lacks it
        subprocess.run([str(REPO / "scripts" / "base_images.sh"), "docker", sys.executable], cwd=REPO,
                       env=self.docker_env, check=True, capture_output=True, timeout=600)
        self.ensure_image(PAUSE_IMAGE, f'FROM {BASE_IMAGE}\nCMD ["python3", "-c", '
                                       '"import signal, sys; signal.signal(signal.SIGTERM, lambda *_: sys.exit(0)); '
                                       'signal.pause()"]\n')
        self.root.mkdir(parents=True, exist_ok=True)
        self.logs_before = set(_kubelet_logs())
        creds_ca = self.cluster.root / "ca.crt"
        command = [
            str(self.cluster.bin_dir / "kubelet"), "--kubeconfig", str(self.cluster.root / f"node-{NODE_NAME}.kubeconfig"),
            "--container-runtime", "docker", "--docker-endpoint", self.docker_env["DOCKER_HOST"],
            "--pod-infra-container-image", PAUSE_IMAGE, "--hostname-override", NODE_NAME, "--node-ip", BRIDGE_IP,
            "--root-dir", str(self.root / "kubelet"), "--cert-dir", str(self.root / "pki"),
            "--experimental-dockershim-root-directory", str(self.root / "dockershim"),
            "--address", "127.0.0.1", "--port", str(free_port()), "--read-only-port", "0",
            "--healthz-bind-address", "127.0.0.1", "--healthz-port", str(free_port()),
            "--client-ca-file", str(creds_ca), "--anonymous-auth=false", "--authorization-mode", "AlwaysAllow",
            "--fail-swap-on=false", "--cgroup-driver", "cgroupfs", "--cgroups-per-qos=false",
            "--enforce-node-allocatable=", "--image-gc-high-threshold", "100", "--image-gc-low-threshold", "99",
            "--eviction-hard", "memory.available<1Mi", "--serialize-image-pulls=false",
            "--make-iptables-util-chains=false",  # leave the host's network rules alone
            "--cluster-dns", BRIDGE_IP, "--cluster-domain", "cluster.local", "--v", "1"]  # ServiceDNS
        with open(self.root / "kubelet.log", "ab") as log:
            self.process = subprocess.Popen(command, stdout=log, stderr=log, start_new_session=True)
        while not self.node_ready():
            if self.process.poll() is not None or time.monotonic() > deadline:
                raise RuntimeError(f"kubelet: no Ready Node {NODE_NAME} (exit {self.process.poll()}): {self.log_tail()}")
            time.sleep(0.5)

    def ensure_image(self, tag: str, dockerfile: str) -> None:
        """Build `tag` from `dockerfile` (no context) unless the kubelet's dockerd has it."""
        if self.docker("image", "inspect", tag, check=False).returncode == 0:
            return
        self.docker("build", "-t", tag, "-", input_text=dockerfile)

    def build(self, service: str, tag: str) -> None:
        """Build services/<service>/Dockerfile from this checkout as `tag` (docker's layer cache makes a rebuild
        of unchanged code take seconds)."""
        result = subprocess.run(["docker", "build", "--network", "host", "-f", f"services/{service}/Dockerfile",
                                 "-t", tag, "."], cwd=REPO, env={**self.docker_env, "DOCKER_BUILDKIT": "0"},
                                capture_output=True, text=True, timeout=900)
        if result.returncode != 0:
            raise RuntimeError(f"building {tag}: {result.stdout[-2000:]}{result.stderr[-2000:]}")

    def node_ready(self) -> bool:
        request = urllib.request.Request(f"{self.cluster.url}/api/v1/nodes/{NODE_NAME}",
                                         headers={"Authorization": f"Bearer {self.cluster.token}"})
        try:
            with urllib.request.urlopen(request, context=self.cluster.ssl_context(), timeout=5) as resp:
                node = yaml.safe_load(resp.read())
        except (OSError, urllib.error.HTTPError):
            return False
        return any(c.get("type") == "Ready" and c.get("status") == "True"
                   for c in (node.get("status") or {}).get("conditions") or [])

    def log_tail(self, lines: int = 30) -> str:
        path = self.root / "kubelet.log"
        return "\n".join(path.read_text(errors="replace").splitlines()[-lines:]) if path.exists() else ""

    def stop(self) -> None:
        """Stop the kubelet by PID, remove the containers it left, and stop dockerd if this node started it."""
        if self.process is not None and self.process.poll() is None:
            self.process.send_signal(signal.SIGTERM)
            try:
                self.process.wait(STOP_TIMEOUT)
            except subprocess.TimeoutExpired:
                os.killpg(self.process.pid, signal.SIGKILL)
                self.process.wait()
        self.process = None
        if subprocess.run([str(REPO / "scripts" / "dockerd.sh"), "status"], env=self.docker_env,
                          capture_output=True).returncode == 0:
            left = self.docker("ps", "-aq", "--filter", "label=io.kubernetes.pod.name", check=False).stdout.split()
            if left:
                self.docker("rm", "-f", *left, check=False)
            if self.started_dockerd:
                subprocess.run([str(REPO / "scripts" / "dockerd.sh"), "stop"], env=self.docker_env,
                               capture_output=True, timeout=60)
                subprocess.run(["ip", "link", "delete", "docker0"], capture_output=True)  # dockerd leaves it
        for path in set(_kubelet_logs()) - self.logs_before:  # the pods' log dirs and links the kubelet left
            if path.is_dir() and not path.is_symlink():
                shutil.rmtree(path, ignore_errors=True)
            else:
                path.unlink(missing_ok=True)
        # the pods' volumes (tmpfs Secrets) are mounted under the kubelet's root: unmount them, deepest first
        real = str(self.root.resolve()) + "/"
        mounts = [line.split()[1] for line in Path("/proc/mounts").read_text().splitlines()
                  if line.split()[1].startswith(real)]
        for mount in sorted(mounts, reverse=True):
            subprocess.run(["umount", mount], capture_output=True)


def _kubelet_logs() -> list[Path]:
    """What kubelet 1.20 writes outside its root dir: /var/log/pods/<pod> and /var/log/containers/<link>."""
    return [path for folder in (Path("/var/log/pods"), Path("/var/log/containers")) if folder.is_dir()
            for path in folder.iterdir()]


@pytest.fixture(scope="session")
def kubelet_node(kube: KubeControlPlane, tmp_path_factory: pytest.TempPathFactory) -> Iterator[KubeletNode]:
    """A node of the session's real control plane that runs containers (kubelet on dockerd), with a relay from
    the bridge address to the kube-apiserver; stopped (and its containers removed) at the end."""
    node = KubeletNode(kube, tmp_path_factory.mktemp("kubelet"))
    relay = dns = None
    try:
        node.start()
        relay, dns = BridgeRelay(kube.port), ServiceDNS(kube)  # once dockerd has made the bridge
        yield node
    finally:
        for server in (relay, dns):
            if server is not None:
                server.close()
        node.stop()
