"""Non-resource paths as kube serves them, in every logical cluster, and the namespaces
no one may delete: judged by raw HTTP and by the real kubectl."""

from __future__ import annotations

import json

import aiohttp

from api import Api
from kcp_process import KcpServer, run_kubectl


async def test_non_resource_paths_work_under_a_logical_cluster_prefix(kcp: KcpServer, api: Api,
                                                                      unique: str) -> None:
    async with aiohttp.ClientSession() as session:
        anonymous = Api(kcp, session, token="")
        for prefix in ("", f"/clusters/c-{unique}"):
            for path in ("/healthz", "/livez", "/readyz"):
                reply = await anonymous.get(prefix + path)
                assert (reply.status, reply.body) == (200, "ok"), prefix + path
            for path in ("/healthz/ping", "/readyz/etcd", "/livez/ping"):
                assert ((await api.get(prefix + path)).status, (await api.get(prefix + path)).body) == (200, "ok")
                # kube's system:public-info-viewer opens the endpoints, not their single checks
                reply = await anonymous.get(prefix + path)
                assert reply.status == 403 and reply.body["reason"] == "Forbidden", prefix + path
                assert reply.body["message"] == f'forbidden: User "system:anonymous" cannot get path "{path}"'
            for path in ("/version", "/version/"):
                reply = await anonymous.get(prefix + path)
                assert reply.status == 200 and reply.body["gitVersion"].startswith("v1."), prefix + path
            verbose = await anonymous.get(prefix + "/readyz?verbose")
            assert verbose.status == 200 and "[+]etcd ok" in verbose.body and verbose.body.rstrip().endswith(
                "readyz check passed")
            assert (await api.get(prefix + "/livez/no-such-check")).status == 404
            metrics = await api.get(prefix + "/metrics")
            assert metrics.status == 200 and "apiserver_request_total" in metrics.body


def test_kubectl_version_against_a_non_admin_logical_cluster(kcp: KcpServer) -> None:
    out = json.loads(run_kubectl(kcp, "version", "-o", "json", context="user").stdout)
    assert out["serverVersion"]["gitVersion"].startswith("v1.")


async def test_default_kube_system_and_kube_public_cannot_be_deleted(kcp: KcpServer, api: Api, unique: str) -> None:
    cluster = f"/clusters/immortal-{unique}"
    await api.post(f"{cluster}/api/v1/namespaces/default/configmaps", {"metadata": {"name": "born"}})
    for name in ("default", "kube-system", "kube-public"):
        reply = await api.delete(f"{cluster}/api/v1/namespaces/{name}")
        assert reply.status == 403 and reply.body["reason"] == "Forbidden", name
        assert reply.body["message"] == f'namespaces "{name}" is forbidden: this namespace may not be deleted'
    assert (await api.delete(f"{cluster}/api/v1/namespaces/kube-node-lease")).status == 200  # kube lets it go
    result = run_kubectl(kcp, "delete", "namespace", "default", "--wait=false", check=False)
    assert result.returncode != 0 and "this namespace may not be deleted" in result.stderr
    assert (await api.get("/api/v1/namespaces/default")).body["status"]["phase"] == "Active"
