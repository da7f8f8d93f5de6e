"""A cluster's OpenAPI v3 documents are fetched and converted once per version (the index's `?hash=`)."""

from __future__ import annotations

from types import SimpleNamespace
from typing import Any

from kcp_cluster_controller.physical import SchemaCache, read_type

from kcpcommon.dynamic import DynamicClient
from kcpcommon.errors import APINotFoundError


def document(field: str) -> dict[str, Any]:
    return {"components": {"schemas": {"io.k8s.api.core.v1.Pod": {
        "type": "object", "x-kubernetes-group-version-kind": [{"group": "", "version": "v1", "kind": "Pod"}],
        "properties": {"spec": {"type": "object", "properties": {field: {"type": "string"}}}}}}}}


class Cluster:
    """Serves discovery, the v3 index and the core/v1 document; counts the document's fetches."""

    def __init__(self, *, v3: bool = True, prefix: str = "") -> None:
        self.v3 = v3
        self.prefix = prefix  # a server below a path (kcp's /clusters/x): its index's URLs start with it
        self.hash = "A"
        self.field = "nodeName"
        self.fetched: list[str] = []

    def below_base(self, server_path: str) -> str:
        return DynamicClient.below_base(self, server_path)  # type: ignore[arg-type]

    @property
    def api_client(self) -> Any:
        return SimpleNamespace(configuration=SimpleNamespace(host=f"https://127.0.0.1:1{self.prefix}"))

    async def request(self, method: str, path: str, *, query: list[tuple[str, str]] | None = None) -> Any:
        if path == "/api/v1":
            return {"resources": [{"name": "pods", "kind": "Pod", "namespaced": True}]}
        if path == "/openapi/v3":
            if not self.v3:
                raise APINotFoundError("not found", status=404, reason="NotFound")
            return {"paths": {"api/v1": {"serverRelativeURL": f"{self.prefix}/openapi/v3/api/v1?hash={self.hash}"}}}
        if path in ("/openapi/v3/api/v1", "/openapi/v2"):
            if path.startswith("/openapi/v3") and not self.v3:
                raise APINotFoundError("not found", status=404, reason="NotFound")
            self.fetched.append(f"{path}?{dict(query or []).get('hash', '')}")
            return document(self.field) if path != "/openapi/v2" else {
                "definitions": document(self.field)["components"]["schemas"]}
        raise AssertionError(path)


async def rounds(cluster: Cluster, schemas: SchemaCache, count: int) -> list[Any]:
    views = []
    for _ in range(count):
        schemas.begin_round()
        views.append(await read_type(cluster, "pods", schemas))  # type: ignore[arg-type]
    return views


async def test_rounds_whose_hash_did_not_move_fetch_and_convert_nothing_again() -> None:
    cluster, schemas = Cluster(), SchemaCache()
    first, second = await rounds(cluster, schemas, 2)
    assert cluster.fetched == ["/openapi/v3/api/v1?A"]
    assert first.schema == second.schema and first.schema is not second.schema  # each caller its own copy
    assert "nodeName" in first.schema["properties"]["spec"]["properties"]

    cluster.hash, cluster.field = "B", "hostname"  # the cluster's types changed: a new hash in the index
    (third,) = await rounds(cluster, schemas, 1)
    assert cluster.fetched == ["/openapi/v3/api/v1?A", "/openapi/v3/api/v1?B"]
    assert "hostname" in third.schema["properties"]["spec"]["properties"]


async def test_a_cluster_without_openapi_v3_is_read_from_v2_every_round() -> None:
    cluster = Cluster(v3=False)
    (view,) = await rounds(cluster, SchemaCache(), 1)
    assert "nodeName" in view.schema["properties"]["spec"]["properties"]
    assert cluster.fetched == ["/openapi/v2?"]


async def test_a_cluster_served_below_a_path_has_its_documents_read_below_that_path_once() -> None:
    """kcp-sim-cluster --clusters N (and kcp) serve a cluster at /clusters/<name>: the index's URLs are relative to
    the host's root, so the client's own base path is not put in front of them a second time."""
    cluster, schemas = Cluster(prefix="/clusters/sim-1"), SchemaCache()
    first, _ = await rounds(cluster, schemas, 2)
    assert cluster.fetched == ["/openapi/v3/api/v1?A"]
    assert "nodeName" in first.schema["properties"]["spec"]["properties"]
