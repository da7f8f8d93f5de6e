"""kcp-apiserver as it runs in containers: its etcd named by a host name (compose's `etcd`, a chart's Service),
and its admin.kubeconfig naming the server as the other containers reach it (--external-hostname)."""

from __future__ import annotations

import subprocess
from collections.abc import Iterator
from pathlib import Path

import pytest
import yaml
from test_process_lifecycle import ExternalEtcd

from kcp_process import KcpServer, free_port, kubectl_binary

EXTERNAL = "kcp-apiserver.example"


@pytest.fixture(scope="module")
def server(tmp_path_factory: pytest.TempPathFactory) -> Iterator[KcpServer]:
    root = tmp_path_factory.mktemp("by-name")
    etcd = ExternalEtcd(root / "etcd")
    etcd.start()
    # upper case: etcd3aio rewrote the lower-case word `localhost` to 127.0.0.1, which hid the bug for it
    kcp = KcpServer(root / "kcp", free_port(), ["--etcd-servers", f"http://LOCALHOST:{etcd.port}",
                                               "--external-hostname", f"{EXTERNAL},127.0.0.1"])
    try:
        kcp.start()
        yield kcp
    finally:
        kcp.stop()
        etcd.stop()


def test_an_etcd_named_by_a_host_name_stores_the_objects(server: KcpServer) -> None:
    created = subprocess.run([kubectl_binary(), "--kubeconfig", str(server.kubeconfig), "--server", server.url,
                              "create", "configmap", "by-name", "--from-literal=k=v"],
                             capture_output=True, text=True, timeout=60)
    assert created.returncode == 0, created.stderr + server.log_tail()


def test_the_admin_kubeconfig_names_the_first_external_hostname(server: KcpServer) -> None:
    kubeconfig = yaml.safe_load(server.kubeconfig.read_text())
    servers = {c["cluster"]["server"] for c in kubeconfig["clusters"]}
    assert servers == {f"https://{EXTERNAL}:{server.port}", f"https://{EXTERNAL}:{server.port}/clusters/user",
                       f"https://{EXTERNAL}:{server.port}/clusters/*"}, servers


def test_the_kubeconfig_works_where_the_name_resolves(server: KcpServer, tmp_path: Path) -> None:
    """Its CA vouches for the name: kubectl verifies the serving certificate against it (no skip-verify)."""
    result = subprocess.run([kubectl_binary(), "--kubeconfig", str(server.kubeconfig), "--server",
                             f"https://127.0.0.1:{server.port}", "--tls-server-name", EXTERNAL,
                             "get", "namespace", "default", "-o", "name"], capture_output=True, text=True, timeout=60)
    assert result.returncode == 0, result.stderr
    assert result.stdout.strip() == "namespace/default"
