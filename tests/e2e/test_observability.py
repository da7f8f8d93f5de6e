"""Logs, metrics, health, discovery and OpenAPI documents as clients and operators see them."""

from __future__ import annotations

import asyncio
import json
import time

from api import Api, configmap
from kcp_process import KcpServer, run_kubectl


async def test_requests_are_counted_and_timed_in_metrics(api: Api, namespace: str) -> None:
    await api.post(f"/api/v1/namespaces/{namespace}/configmaps", configmap("m"))
    text = (await api.get("/metrics")).body
    assert 'apiserver_request_total{code="201",resource="configmaps",verb="create"}' in text
    assert 'apiserver_request_duration_seconds_bucket{le="0.005",resource="configmaps",verb="create"}' in text
    assert "apiserver_registered_watchers" in text


async def test_the_namespace_controller_reports_its_reconciles_queue_and_object_in_metrics_and_logs(
        kcp: KcpServer, api: Api, unique: str) -> None:
    name = f"gone-{unique}"
    assert (await api.post("/api/v1/namespaces", {"apiVersion": "v1", "kind": "Namespace",
                                                   "metadata": {"name": name}})).status == 201
    assert (await api.delete(f"/api/v1/namespaces/{name}")).status == 200
    deadline = time.monotonic() + 30
    while (await api.get(f"/api/v1/namespaces/{name}")).status != 404:
        assert time.monotonic() < deadline, "the namespace controller did not remove the namespace"
        await asyncio.sleep(0.1)
    text = (await api.get("/metrics")).body
    assert _sample(text, 'kcp_apiserver_reconcile_total{controller="namespace",result="success"}') >= 1
    assert _sample(text, 'kcp_apiserver_reconcile_time_seconds_count{controller="namespace"}') >= 1
    assert _sample(text, 'workqueue_adds_total{name="namespace"}') >= 1
    assert _sample(text, 'workqueue_depth{name="namespace"}') == 0
    lines = [json.loads(line) for line in (kcp.root / "apiserver.log").read_text().splitlines() if line.startswith("{")]
    finalized = [e for e in lines if e.get("event") == "namespace finalized" and e.get("name") == name]
    assert finalized and finalized[0]["controller"] == "namespace" and finalized[0]["cluster"] == "admin"


def _sample(text: str, series: str) -> float:
    """The value of one exposition line, e.g. `name{labels}`; fails when the series is missing."""
    for line in text.splitlines():
        if line.startswith(series + " "):
            return float(line.rsplit(" ", 1)[1])
    raise AssertionError(f"{series} not in /metrics")


async def test_each_request_is_logged_as_json_without_secrets(kcp: KcpServer, api: Api, namespace: str) -> None:
    secret_value = "s3cr3t-value-that-must-not-leak"
    run_kubectl(kcp, "-n", namespace, "create", "secret", "generic", "leak", f"--from-literal=pw={secret_value}")
    await api.get(f"/api/v1/namespaces/{namespace}/secrets/leak")
    log_text = (kcp.root / "apiserver.log").read_text()
    assert secret_value not in log_text and kcp.token not in log_text
    import base64

    assert base64.b64encode(secret_value.encode()).decode() not in log_text
    lines = [json.loads(line) for line in log_text.splitlines() if line.startswith("{")]
    requests = [entry for entry in lines if entry.get("event") == "request"
                and entry.get("path") == f"/api/v1/namespaces/{namespace}/secrets/leak"]
    assert requests
    assert {"method", "path", "cluster", "code", "latency_ms", "verb", "resource"} <= set(requests[-1])
    assert requests[-1]["cluster"] == "admin" and requests[-1]["code"] == 200


async def test_health_endpoints_and_version_are_public(kcp: KcpServer) -> None:
    import aiohttp

    async with aiohttp.ClientSession() as session:
        anonymous = Api(kcp, session, token="")
        for path in ("/healthz", "/livez", "/readyz"):
            reply = await anonymous.get(path)
            assert reply.status == 200 and reply.body == "ok"
        version = await anonymous.get("/version")
        assert version.body["major"] == "1" and version.body["gitVersion"].startswith("v1.")
        assert (await anonymous.get("/api")).status == 401


async def test_aggregated_and_legacy_discovery_agree(api: Api) -> None:
    accept = "application/json;g=apidiscovery.k8s.io;v=v2;as=APIGroupDiscoveryList,application/json"
    aggregated = await api.get("/apis", headers={"Accept": accept})
    assert aggregated.headers["Content-Type"].startswith("application/json;g=apidiscovery.k8s.io;v=v2")
    groups = {item["metadata"]["name"]: item for item in aggregated.body["items"]}
    legacy = await api.get("/apis")
    assert set(groups) == {g["name"] for g in legacy.body["groups"]}
    rbac = await api.get("/apis/rbac.authorization.k8s.io/v1")
    legacy_names = {r["name"] for r in rbac.body["resources"] if "/" not in r["name"]}
    aggregated_names = {r["resource"] for r in groups["rbac.authorization.k8s.io"]["versions"][0]["resources"]}
    assert legacy_names == aggregated_names == {"roles", "rolebindings", "clusterroles", "clusterrolebindings"}
    core = await api.get("/api", headers={"Accept": accept})
    core_resources = {r["resource"] for r in core.body["items"][0]["versions"][0]["resources"]}
    assert {"namespaces", "configmaps", "secrets", "serviceaccounts", "events"} <= core_resources


async def test_openapi_v2_is_served_as_protobuf_and_json(api: Api) -> None:
    pb = await api.get("/openapi/v2", headers={"Accept": "application/com.github.proto-openapi.spec.v2@v1.0+protobuf"})
    assert pb.status == 200 and "protobuf" in pb.headers["Content-Type"]
    as_json = await api.get("/openapi/v2")
    definitions = as_json.body["definitions"]
    assert definitions["io.k8s.api.core.v1.ConfigMap"]["x-kubernetes-group-version-kind"] == [
        {"group": "", "version": "v1", "kind": "ConfigMap"}]
    post = as_json.body["paths"]["/api/v1/namespaces/{namespace}/configmaps"]["post"]
    assert "fieldValidation" in {p["name"] for p in post["parameters"]}


def test_kubectl_explain_uses_openapi_v3(kcp: KcpServer) -> None:
    out = run_kubectl(kcp, "explain", "configmap.data").stdout
    assert "FIELD: data" in out and "map[string]string" in out


def test_builtin_tables_carry_kube_columns(kcp: KcpServer, namespace: str) -> None:
    run_kubectl(kcp, "-n", namespace, "create", "secret", "generic", "cols", "--from-literal=a=b")
    header = run_kubectl(kcp, "-n", namespace, "get", "secrets").stdout.splitlines()[0].split()
    assert header == ["NAME", "TYPE", "DATA", "AGE"]
    run_kubectl(kcp, "-n", namespace, "create", "rolebinding", "rb", "--clusterrole=view", "--user=alice")
    wide = run_kubectl(kcp, "-n", namespace, "get", "rolebindings", "-o", "wide").stdout.splitlines()
    assert wide[0].split() == ["NAME", "ROLE", "AGE", "USERS", "GROUPS", "SERVICEACCOUNTS"]
    assert "ClusterRole/view" in wide[1] and "alice" in wide[1]
