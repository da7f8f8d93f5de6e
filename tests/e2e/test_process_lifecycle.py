"""Starting, stopping and restarting: no process left behind, data kept, etcd outages ridden out."""

from __future__ import annotations

import asyncio
import os
import signal
import socket
import subprocess
import time
from pathlib import Path

import aiohttp
import pytest
import yaml

from api import Api, configmap, watching
from kcp_process import KcpServer, free_port, run_kubectl


def _children_of(pid: int) -> list[int]:
    out = subprocess.run(["ps", "-o", "pid=", "--ppid", str(pid)], capture_output=True, text=True).stdout
    return [int(p) for p in out.split()]


def _alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    stat = Path(f"/proc/{pid}/stat")
    return stat.exists() and stat.read_text().split()[2] != "Z"


def test_sigint_stops_etcd_too_and_a_restart_finds_the_data(tmp_path: Path) -> None:
    server = KcpServer(tmp_path / "kcp", free_port())
    server.start()
    try:
        config = yaml.safe_load(server.kubeconfig.read_text())
        assert config["current-context"] == "admin"
        servers = {c["name"]: c["cluster"]["server"] for c in config["clusters"]}
        assert servers["user"].endswith("/clusters/user") and servers["cross-cluster"].endswith("/clusters/*")
        assert all("insecure-skip-tls-verify" not in c["cluster"] for c in config["clusters"])
        run_kubectl(server, "create", "configmap", "survivor", "--from-literal=a=1")
        assert server.process is not None
        etcd_pids = _children_of(server.process.pid)
        assert etcd_pids, "the embedded etcd should be a child process"
        server.process.send_signal(signal.SIGINT)
        assert server.process.wait(30) == 0
        deadline = time.monotonic() + 10
        while any(_alive(p) for p in etcd_pids) and time.monotonic() < deadline:
            time.sleep(0.1)
        assert not any(_alive(p) for p in etcd_pids), "etcd outlived the apiserver"
        ca_before = (server.root / "ca.crt").read_bytes()
        server.start()
        assert (server.root / "ca.crt").read_bytes() == ca_before  # credentials are reused
        got = run_kubectl(server, "get", "configmap", "survivor", "-o", "jsonpath={.data.a}").stdout
        assert got == "1"
    finally:
        server.stop()


def test_help_documents_every_flag() -> None:
    from kcp_process import apiserver_binary

    out = subprocess.run([apiserver_binary(), "--help"], capture_output=True, text=True, check=True).stdout
    for flag in ("--root-dir", "--secure-port", "--etcd-servers", "--bind-address"):
        assert flag in out


class ExternalEtcd:
    """An etcd of the test's own; with `tls` (CA, certificate, key files) it serves clients over mutual TLS."""

    def __init__(self, data_dir: Path, tls: tuple[Path, Path, Path] | None = None, binary: str | None = None) -> None:
        from kcp_apiserver.storage.embedded_etcd import etcd_binary

        self.binary = binary or etcd_binary()
        self.data_dir = data_dir
        self.tls = tls
        self.port, self.peer = free_port(), free_port()
        self.process: subprocess.Popen[bytes] | None = None

    @property
    def url(self) -> str:
        return f"{'https' if self.tls else 'http'}://127.0.0.1:{self.port}"

    def start(self) -> None:
        client, peer = self.url, f"http://127.0.0.1:{self.peer}"
        tls_args: list[str] = []
        if self.tls is not None:
            ca, cert, key = self.tls
            tls_args = ["--trusted-ca-file", str(ca), "--cert-file", str(cert), "--key-file", str(key),
                        "--client-cert-auth"]
        self.process = subprocess.Popen(
            [self.binary, "--data-dir", str(self.data_dir), "--listen-client-urls", client,
             "--advertise-client-urls", client, "--listen-peer-urls", peer, "--initial-advertise-peer-urls", peer,
             "--initial-cluster", f"default={peer}", "--log-level", "error", *tls_args],
            stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
        deadline = time.monotonic() + 20
        while True:  # serving once it accepts connections
            try:
                socket.create_connection(("127.0.0.1", self.port), 0.2).close()
                return
            except OSError:
                assert self.process.poll() is None, f"etcd exited with {self.process.returncode}"
                assert time.monotonic() < deadline, f"etcd did not listen on 127.0.0.1:{self.port} within 20s"
                time.sleep(0.1)

    def stop(self) -> None:
        if self.process is not None:
            self.process.terminate()
            self.process.wait(10)


@pytest.mark.timeout(120)
async def test_server_rides_out_an_etcd_restart(tmp_path: Path) -> None:
    etcd = ExternalEtcd(tmp_path / "etcd")
    etcd.start()
    server = KcpServer(tmp_path / "kcp", free_port(), ["--etcd-servers", f"http://127.0.0.1:{etcd.port}"])
    try:
        server.start()
        async with aiohttp.ClientSession() as session:
            api = Api(server, session)
            path = "/api/v1/namespaces/default/configmaps"
            rv = (await api.post(path, configmap("before"))).body["metadata"]["resourceVersion"]
            watch = await watching(api, path, {"resourceVersion": rv, "timeoutSeconds": "60"}, 2, timeout=60)
            await api.post(path, configmap("during-1"))
            etcd.stop()
            reply = await api.get(f"{path}/before")
            assert reply.status == 503 and reply.body["kind"] == "Status"
            etcd.start()
            for _ in range(100):
                reply = await api.post(path, configmap("after"))
                if reply.status == 201:
                    break
                await asyncio.sleep(0.2)
            assert reply.status == 201
            events = await asyncio.wait_for(watch, 30)
            assert [e["object"]["metadata"]["name"] for e in events] == ["during-1", "after"]
    finally:
        server.stop()
        etcd.stop()


async def test_etcd_is_compacted_periodically_and_old_revisions_expire(tmp_path: Path) -> None:
    server = KcpServer(tmp_path / "kcp", free_port(), ["--compaction-interval", "1"])
    server.start()
    try:
        async with aiohttp.ClientSession() as session:
            api = Api(server, session)
            path = "/api/v1/namespaces/default/configmaps"
            old = (await api.post(path, configmap("c"))).body
            await api.put(f"{path}/c", dict(old, data={"k": "new"}))
            reply = None
            for _ in range(50):
                await asyncio.sleep(0.2)
                reply = await api.get(path, params={"resourceVersion": old["metadata"]["resourceVersion"],
                                                    "resourceVersionMatch": "Exact"})
                if reply.status == 410:
                    break
            assert reply is not None and reply.status == 410 and reply.body["reason"] == "Expired"
    finally:
        server.stop()
