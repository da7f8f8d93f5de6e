"""KubeClientFactory: any Kubernetes server at its kubeconfig's URL, from a file or from kubeconfig text."""

from __future__ import annotations

import base64
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest
import yaml
from kubernetes_asyncio import client as kube
from kubernetes_asyncio.client import Configuration

from kcp_process import KcpServer
from kcpcommon import errors
from kcpcommon.clients import ClientFactory, KubeClientFactory

pytestmark = pytest.mark.usefixtures("no_leaked_tasks")

OPTIONS: dict[str, Any] = {"component": "kcpcommon-tests", "version": "0"}


def names(listed: dict[str, Any]) -> set[str]:
    return {item["metadata"]["name"] for item in listed["items"]}


def configmap(name: str) -> dict[str, Any]:
    return {"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": name}}


async def test_a_kubeconfig_file_reaches_its_server_without_a_logical_cluster_prefix(
        kcp: KcpServer, clients: ClientFactory, namespace: str) -> None:
    assert "/clusters/" not in kcp.url
    async with await KubeClientFactory.load(kcp.kubeconfig, name="physical", **OPTIONS) as factory:
        assert factory.server == kcp.url
        assert factory.api_client().configuration.host == kcp.url
        listed = await factory.dynamic().resource("v1", "namespaces", namespaced=False).list()
        async with errors.translate():
            typed = await kube.CoreV1Api(factory.api_client()).list_namespace()
    # the server's own (default) cluster: what the logical-cluster client sees as `admin`
    assert {"default", namespace} <= names(listed)
    assert {n.metadata.name for n in typed.items} == names(listed)


async def test_kubeconfig_text_reaches_its_server(kcp: KcpServer, namespace: str) -> None:
    text = kcp.kubeconfig.read_text()
    async with await KubeClientFactory.from_text(text, name="physical", **OPTIONS) as factory:
        listed = await factory.dynamic().resource("v1", "namespaces", namespaced=False).list()
    assert {"default", namespace} <= names(listed)


async def test_the_server_path_is_part_of_the_address(
        kcp: KcpServer, clients: ClientFactory, unique: str, kubeconfig_text: Callable[..., str]) -> None:
    """A kcp-sim-cluster (or a proxy) serves a cluster under a path: requests keep it, nothing is added."""
    here, elsewhere = f"sim-{unique}", f"other-{unique}"
    await clients.dynamic(here).resource("v1", "configmaps", namespaced=True).create(configmap("here"),
                                                                                     namespace="default")
    await clients.dynamic(elsewhere).resource("v1", "configmaps", namespaced=True).create(configmap("elsewhere"),
                                                                                          namespace="default")
    text = kubeconfig_text(kcp, path=f"/clusters/{here}/")
    async with await KubeClientFactory.from_text(text, name=here, **OPTIONS) as factory:
        assert factory.server == f"{kcp.url}/clusters/{here}"
        configmaps = factory.dynamic().resource("v1", "configmaps", namespaced=True)
        assert names(await configmaps.list(namespace="default")) == {"here"}
        with pytest.raises(errors.APINotFoundError):
            await configmaps.get("elsewhere", namespace="default")


async def test_a_physical_cluster_answers_only_to_its_own_name(kcp: KcpServer) -> None:
    async with await KubeClientFactory.load(kcp.kubeconfig, name="east", **OPTIONS) as factory:
        assert factory.api_client() is factory.api_client("east")
        with pytest.raises(ValueError, match="east"):
            factory.api_client("west")
        with pytest.raises(ValueError):
            factory.dynamic("*")
    for bad in ("", "*", "a|b", "a/b"):
        with pytest.raises(ValueError):
            KubeClientFactory(Configuration(host=kcp.url), name=bad, **OPTIONS)


TOKEN = "s3cret-token-never-echoed"


def valid_config(server: str = "https://127.0.0.1:6443", **cluster: str) -> dict[str, Any]:
    return {"apiVersion": "v1", "kind": "Config", "current-context": "c",
            "clusters": [{"name": "c", "cluster": {"server": server, **cluster}}],
            "users": [{"name": "u", "user": {"token": TOKEN}}],
            "contexts": [{"name": "c", "context": {"cluster": "c", "user": "u"}}]}


def without_server() -> dict[str, Any]:
    config = valid_config()
    del config["clusters"][0]["cluster"]["server"]
    return config


@pytest.mark.parametrize("text", [
    pytest.param(f"users:\n- name: u\n  user: {{token: {TOKEN}\n", id="not-yaml"),
    pytest.param("- a\n- b\n", id="not-a-mapping"),
    pytest.param("/etc/kubernetes/admin.conf", id="a-path-is-not-text"),
    pytest.param("apiVersion: v1\nkind: Config\n", id="no-contexts"),
    pytest.param(yaml.safe_dump(without_server()), id="no-server"),
    pytest.param(yaml.safe_dump(valid_config(server="kcp.example.com")), id="server-not-a-url"),
    pytest.param(yaml.safe_dump({**valid_config(), "contexts": ["c"]}), id="malformed-contexts"),
    pytest.param(yaml.safe_dump(valid_config(**{"certificate-authority-data": base64.b64encode(b"junk").decode()})),
                 id="unusable-ca"),
])
async def test_a_kubeconfig_that_does_not_load_raises_invalid_kubeconfig(text: str) -> None:
    with pytest.raises(errors.InvalidKubeconfigError) as caught:
        await KubeClientFactory.from_text(text, name="bad", **OPTIONS)
    assert caught.value.reason == "InvalidKubeConfig"
    assert TOKEN not in str(caught.value)
    assert isinstance(caught.value, ValueError)


async def test_a_missing_file_or_context_raises_invalid_kubeconfig(kcp: KcpServer, tmp_path: Path) -> None:
    with pytest.raises(errors.InvalidKubeconfigError, match="no-such-file"):
        await KubeClientFactory.load(tmp_path / "no-such-file", name="bad", **OPTIONS)
    with pytest.raises(errors.InvalidKubeconfigError):
        await KubeClientFactory.from_text(kcp.kubeconfig.read_text(), context="no-such-context", name="bad",
                                          **OPTIONS)
    with pytest.raises(errors.InvalidKubeconfigError):  # the logical-cluster factory shares the loader
        await ClientFactory.from_text("- not a kubeconfig\n", **OPTIONS)
