"""The generic registry over in-memory storage: kube's REST semantics for every type, with
each type's differences coming from its Strategy and every write passing admission."""

from __future__ import annotations

from typing import Any

import pytest

from kcp_apiserver.apiextensions.crd import CRD
from kcp_apiserver.apimachinery import status as st
from kcp_apiserver.apimachinery.request import RequestContext, RequestInfo, UserInfo
from kcp_apiserver.registry.admission import AdmissionChain, Attributes
from kcp_apiserver.registry.builtin import BUILTINS, NAMESPACE
from kcp_apiserver.registry.store import Registry, strategy_of
from kcp_apiserver.storage.memory import MemoryStorage

CONFIGMAP = next(r for r in BUILTINS if r.kind == "ConfigMap")
SECRET = next(r for r in BUILTINS if r.kind == "Secret")


class Seen:
    def __init__(self) -> None:
        self.attrs: list[Attributes] = []

    async def validate(self, attrs: Attributes) -> None:
        self.attrs.append(attrs)


async def _no_cluster_setup(cluster: str) -> None:
    return None


@pytest.fixture
def seen() -> Seen:
    return Seen()


@pytest.fixture
def registry(seen: Seen) -> Registry:
    return Registry(MemoryStorage(), admit=AdmissionChain([seen]), ensure_cluster=_no_cluster_setup)


def cm(name: str = "c", **data: str) -> dict[str, Any]:
    return {"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": name}, "data": data or {"k": "v"}}


async def test_create_sets_server_fields_and_the_strategy_prepares(registry: Registry) -> None:
    ns = await registry.create(NAMESPACE, "c1", "", {"metadata": {"name": "team", "uid": "mine"},
                                                      "status": {"phase": "Bogus"}})
    meta = ns["metadata"]
    assert meta["uid"] != "mine" and meta["creationTimestamp"].endswith("Z")
    assert meta["annotations"]["kcp.io/cluster"] == "c1" and meta["resourceVersion"]
    assert ns["spec"]["finalizers"] == ["kubernetes"] and ns["status"] == {"phase": "Active"}
    assert meta["labels"]["kubernetes.io/metadata.name"] == "team"
    secret = await registry.create(SECRET, "c1", "team", {"metadata": {"name": "s"}, "stringData": {"pw": "x"}})
    assert secret["data"] == {"pw": "eA=="} and "stringData" not in secret and secret["type"] == "Opaque"


async def test_invalid_objects_are_422_with_the_strategys_causes(registry: Registry) -> None:
    with pytest.raises(st.APIError) as exc:
        await registry.create(CONFIGMAP, "c1", "default", cm(**{"bad key!": "v"}))
    assert exc.value.code == 422 and exc.value.reason == "Invalid"
    assert exc.value.details["causes"][0]["field"] == "data"


async def test_generate_name_and_already_exists(registry: Registry) -> None:
    made = await registry.create(CONFIGMAP, "c1", "default", {"metadata": {"generateName": "web-"}, "data": {}})
    assert made["metadata"]["name"].startswith("web-") and len(made["metadata"]["name"]) == len("web-") + 5
    await registry.create(CONFIGMAP, "c1", "default", cm("dup"))
    with pytest.raises(st.APIError) as exc:
        await registry.create(CONFIGMAP, "c1", "default", cm("dup"))
    assert exc.value.code == 409 and exc.value.reason == "AlreadyExists"


async def test_updates_are_guarded_by_resource_version_and_no_ops_keep_it(registry: Registry) -> None:
    created = await registry.create(CONFIGMAP, "c1", "default", cm("x"))
    rv = created["metadata"]["resourceVersion"]
    same = await registry.update(CONFIGMAP, "c1", "default", "x", {**cm("x"), "metadata": {"name": "x",
                                                                                          "resourceVersion": rv}})
    assert same["metadata"]["resourceVersion"] == rv  # nothing changed: no write
    changed = await registry.update(CONFIGMAP, "c1", "default", "x", {**cm("x", k="w"),
                                                                     "metadata": {"name": "x", "resourceVersion": rv}})
    assert changed["metadata"]["resourceVersion"] != rv and changed["metadata"]["uid"] == created["metadata"]["uid"]
    with pytest.raises(st.APIError) as exc:
        await registry.update(CONFIGMAP, "c1", "default", "x", {**cm("x"), "metadata": {"name": "x",
                                                                                        "resourceVersion": rv}})
    assert exc.value.code == 409 and exc.value.reason == "Conflict"


async def test_status_writes_touch_only_status_and_spec_writes_bump_generation(registry: Registry) -> None:
    crd = {"apiVersion": "apiextensions.k8s.io/v1", "kind": "CustomResourceDefinition",
           "metadata": {"name": "widgets.example.com"},
           "spec": {"group": "example.com", "scope": "Namespaced",
                    "names": {"plural": "widgets", "singular": "widget", "kind": "Widget"},
                    "versions": [{"name": "v1", "served": True, "storage": True,
                                  "schema": {"openAPIV3Schema": {"type": "object"}}}]}}
    created = await registry.create(CRD, "c1", "", crd)
    assert created["metadata"]["generation"] == 1 and "customresourcecleanup.apiextensions.k8s.io" in \
        created["metadata"]["finalizers"]

    def set_status(doc: dict[str, Any]) -> dict[str, Any]:
        doc["status"] = {"storedVersions": ["v1"]}
        doc["spec"]["group"] = "ignored.example.com"
        return doc

    status = await registry.patch(CRD, "c1", "", "widgets.example.com", set_status, subresource="status")
    assert status["status"]["storedVersions"] == ["v1"] and status["spec"]["group"] == "example.com"
    assert status["metadata"]["generation"] == 1

    def add_short_name(doc: dict[str, Any]) -> dict[str, Any]:
        doc["spec"]["names"]["shortNames"] = ["wd"]
        return doc

    spec = await registry.patch(CRD, "c1", "", "widgets.example.com", add_short_name)
    assert spec["metadata"]["generation"] == 2 and spec["status"]["storedVersions"] == ["v1"]
    assert strategy_of(CRD).return_deleted_object


async def test_finalizers_hold_a_delete_and_the_last_one_removed_deletes(registry: Registry) -> None:
    await registry.create(NAMESPACE, "c1", "", {"metadata": {"name": "team"}})
    pending, gone = await registry.delete(NAMESPACE, "c1", "", "team")
    assert not gone and pending["metadata"]["deletionTimestamp"] and pending["status"]["phase"] == "Terminating"

    def finalize(doc: dict[str, Any]) -> dict[str, Any]:
        doc["spec"]["finalizers"] = []
        return doc

    kept = await registry.patch(NAMESPACE, "c1", "", "team", finalize)
    assert kept["spec"]["finalizers"] == ["kubernetes"]  # only /finalize may change them (the strategy keeps them)
    await registry.create(CONFIGMAP, "c1", "default", {**cm("held"), "metadata": {"name": "held",
                                                                                  "finalizers": ["x/y"]}})
    _, gone = await registry.delete(CONFIGMAP, "c1", "default", "held")
    assert not gone

    def drop(doc: dict[str, Any]) -> dict[str, Any]:
        doc["metadata"]["finalizers"] = []
        return doc

    await registry.patch(CONFIGMAP, "c1", "default", "held", drop)
    with pytest.raises(st.APIError) as exc:
        await registry.get(CONFIGMAP, "c1", "default", "held")
    assert exc.value.code == 404


async def test_every_write_passes_admission_with_the_request_context(registry: Registry, seen: Seen) -> None:
    ctx = RequestContext(RequestInfo("c1", "/api/v1/namespaces/default/configmaps"), user=UserInfo("alice"))
    await registry.create(CONFIGMAP, "c1", "default", cm("a"), ctx=ctx)
    await registry.patch(CONFIGMAP, "c1", "default", "a", lambda d: {**d, "data": {"k": "2"}}, ctx=ctx)
    await registry.delete(CONFIGMAP, "c1", "default", "a", ctx=ctx)
    assert [(a.operation, a.name, a.ctx.user.name) for a in seen.attrs] == [
        ("CREATE", "a", "alice"), ("UPDATE", "a", "alice"), ("DELETE", "a", "alice")]
    assert seen.attrs[1].old is not None and seen.attrs[1].obj is not None and seen.attrs[2].obj is None
    internal = await registry.create(CONFIGMAP, "c1", "default", cm("b"))
    assert internal and seen.attrs[-1].ctx.user.name == "system:apiserver"


async def test_dry_run_admits_and_validates_but_stores_nothing(registry: Registry, seen: Seen) -> None:
    made = await registry.create(CONFIGMAP, "c1", "default", cm("dry"), dry_run=True)
    assert made["metadata"]["name"] == "dry" and seen.attrs[-1].operation == "CREATE"
    with pytest.raises(st.APIError) as exc:
        await registry.get(CONFIGMAP, "c1", "default", "dry")
    assert exc.value.code == 404
