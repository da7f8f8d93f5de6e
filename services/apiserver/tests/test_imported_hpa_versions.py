"""An HorizontalPodAutoscaler imported at autoscaling/v2 is served at autoscaling/v1 too, as kube serves it:
the same objects, converted both ways (v1's targetCPUUtilizationPercentage is v2's cpu Utilization metric),
v2 preferred in discovery, v1 writes judged by kube's validation."""

from __future__ import annotations

import asyncio
import time
import uuid
from collections.abc import AsyncIterator
from typing import Any

import orjson
import pytest
from aiohttp.test_utils import TestClient, TestServer

from kcp_apiserver.apiextensions.resources import resources_for
from kcp_apiserver.server.app import APIServer
from kcp_apiserver.server.kcp import kcp_config
from kcpcommon.kubetypes import IMPORTED_LABEL

Obj = dict[str, Any]
ADMIN = {"Authorization": "Bearer admin-token"}
CRDS = "/apis/apiextensions.k8s.io/v1/customresourcedefinitions"
OPEN = {"type": "object", "x-kubernetes-preserve-unknown-fields": True}
SCHEMA = {"type": "object", "properties": {"metadata": {"type": "object"}, "spec": OPEN, "status": OPEN}}


def hpa_crd() -> Obj:
    return {"apiVersion": "apiextensions.k8s.io/v1", "kind": "CustomResourceDefinition",
            "metadata": {"name": "horizontalpodautoscalers.autoscaling", "labels": {IMPORTED_LABEL: "true"}},
            "spec": {"group": "autoscaling", "scope": "Namespaced",
                     "names": {"plural": "horizontalpodautoscalers", "singular": "horizontalpodautoscaler",
                               "kind": "HorizontalPodAutoscaler", "shortNames": ["hpa"], "categories": ["all"]},
                     "versions": [{"name": "v2", "served": True, "storage": True, "subresources": {"status": {}},
                                   "schema": {"openAPIV3Schema": SCHEMA}}]}}


def v1_hpa(name: str, cpu: int | None = 70, **spec: Any) -> Obj:
    s: Obj = {"scaleTargetRef": {"apiVersion": "apps/v1", "kind": "Deployment", "name": "web"}, "maxReplicas": 3,
              **spec}
    if cpu is not None:
        s["targetCPUUtilizationPercentage"] = cpu
    return {"apiVersion": "autoscaling/v1", "kind": "HorizontalPodAutoscaler", "metadata": {"name": name},
            "spec": s}


def test_the_crd_serves_v2_and_then_v1_over_the_same_storage() -> None:
    v2, v1 = resources_for(hpa_crd())
    assert (v2.version, v1.version) == ("v2", "v1")  # discovery lists v2 first: the preferred version
    assert v1.prefix == v2.prefix and v1.storage_api_version == "autoscaling/v2"
    assert v1.definition == "io.k8s.api.autoscaling.v1.HorizontalPodAutoscaler" and v1.schema is None
    assert v1.strategy is v2.strategy and v1.short_names == ("hpa",)


def test_a_crd_that_is_not_imported_serves_only_its_own_versions() -> None:
    crd = hpa_crd()
    crd["metadata"]["labels"] = {}
    assert [r.version for r in resources_for(crd)] == ["v2"]


def test_a_crd_serving_v1_itself_keeps_its_own() -> None:
    crd = hpa_crd()
    crd["spec"]["versions"].append({"name": "v1", "served": True, "storage": False,
                                    "schema": {"openAPIV3Schema": SCHEMA}})
    assert [(r.version, r.schema is not None, r.from_storage) for r in resources_for(crd)] == [
        ("v2", True, None), ("v1", True, None)]


@pytest.fixture
async def kcp(etcd_endpoint: str) -> AsyncIterator[TestClient[Any, Any]]:
    server = APIServer(kcp_config([etcd_endpoint], "admin-token", identity=f"hpav1-{uuid.uuid4().hex[:6]}"))
    await server.start()
    client = TestClient(TestServer(server.app()))
    await client.start_server()
    try:
        yield client
    finally:
        await client.close()
        await server.stop()


@pytest.fixture
async def cluster(kcp: TestClient[Any, Any]) -> str:
    prefix = f"/clusters/hpa-{uuid.uuid4().hex[:8]}"
    resp = await kcp.post(f"{prefix}{CRDS}", json=hpa_crd(), headers=ADMIN)
    assert resp.status == 201, await resp.text()
    deadline = time.monotonic() + 10
    while (await kcp.get(f"{prefix}/apis/autoscaling/v1/horizontalpodautoscalers", headers=ADMIN)).status != 200:
        assert time.monotonic() < deadline, "autoscaling/v1 was never served"
        await asyncio.sleep(0.05)
    return prefix


def hpas(prefix: str, version: str) -> str:
    return f"{prefix}/apis/autoscaling/{version}/namespaces/default/horizontalpodautoscalers"


async def test_a_v1_hpa_is_read_at_v2_with_its_cpu_metric(kcp: TestClient[Any, Any], cluster: str) -> None:
    resp = await kcp.post(hpas(cluster, "v1"), json=v1_hpa("web"), headers=ADMIN)
    created = await resp.json()
    assert resp.status == 201, created
    assert created["apiVersion"] == "autoscaling/v1" and created["spec"]["targetCPUUtilizationPercentage"] == 70
    assert created["spec"]["minReplicas"] == 1
    v2 = await (await kcp.get(f"{hpas(cluster, 'v2')}/web", headers=ADMIN)).json()
    assert v2["apiVersion"] == "autoscaling/v2" and v2["metadata"]["uid"] == created["metadata"]["uid"]
    assert v2["spec"]["metrics"] == [{"type": "Resource", "resource": {
        "name": "cpu", "target": {"type": "Utilization", "averageUtilization": 70}}}]
    assert "targetCPUUtilizationPercentage" not in v2["spec"]


async def test_a_v1_hpa_without_a_target_gets_kubes_default_of_80(kcp: TestClient[Any, Any], cluster: str) -> None:
    resp = await kcp.post(hpas(cluster, "v1"), json=v1_hpa("web", cpu=None), headers=ADMIN)
    assert resp.status == 201, await resp.text()
    assert (await resp.json())["spec"]["targetCPUUtilizationPercentage"] == 80


async def test_a_v2_hpa_is_read_at_v1_with_its_other_metrics_in_an_annotation(kcp: TestClient[Any, Any],
                                                                             cluster: str) -> None:
    pods = {"type": "Pods", "pods": {"metric": {"name": "qps"}, "target": {"type": "AverageValue",
                                                                          "averageValue": "10"}}}
    cpu = {"type": "Resource", "resource": {"name": "cpu", "target": {"type": "Utilization",
                                                                      "averageUtilization": 50}}}
    hpa = {"apiVersion": "autoscaling/v2", "kind": "HorizontalPodAutoscaler", "metadata": {"name": "api"},
           "spec": {"scaleTargetRef": {"apiVersion": "apps/v1", "kind": "Deployment", "name": "api"},
                    "maxReplicas": 5, "metrics": [pods, cpu]}}
    resp = await kcp.post(hpas(cluster, "v2"), json=hpa, headers=ADMIN)
    assert resp.status == 201, await resp.text()
    v1 = await (await kcp.get(f"{hpas(cluster, 'v1')}/api", headers=ADMIN)).json()
    assert v1["apiVersion"] == "autoscaling/v1" and v1["spec"]["targetCPUUtilizationPercentage"] == 50
    assert "metrics" not in v1["spec"]
    assert orjson.loads(v1["metadata"]["annotations"]["autoscaling.alpha.kubernetes.io/metrics"]) == [
        {"type": "Pods", "pods": {"metricName": "qps", "targetAverageValue": "10"}}]
    # what a v1 client writes back loses nothing: the pods metric is still there at v2
    v1["spec"]["maxReplicas"] = 6
    resp = await kcp.put(f"{hpas(cluster, 'v1')}/api", json=v1, headers=ADMIN)
    assert resp.status == 200, await resp.text()
    v2 = await (await kcp.get(f"{hpas(cluster, 'v2')}/api", headers=ADMIN)).json()
    assert v2["spec"]["maxReplicas"] == 6 and v2["spec"]["metrics"] == [pods, cpu]
    assert not [k for k in v2["metadata"].get("annotations") or {} if k.startswith("autoscaling.alpha")]


async def test_list_and_watch_at_v1_show_every_object_in_v1(kcp: TestClient[Any, Any], cluster: str) -> None:
    resp = await kcp.post(hpas(cluster, "v2"), json={
        "apiVersion": "autoscaling/v2", "kind": "HorizontalPodAutoscaler", "metadata": {"name": "a"},
        "spec": {"scaleTargetRef": {"kind": "Deployment", "name": "a"}, "maxReplicas": 2}}, headers=ADMIN)
    assert resp.status == 201, await resp.text()
    listed = await (await kcp.get(hpas(cluster, "v1"), headers=ADMIN)).json()
    assert listed["kind"] == "HorizontalPodAutoscalerList" and listed["apiVersion"] == "autoscaling/v1"
    [item] = listed["items"]
    assert item["apiVersion"] == "autoscaling/v1" and item["spec"]["targetCPUUtilizationPercentage"] == 80
    watch = await kcp.get(hpas(cluster, "v1"), params={"watch": "1", "resourceVersion": listed["metadata"][
        "resourceVersion"], "timeoutSeconds": "10"}, headers=ADMIN)
    resp = await kcp.post(hpas(cluster, "v1"), json=v1_hpa("b", cpu=65), headers=ADMIN)
    assert resp.status == 201, await resp.text()
    event = orjson.loads(await asyncio.wait_for(watch.content.readline(), 10))
    watch.close()
    assert event["type"] == "ADDED" and event["object"]["apiVersion"] == "autoscaling/v1"
    assert event["object"]["metadata"]["name"] == "b"
    assert event["object"]["spec"]["targetCPUUtilizationPercentage"] == 65


async def test_a_v1_write_is_validated_as_kube_validates_it(kcp: TestClient[Any, Any], cluster: str) -> None:
    resp = await kcp.post(hpas(cluster, "v1"), json=v1_hpa("web", cpu=0), headers=ADMIN)
    status = await resp.json()
    assert resp.status == 422, status
    assert [c["field"] for c in status["details"]["causes"]] == ["spec.metrics[0].resource.target.averageUtilization"]
    resp = await kcp.post(hpas(cluster, "v1"), json=v1_hpa("web", minReplicas=4), headers=ADMIN)
    status = await resp.json()
    assert resp.status == 422 and status["details"]["causes"][0]["field"] == "spec.maxReplicas", status


async def test_discovery_prefers_v2_and_lists_v1(kcp: TestClient[Any, Any], cluster: str) -> None:
    group = await (await kcp.get(f"{cluster}/apis/autoscaling", headers=ADMIN)).json()
    assert [v["version"] for v in group["versions"]] == ["v2", "v1"]
    assert group["preferredVersion"]["version"] == "v2"
    listed = await (await kcp.get(f"{cluster}/apis/autoscaling/v1", headers=ADMIN)).json()
    assert [r["name"] for r in listed["resources"]] == ["horizontalpodautoscalers", "horizontalpodautoscalers/status"]
    v2 = await (await kcp.get(f"{cluster}/apis/autoscaling/v2", headers=ADMIN)).json()
    assert listed["resources"][0]["storageVersionHash"] == v2["resources"][0]["storageVersionHash"]


async def test_openapi_describes_v1_with_kubes_schema(kcp: TestClient[Any, Any], cluster: str) -> None:
    resp = await kcp.get(f"{cluster}/openapi/v3/apis/autoscaling/v1", headers=ADMIN)
    assert resp.status == 200, await resp.text()
    schemas = (await resp.json())["components"]["schemas"]
    spec = schemas["io.k8s.api.autoscaling.v1.HorizontalPodAutoscalerSpec"]
    assert "targetCPUUtilizationPercentage" in spec["properties"]


async def test_server_side_apply_and_a_strategic_merge_patch_at_v1(kcp: TestClient[Any, Any], cluster: str) -> None:
    applied = await kcp.patch(f"{hpas(cluster, 'v1')}/web", data=orjson.dumps(v1_hpa("web", cpu=40)),
                              params={"fieldManager": "me"},
                              headers={**ADMIN, "Content-Type": "application/apply-patch+yaml"})
    assert applied.status == 201, await applied.text()
    patched = await kcp.patch(f"{hpas(cluster, 'v1')}/web", data=orjson.dumps({"spec": {
        "targetCPUUtilizationPercentage": 45}}), headers={**ADMIN, "Content-Type": "application/strategic-merge-patch+json"})
    body = await patched.json()
    assert patched.status == 200, body
    assert body["apiVersion"] == "autoscaling/v1" and body["spec"]["targetCPUUtilizationPercentage"] == 45
    owners = [(m["manager"], m["operation"], m["apiVersion"]) for m in body["metadata"]["managedFields"]]
    assert ("me", "Apply", "autoscaling/v1") in owners
    v2 = await (await kcp.get(f"{hpas(cluster, 'v2')}/web", headers=ADMIN)).json()
    assert v2["spec"]["metrics"][0]["resource"]["target"]["averageUtilization"] == 45
