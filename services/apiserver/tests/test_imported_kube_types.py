"""kube's own types imported as CRDs (labelled by the cluster controller) take strategic merge patch and
protobuf bodies as kube serves them, merging lists by the patch strategies the CRD's annotation carries;
a hand-made CRD of the same shape stays a custom resource (415 for both)."""

from __future__ import annotations

import asyncio
import time
import uuid
from collections.abc import AsyncIterator
from typing import Any

import orjson
import pytest
from aiohttp.test_utils import TestClient, TestServer

from kcp_apiserver.apimachinery import kubeproto
from kcp_apiserver.server.app import APIServer
from kcp_apiserver.server.kcp import kcp_config
from kcpcommon import patchmeta
from kcpcommon.kubetypes import IMPORTED_LABEL

Obj = dict[str, Any]
ADMIN = {"Authorization": "Bearer admin-token"}
CRDS = "/apis/apiextensions.k8s.io/v1/customresourcedefinitions"
SMP = {**ADMIN, "Content-Type": "application/strategic-merge-patch+json"}
PROTOBUF = "application/vnd.kubernetes.protobuf"

PORT = {"type": "object", "required": ["containerPort"],
        "properties": {"containerPort": {"type": "integer"}, "protocol": {"type": "string", "default": "TCP"},
                       "name": {"type": "string"}}}
CONTAINER = {"type": "object", "required": ["name"], "properties": {
    "name": {"type": "string"}, "image": {"type": "string"},
    "ports": {"type": "array", "items": PORT, "x-kubernetes-list-type": "map",
              "x-kubernetes-list-map-keys": ["containerPort", "protocol"],
              "x-kubernetes-patch-strategy": "merge", "x-kubernetes-patch-merge-key": "containerPort"},
    "env": {"type": "array", "x-kubernetes-patch-strategy": "merge", "x-kubernetes-patch-merge-key": "name",
            "items": {"type": "object", "properties": {"name": {"type": "string"}, "value": {"type": "string"}}}}}}
STRATEGY = {"type": "object", "x-kubernetes-patch-strategy": "retainKeys", "properties": {
    "type": {"type": "string"},
    "rollingUpdate": {"type": "object", "properties": {"maxSurge": {"x-kubernetes-int-or-string": True,
                                                                    "anyOf": [{"type": "integer"},
                                                                              {"type": "string"}]}}}}}
# a Deployment as kube's OpenAPI has it, in little: kube 1.25's containers have only the patch strategy
DEPLOYMENT = {"type": "object", "properties": {
    "metadata": {"type": "object"},
    "spec": {"type": "object", "properties": {
        "replicas": {"type": "integer"}, "strategy": STRATEGY,
        "selector": {"type": "object", "x-kubernetes-preserve-unknown-fields": True},
        "template": {"type": "object", "properties": {
            "metadata": {"type": "object", "x-kubernetes-preserve-unknown-fields": True},
            "spec": {"type": "object", "properties": {
                "containers": {"type": "array", "items": CONTAINER, "x-kubernetes-patch-strategy": "merge",
                               "x-kubernetes-patch-merge-key": "name"}}}}}}},
    "status": {"type": "object", "x-kubernetes-preserve-unknown-fields": True}}}


def deployment_crd(group: str, *, imported: bool) -> Obj:
    schema, meta = patchmeta.split(DEPLOYMENT)
    metadata: Obj = {"name": f"deployments.{group}"}
    if imported:
        metadata["labels"] = {IMPORTED_LABEL: "true"}
        metadata["annotations"] = {patchmeta.PATCH_ANNOTATION: patchmeta.encode(meta)}
    return {"apiVersion": "apiextensions.k8s.io/v1", "kind": "CustomResourceDefinition", "metadata": metadata,
            "spec": {"group": group, "scope": "Namespaced",
                     "names": {"plural": "deployments", "singular": "deployment", "kind": "Deployment"},
                     "versions": [{"name": "v1", "served": True, "storage": True,
                                   "schema": {"openAPIV3Schema": schema}, "subresources": {"status": {}}}]}}


def web(group: str) -> Obj:
    return {"apiVersion": f"{group}/v1", "kind": "Deployment", "metadata": {"name": "web"}, "spec": {
        "replicas": 1, "selector": {"matchLabels": {"app": "web"}},
        "strategy": {"type": "RollingUpdate", "rollingUpdate": {"maxSurge": 1}},
        "template": {"metadata": {"labels": {"app": "web"}}, "spec": {"containers": [
            {"name": "app", "image": "app:1", "ports": [{"containerPort": 80}, {"containerPort": 9090}],
             "env": [{"name": "A", "value": "1"}, {"name": "B", "value": "2"}]},
            {"name": "sidecar", "image": "proxy:1"}]}}}}


class Cluster:
    """One fresh logical cluster of a running kcp, with the Deployment CRD of `group` established."""

    def __init__(self, client: TestClient[Any, Any], group: str) -> None:
        self.client = client
        self.group = group
        self.prefix = f"/clusters/it-{uuid.uuid4().hex[:8]}"
        self.deployments = f"{self.prefix}/apis/{group}/v1/namespaces/default/deployments"

    async def install(self, *, imported: bool) -> Cluster:
        resp = await self.client.post(f"{self.prefix}{CRDS}", json=deployment_crd(self.group, imported=imported),
                                      headers=ADMIN)
        assert resp.status == 201, await resp.text()
        deadline = time.monotonic() + 10
        while (await self.client.get(self.deployments, headers=ADMIN)).status != 200:
            assert time.monotonic() < deadline, "the CRD was never served"
            await asyncio.sleep(0.05)
        return self

    async def create(self, obj: Obj) -> Obj:
        resp = await self.client.post(self.deployments, json=obj, headers=ADMIN)
        assert resp.status == 201, await resp.text()
        return await resp.json()  # type: ignore[no-any-return]

    async def patch(self, patch: Obj, headers: dict[str, str] = SMP, **query: str) -> tuple[int, Obj]:
        resp = await self.client.patch(f"{self.deployments}/web", data=orjson.dumps(patch), headers=headers,
                                       params=query)
        return resp.status, await resp.json()


@pytest.fixture
async def kcp(etcd_endpoint: str) -> AsyncIterator[TestClient[Any, Any]]:
    server = APIServer(kcp_config([etcd_endpoint], "admin-token", identity=f"imported-{uuid.uuid4().hex[:6]}"))
    await server.start()
    client = TestClient(TestServer(server.app()))
    await client.start_server()
    try:
        yield client
    finally:
        await client.close()
        await server.stop()


def containers(obj: Obj) -> list[Obj]:
    return obj["spec"]["template"]["spec"]["containers"]  # type: ignore[no-any-return]


async def test_a_strategic_merge_patch_merges_containers_ports_and_env_by_their_keys(kcp: TestClient[Any, Any]) -> None:
    cluster = await Cluster(kcp, "apps").install(imported=True)
    await cluster.create(web("apps"))
    # what `kubectl set image deployment/web app=app:2` sends: one container, named
    code, patched = await cluster.patch({"spec": {"template": {"spec": {"containers": [
        {"name": "app", "image": "app:2", "env": [{"name": "B", "value": "3"}, {"name": "C", "value": "4"}],
         "ports": [{"containerPort": 9090, "$patch": "delete"}]}]}}}})
    assert code == 200, patched
    app, sidecar = containers(patched)
    assert (app["image"], sidecar["image"]) == ("app:2", "proxy:1")
    assert app["ports"] == [{"containerPort": 80, "protocol": "TCP"}]
    assert app["env"] == [{"name": "A", "value": "1"}, {"name": "B", "value": "3"}, {"name": "C", "value": "4"}]


async def test_set_element_order_and_retain_keys_apply_as_kubectl_sends_them(kcp: TestClient[Any, Any]) -> None:
    cluster = await Cluster(kcp, "apps").install(imported=True)
    await cluster.create(web("apps"))
    code, patched = await cluster.patch({"spec": {
        "strategy": {"$retainKeys": ["type"], "type": "Recreate"},
        "template": {"spec": {"$setElementOrder/containers": [{"name": "sidecar"}, {"name": "app"}],
                              "containers": [{"name": "sidecar", "image": "proxy:2"}]}}}})
    assert code == 200, patched
    assert patched["spec"]["strategy"] == {"type": "Recreate"}  # rollingUpdate dropped, as kube's retainKeys does
    assert [(c["name"], c["image"]) for c in containers(patched)] == [("sidecar", "proxy:2"), ("app", "app:1")]


async def test_server_side_apply_keys_the_imported_lists_by_their_merge_keys(kcp: TestClient[Any, Any]) -> None:
    cluster = await Cluster(kcp, "apps").install(imported=True)
    await cluster.create(web("apps"))
    applied = {"apiVersion": "apps/v1", "kind": "Deployment", "metadata": {"name": "web"},
               "spec": {"template": {"spec": {"containers": [{"name": "debug", "image": "busybox"}]}}}}
    headers = {**ADMIN, "Content-Type": "application/apply-patch+yaml"}
    code, patched = await cluster.patch(applied, headers, fieldManager="debugger")
    assert code == 200, patched
    assert [c["name"] for c in containers(patched)] == ["app", "sidecar", "debug"]  # a map list, not atomic


async def test_a_hand_made_crd_of_the_same_shape_answers_415_to_strategic_merge_patch(
        kcp: TestClient[Any, Any]) -> None:
    cluster = await Cluster(kcp, "apps.example.com").install(imported=False)
    await cluster.create(web("apps.example.com"))
    code, status = await cluster.patch({"spec": {"replicas": 2}})
    assert (code, status["reason"]) == (415, "UnsupportedMediaType")
    assert "got application/strategic-merge-patch+json" in status["message"]
    merge = {**ADMIN, "Content-Type": "application/merge-patch+json"}
    assert (await cluster.patch({"spec": {"replicas": 2}}, merge))[0] == 200


async def test_a_kube_group_crd_that_was_not_imported_stays_a_custom_resource(kcp: TestClient[Any, Any]) -> None:
    cluster = await Cluster(kcp, "apps").install(imported=False)
    await cluster.create(web("apps"))
    code, status = await cluster.patch({"spec": {"replicas": 2}})
    assert (code, status["reason"]) == (415, "UnsupportedMediaType")


def protobuf_deployment(name: str) -> bytes:
    """What `kubectl create deployment` sends: kube's protobuf envelope around an apps/v1 Deployment."""
    obj = {"metadata": {"name": name, "labels": {"app": name}},
           "spec": {"replicas": 1, "selector": {"matchLabels": {"app": name}},
                    "template": {"metadata": {"labels": {"app": name}},
                                 "spec": {"containers": [{"name": "nginx", "image": "nginx"}]}}}}
    raw = kubeproto._encode_message("Deployment", obj, "")
    type_meta = kubeproto._delimited(1, b"apps/v1") + kubeproto._delimited(2, b"Deployment")
    return kubeproto.MAGIC + kubeproto._delimited(1, type_meta) + kubeproto._delimited(2, raw)


async def test_protobuf_bodies_create_imported_kube_types_and_not_custom_resources(kcp: TestClient[Any, Any]) -> None:
    imported = await Cluster(kcp, "apps").install(imported=True)
    headers = {**ADMIN, "Content-Type": PROTOBUF, "Accept": f"{PROTOBUF}, application/json"}
    resp = await kcp.post(imported.deployments, data=protobuf_deployment("proto"), headers=headers)
    assert resp.status == 201, await resp.text()
    created = await resp.json()
    assert containers(created) == [{"name": "nginx", "image": "nginx"}]

    custom = await Cluster(kcp, "apps").install(imported=False)
    resp = await kcp.post(custom.deployments, data=protobuf_deployment("proto"), headers=headers)
    assert resp.status == 415
    assert (await resp.json())["message"].endswith("accepted media types include: application/json, application/yaml")


async def test_the_published_openapi_carries_the_patch_strategies_kubectl_apply_reads(
        kcp: TestClient[Any, Any]) -> None:
    cluster = await Cluster(kcp, "apps").install(imported=True)
    resp = await kcp.get(f"{cluster.prefix}/openapi/v3/apis/apps/v1", headers=ADMIN)
    assert resp.status == 200
    schemas = (await resp.json())["components"]["schemas"]
    (deployment,) = [s for s in schemas.values() if any(
        gvk.get("kind") == "Deployment" for gvk in s.get("x-kubernetes-group-version-kind") or ())]
    listed = deployment["properties"]["spec"]["properties"]["template"]["properties"]["spec"]["properties"][
        "containers"]
    assert (listed["x-kubernetes-patch-strategy"], listed["x-kubernetes-patch-merge-key"]) == ("merge", "name")
    crd = await (await kcp.get(f"{cluster.prefix}{CRDS}/deployments.apps", headers=ADMIN)).json()
    stored = crd["spec"]["versions"][0]["schema"]["openAPIV3Schema"]
    assert "x-kubernetes-patch" not in orjson.dumps(stored).decode()  # the CRD itself stays kube's CRD


async def test_an_imported_deployment_decodes_quantity_numbers_and_null_arguments_as_kube_does(
        kcp: TestClient[Any, Any]) -> None:
    cluster = Cluster(kcp, "apps")
    crd = deployment_crd("apps", imported=True)
    schema = crd["spec"]["versions"][0]["schema"]["openAPIV3Schema"]
    container = schema["properties"]["spec"]["properties"]["template"]["properties"]["spec"]["properties"][
        "containers"]["items"]
    quantity = {"x-kubernetes-int-or-string": True, "anyOf": [{"type": "integer"}, {"type": "string"}]}
    container["properties"]["args"] = {"type": "array", "items": {"type": "string"}}
    container["properties"]["resources"] = {"type": "object", "properties": {
        "limits": {"type": "object", "additionalProperties": quantity}}}
    resp = await kcp.post(f"{cluster.prefix}{CRDS}", json=crd, headers=ADMIN)
    assert resp.status == 201, await resp.text()
    obj = web("apps")
    containers(obj)[0].update({"args": [None, "x"], "resources": {"limits": {"cpu": 0.1, "memory": 128}}})
    deadline = time.monotonic() + 10
    while (resp := await kcp.post(cluster.deployments, json=obj, headers=ADMIN)).status == 404:
        assert time.monotonic() < deadline, "the CRD was never served"
        await asyncio.sleep(0.05)
    assert resp.status == 201, await resp.text()
    created = await resp.json()
    assert containers(created)[0]["resources"] == {"limits": {"cpu": "100m", "memory": "128"}}
    assert containers(created)[0]["args"] == ["", "x"]
    containers(obj)[0]["resources"] = {"limits": {"cpu": "lots"}}
    obj["metadata"]["name"] = "bad"
    refused = await kcp.post(cluster.deployments, json=obj, headers=ADMIN)
    assert refused.status == 400
    assert (await refused.json())["message"] == (
        'Deployment in version "v1" cannot be handled as a Deployment: quantities must match the regular '
        "expression '^([+-]?[0-9.]+)([eEinumkKMGTP]*[-+]?[0-9]*)$'")
