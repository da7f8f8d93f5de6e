"""Reserved API groups and storage, judged by the real kubectl, and a restart over bad CRD data."""

from __future__ import annotations

import asyncio
import json
import time
from pathlib import Path
from typing import Any

import aiohttp
import orjson
import pytest
import yaml
from etcd3aio import Etcd3Client
from test_crds import CRD_PATH, kubectl, served, wait_established, widget_crd
from test_process_lifecycle import ExternalEtcd

from api import Api
from kcp_process import KcpServer, free_port

OPEN = {"type": "object", "x-kubernetes-preserve-unknown-fields": True}


def crd(group: str, plural: str, kind: str, *, version: str = "v1", scope: str = "Namespaced") -> dict[str, Any]:
    return {"apiVersion": "apiextensions.k8s.io/v1", "kind": "CustomResourceDefinition",
            "metadata": {"name": f"{plural}.{group}"},
            "spec": {"group": group, "scope": scope, "names": {"plural": plural, "kind": kind},
                     "versions": [{"name": version, "served": True, "storage": True,
                                   "schema": {"openAPIV3Schema": {"type": "object", "properties": {"spec": OPEN}}}}]}}


def apply(kcp: KcpServer, cluster: str, manifest: dict[str, Any]) -> tuple[int, str]:
    result = kubectl(kcp.kubeconfig, "--server", f"{kcp.url}/clusters/{cluster}", "apply", "-f", "-",
                     input_text=yaml.safe_dump(manifest), check=False)
    return result.returncode, result.stderr.strip()


def test_kubectl_apply_in_a_protected_kube_group_shows_kubes_error(kcp: KcpServer, unique: str) -> None:
    group = f"x{unique}.k8s.io"
    code, err = apply(kcp, f"kube-{unique}", crd(group, "widgets", "Widget"))
    assert code == 1
    assert err == (f'The CustomResourceDefinition "widgets.{group}" is invalid: '
                   "metadata.annotations[api-approved.kubernetes.io]: Required value: protected groups must have "
                   'approval annotation "api-approved.kubernetes.io", see '
                   "https://github.com/kubernetes/enhancements/pull/1111")
    approved = crd(group, "widgets", "Widget")
    approved["metadata"]["annotations"] = {"api-approved.kubernetes.io": "unapproved, experimental"}
    code, err = apply(kcp, f"kube-{unique}", approved)
    assert code == 0, err


def test_kubectl_apply_in_kcps_groups_or_over_the_servers_storage_is_forbidden(kcp: KcpServer, unique: str) -> None:
    code, err = apply(kcp, f"kcp-{unique}", crd("kcp.io", "logicalclusters", "LogicalCluster", scope="Cluster"))
    assert code == 1
    assert err == ('Error from server (Forbidden): error when creating "STDIN": customresourcedefinitions.'
                   'apiextensions.k8s.io "logicalclusters.kcp.io" is forbidden: kcp.io is a reserved group')
    over_crds = crd("apiextensions.k8s.io", "customresourcedefinitions", "CustomResourceDefinition", version="v2",
                    scope="Cluster")
    over_crds["metadata"]["annotations"] = {"api-approved.kubernetes.io": "unapproved, hostile"}
    code, err = apply(kcp, f"kcp-{unique}", over_crds)
    assert code == 1
    assert err.endswith('"customresourcedefinitions.apiextensions.k8s.io" is forbidden: the API server stores '
                        "customresourcedefinitions.apiextensions.k8s.io itself"), err


def test_kubectl_applies_kcps_system_crd_as_the_admin(kcp: KcpServer, unique: str) -> None:
    """The cluster controller installs SyncTargets' CRD with the admin identity."""
    cluster = f"sys-{unique}"
    code, err = apply(kcp, cluster, crd("workload.kcp.io", "synctargets", "SyncTarget", version="v1alpha1",
                                        scope="Cluster"))
    assert code == 0, err
    waited = kubectl(kcp.kubeconfig, "--server", f"{kcp.url}/clusters/{cluster}", "wait", "--for",
                     "condition=Established", "crd/synctargets.workload.kcp.io", "--timeout=15s", check=False)
    assert waited.returncode == 0, waited.stderr


async def put_raw(endpoint: str, key: str, obj: dict[str, Any]) -> None:
    client = Etcd3Client([endpoint])
    await client.connect()
    try:
        assert client.kv is not None
        await client.kv.put(key, orjson.dumps(obj))
    finally:
        await client.close()


@pytest.mark.timeout(180)
async def test_the_server_restarts_over_crds_it_cannot_serve(tmp_path: Path) -> None:
    """Data an older version stored (a CRD over the logical-cluster markers, an object among the CRDs)
    must neither keep the server from starting nor stop CRD serving in other logical clusters."""
    etcd = ExternalEtcd(tmp_path / "etcd")
    etcd.start()
    endpoint = f"127.0.0.1:{etcd.port}"
    server = KcpServer(tmp_path / "kcp", free_port(), ["--etcd-servers", f"http://{endpoint}"])
    try:
        server.start()
        async with aiohttp.ClientSession() as session:
            api = Api(server, session)
            reply = await api.post(f"/clusters/good{CRD_PATH}", widget_crd("good.example.com"))
            assert reply.status == 201, reply.body
            await wait_established(api, "/clusters/good", "widgets.good.example.com", timeout=15)
        assert server.stop() == 0, server.log_tail()

        crds = "/registry/apiextensions.k8s.io/customresourcedefinitions/"
        markers = crd("kcp.io", "logicalclusters", "LogicalCluster", scope="Cluster")
        markers["metadata"]["annotations"] = {"kcp.io/cluster": "old"}
        markers["status"] = {"acceptedNames": markers["spec"]["names"], "storedVersions": ["v1"], "conditions": [
            {"type": "Established", "status": "True", "reason": "InitialNamesAccepted", "message": "",
             "lastTransitionTime": "2024-01-01T00:00:00Z"}]}
        await put_raw(endpoint, f"{crds}old/logicalclusters.kcp.io", markers)
        # what a tenant's own `customresourcedefinitions.apiextensions.k8s.io` at v2 stored: its object,
        # among every logical cluster's CRDs, shaped as the tenant liked
        await put_raw(endpoint, f"{crds}old/mine", {"apiVersion": "apiextensions.k8s.io/v2",
                                                    "kind": "CustomResourceDefinition",
                                                    "metadata": {"name": "mine",
                                                                 "annotations": {"kcp.io/cluster": "old"}},
                                                    "spec": {"names": {"plural": "mines", "kind": "Mine"}},
                                                    "status": markers["status"]})

        server.start()  # fails with a traceback if a stored CRD can stop startup
        async with aiohttp.ClientSession() as session:
            api = Api(server, session)
            await served(api, "/clusters/good/apis/good.example.com/v1/namespaces/default/widgets", 15)
            reply = await api.post(f"/clusters/new{CRD_PATH}", widget_crd("new.example.com"))
            assert reply.status == 201, reply.body
            await wait_established(api, "/clusters/new", "widgets.new.example.com", timeout=15)
            await served(api, "/clusters/new/apis/new.example.com/v1/namespaces/default/widgets", 15)
            for name in ("logicalclusters.kcp.io", "mine"):
                established = await wait_condition(api, f"/clusters/old{CRD_PATH}/{name}", "False")
                assert established["reason"] in ("ReservedStorage", "InvalidSpec"), established
            assert (await api.get("/clusters/*/apis/kcp.io/v1/logicalclusters")).status == 404
        log = [json.loads(line) for line in (server.root / "apiserver.log").read_text().splitlines()
               if line.startswith("{")]
        assert {e.get("name") for e in log if e.get("event") == "not serving a CRD"} >= {
            "logicalclusters.kcp.io", "mine"}
    finally:
        if server.process is not None and server.process.poll() is None:
            server.stop()
        etcd.stop()


async def wait_condition(api: Api, path: str, status: str, timeout: float = 15.0) -> dict[str, Any]:
    """The Established condition once it has this status."""
    deadline = time.monotonic() + timeout
    found: dict[str, Any] = {}
    while time.monotonic() < deadline:
        body = (await api.get(path)).body
        found = next((c for c in (body.get("status") or {}).get("conditions") or []
                      if c.get("type") == "Established"), {})
        if found.get("status") == status:
            return found
        await asyncio.sleep(0.05)
    raise AssertionError(f"Established never {status} on {path}: {found}")
