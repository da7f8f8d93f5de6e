"""Cascading deletion and the garbage collector, judged by the real kubectl against the real server."""

from __future__ import annotations

import json
import time
from collections.abc import Callable
from typing import Any

import pytest
import yaml

from api import Api
from kcp_process import KcpServer, run_kubectl

DEADLINE = 20.0
HOLD = "example.com/hold"


def eventually(check: Callable[[], Any], what: str, timeout: float = DEADLINE) -> Any:
    """Poll until `check` returns something truthy; fail loudly with `what` and the last value otherwise."""
    deadline = time.monotonic() + timeout
    while True:
        value = check()
        if value:
            return value
        if time.monotonic() > deadline:
            raise AssertionError(f"not within {timeout}s: {what} (last: {value!r})")
        time.sleep(0.05)


class Cluster:
    """kubectl pointed at one logical cluster and one namespace."""

    def __init__(self, kcp: KcpServer, namespace: str, logical_cluster: str | None = None) -> None:
        self.kcp = kcp
        self.namespace = namespace
        self.server = ["--server", f"{kcp.url}/clusters/{logical_cluster}"] if logical_cluster else []

    def kubectl(self, *args: str, input_text: str | None = None, check: bool = True) -> str:
        return run_kubectl(self.kcp, *self.server, "-n", self.namespace, *args, input_text=input_text,
                           check=check).stdout

    def apply(self, manifest: dict[str, Any]) -> None:
        self.kubectl("apply", "-f", "-", input_text=yaml.safe_dump(manifest))

    def get(self, kind: str, name: str) -> dict[str, Any] | None:
        result = run_kubectl(self.kcp, *self.server, "-n", self.namespace, "get", kind, name, "-o", "json",
                             check=False)
        if result.returncode != 0:
            assert "NotFound" in result.stderr, result.stderr
            return None
        return json.loads(result.stdout)  # type: ignore[no-any-return]

    def uid(self, kind: str, name: str) -> str:
        found = self.get(kind, name)
        assert found is not None, f"{kind}/{name} does not exist"
        return str(found["metadata"]["uid"])

    def configmap(self, name: str, *owners: dict[str, Any], finalizers: list[str] | None = None,
                  labels: dict[str, str] | None = None) -> None:
        meta: dict[str, Any] = {"name": name}
        if owners:
            meta["ownerReferences"] = list(owners)
        if finalizers:
            meta["finalizers"] = finalizers
        if labels:
            meta["labels"] = labels
        self.apply({"apiVersion": "v1", "kind": "ConfigMap", "metadata": meta, "data": {"k": "v"}})

    def owner_ref(self, name: str, *, block: bool = False, kind: str = "ConfigMap", api_version: str = "v1",
                  resource: str = "cm", uid: str | None = None) -> dict[str, Any]:
        return {"apiVersion": api_version, "kind": kind, "name": name, "uid": uid or self.uid(resource, name),
                "blockOwnerDeletion": block}

    def gone(self, kind: str, name: str) -> bool:
        return self.get(kind, name) is None


@pytest.fixture
def cluster(kcp: KcpServer, unique: str) -> Cluster:
    name = f"gc-{unique}"
    run_kubectl(kcp, "create", "namespace", name)
    return Cluster(kcp, name)


def _owner_with_dependents(cluster: Cluster, *, block: bool) -> None:
    cluster.configmap("owner")
    cluster.configmap("d1", cluster.owner_ref("owner", block=block))
    cluster.configmap("d2", cluster.owner_ref("owner", block=block))


def test_cascade_background_deletes_the_owner_at_once_and_the_dependents_after(cluster: Cluster) -> None:
    _owner_with_dependents(cluster, block=True)
    assert 'configmap "owner" deleted' in cluster.kubectl("delete", "cm", "owner", "--cascade=background")
    assert cluster.gone("cm", "owner")
    eventually(lambda: cluster.gone("cm", "d1") and cluster.gone("cm", "d2"), "the dependents are collected")


def test_cascade_foreground_removes_blocking_dependents_before_the_owner(cluster: Cluster) -> None:
    _owner_with_dependents(cluster, block=True)
    cluster.kubectl("delete", "cm", "owner", "--cascade=foreground")  # waits until the owner is gone
    assert cluster.gone("cm", "owner")
    assert cluster.gone("cm", "d1") and cluster.gone("cm", "d2")  # blocking: gone before their owner


def test_a_foreground_owner_stays_while_a_blocking_dependent_remains(cluster: Cluster) -> None:
    cluster.configmap("owner")
    cluster.configmap("held", cluster.owner_ref("owner", block=True), finalizers=[HOLD])
    cluster.configmap("free", cluster.owner_ref("owner", block=False))
    cluster.kubectl("delete", "cm", "owner", "--cascade=foreground", "--wait=false")
    held = eventually(lambda: (cm := cluster.get("cm", "held")) and cm["metadata"].get("deletionTimestamp") and cm,
                      "the collector deletes the blocking dependent")
    assert held["metadata"]["finalizers"] == [HOLD]
    eventually(lambda: cluster.gone("cm", "free"), "the non-blocking dependent is collected")
    owner = cluster.get("cm", "owner")
    assert owner is not None, "the owner must wait for its blocking dependent"
    assert owner["metadata"]["deletionTimestamp"]
    assert owner["metadata"]["finalizers"] == ["foregroundDeletion"]
    cluster.kubectl("patch", "cm", "held", "--type=json", "-p", '[{"op":"remove","path":"/metadata/finalizers"}]')
    eventually(lambda: cluster.gone("cm", "owner"), "the owner goes once its blocking dependent has")


def test_cascade_orphan_keeps_the_dependents_without_their_owner(cluster: Cluster) -> None:
    _owner_with_dependents(cluster, block=True)
    cluster.kubectl("delete", "cm", "owner", "--cascade=orphan")  # waits until the owner is gone
    assert cluster.gone("cm", "owner")
    for name in ("d1", "d2"):
        orphan = cluster.get("cm", name)
        assert orphan is not None, f"{name} must survive an orphaning delete"
        assert "ownerReferences" not in orphan["metadata"]


def test_a_dependent_with_another_owner_left_only_loses_the_reference(cluster: Cluster) -> None:
    cluster.configmap("owner")
    cluster.configmap("keeper")
    cluster.configmap("dep", cluster.owner_ref("owner"), cluster.owner_ref("keeper"))
    cluster.kubectl("delete", "cm", "owner")
    eventually(lambda: [r["name"] for r in (cluster.get("cm", "dep") or {"metadata": {}})["metadata"].get(
        "ownerReferences", [])] == ["keeper"], "the dead owner's reference is removed")
    assert cluster.get("cm", "dep") is not None


def test_a_dangling_owner_reference_is_collected(cluster: Cluster) -> None:
    cluster.configmap("dep", cluster.owner_ref("never", uid="00000000-0000-4000-8000-000000000001"))
    eventually(lambda: cluster.gone("cm", "dep"), "a dependent whose owner never existed is collected")


def test_a_custom_resource_owns_a_configmap(kcp: KcpServer, unique: str) -> None:
    logical = f"gc-crd-{unique}"
    cluster = Cluster(kcp, "default", logical)
    cluster.apply({"apiVersion": "apiextensions.k8s.io/v1", "kind": "CustomResourceDefinition",
                   "metadata": {"name": "gadgets.gc.example.com"},
                   "spec": {"group": "gc.example.com", "scope": "Namespaced",
                            "names": {"plural": "gadgets", "singular": "gadget", "kind": "Gadget"},
                            "versions": [{"name": "v1", "served": True, "storage": True, "schema": {
                                "openAPIV3Schema": {"type": "object",
                                                    "x-kubernetes-preserve-unknown-fields": True}}}]}})
    cluster.kubectl("wait", "--for=condition=Established", "crd/gadgets.gc.example.com", "--timeout=20s")
    cluster.apply({"apiVersion": "gc.example.com/v1", "kind": "Gadget", "metadata": {"name": "g1"}})
    cluster.configmap("part", cluster.owner_ref("g1", kind="Gadget", api_version="gc.example.com/v1",
                                                resource="gadgets", block=True))
    cluster.configmap("bystander")
    cluster.kubectl("delete", "gadget", "g1", "--cascade=foreground")
    assert cluster.gone("cm", "part")  # blocking: gone before its owner
    assert cluster.get("cm", "bystander") is not None
    # deleting the CRD deletes its objects, and the collector follows their dependents out
    cluster.apply({"apiVersion": "gc.example.com/v1", "kind": "Gadget", "metadata": {"name": "g2"}})
    cluster.configmap("part2", cluster.owner_ref("g2", kind="Gadget", api_version="gc.example.com/v1",
                                                 resource="gadgets"))
    cluster.kubectl("delete", "crd", "gadgets.gc.example.com")
    eventually(lambda: cluster.gone("cm", "part2"), "a dependent of a deleted CRD's object is collected")
    assert cluster.get("cm", "bystander") is not None


def test_foreground_deletion_goes_down_a_chain_of_owners(cluster: Cluster) -> None:
    cluster.configmap("top")
    cluster.configmap("middle", cluster.owner_ref("top", block=True))
    cluster.configmap("leaf", cluster.owner_ref("middle", block=True))
    cluster.kubectl("delete", "cm", "top", "--cascade=foreground")
    assert cluster.gone("cm", "top")
    assert cluster.gone("cm", "middle") and cluster.gone("cm", "leaf")  # each waited for the one below


def test_an_owner_in_one_logical_cluster_never_owns_in_another(kcp: KcpServer, unique: str) -> None:
    a = Cluster(kcp, "default", f"gc-a-{unique}")
    b = Cluster(kcp, "default", f"gc-b-{unique}")
    a.configmap("owner")
    owner_uid = a.uid("cm", "owner")
    a.configmap("dep", a.owner_ref("owner"))
    b.configmap("owner")  # same name, its own uid
    b.configmap("keeper")
    b.configmap("kept", b.owner_ref("keeper"), a.owner_ref("owner"))  # names the uid of a's owner
    b.configmap("stray", a.owner_ref("owner", uid=owner_uid))
    # in b nothing has a's uid: the reference is dead there even while a's owner lives
    eventually(lambda: b.gone("cm", "stray"), "b's dependent naming a's uid is collected in b")
    eventually(lambda: [r["name"] for r in (b.get("cm", "kept") or {"metadata": {}})["metadata"].get(
        "ownerReferences", [])] == ["keeper"], "b's dependent loses only the reference to a's uid")
    assert a.get("cm", "dep") is not None, "a's dependent keeps its live owner"
    a.kubectl("delete", "cm", "owner")
    eventually(lambda: a.gone("cm", "dep"), "a's dependent follows a's owner")
    assert b.get("cm", "kept") is not None
    assert b.get("cm", "owner") is not None


async def test_delete_options_are_validated_as_kube_does(api: Api, namespace: str) -> None:
    path = f"/api/v1/namespaces/{namespace}/configmaps"
    assert (await api.post(path, {"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": "x"}})).status == 201
    bad = await api.delete(f"{path}/x", {"propagationPolicy": "Sideways"})
    assert bad.status == 422, bad.body
    assert bad.body["message"] == ('DeleteOptions.meta.k8s.io "" is invalid: propagationPolicy: Unsupported value: '
                                   '"Sideways": supported values: "Foreground", "Background", "Orphan", "nil"')
    both = await api.delete(f"{path}/x", {"propagationPolicy": "Orphan", "orphanDependents": True})
    assert both.status == 422, both.body
    assert "orphanDependents and deletionPropagation cannot be both set" in both.body["message"]
    from_query = await api.delete(f"{path}/x", params={"propagationPolicy": "Sideways"})
    assert from_query.status == 422
    collection = await api.delete(path, {"propagationPolicy": "Sideways"})
    assert collection.status == 422
    assert (await api.get(f"{path}/x")).status == 200  # nothing was deleted


async def test_the_query_parameter_sets_the_policy_when_there_is_no_body(api: Api, namespace: str) -> None:
    path = f"/api/v1/namespaces/{namespace}/configmaps"
    owner = (await api.post(path, {"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": "owner"}})).body
    ref = {"apiVersion": "v1", "kind": "ConfigMap", "name": "owner", "uid": owner["metadata"]["uid"]}
    await api.post(path, {"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": "dep",
                                                                              "ownerReferences": [ref]}})
    reply = await api.delete(f"{path}/owner", params={"propagationPolicy": "Orphan"})
    assert reply.status == 200, reply.body
    assert reply.body["metadata"]["finalizers"] == ["orphan"]
    assert reply.body["metadata"]["deletionTimestamp"]
    await _until_gone(api, f"{path}/owner")
    dep = (await api.get(f"{path}/dep")).body
    assert "ownerReferences" not in dep["metadata"]


async def test_deletecollection_takes_the_same_options(api: Api, namespace: str) -> None:
    path = f"/api/v1/namespaces/{namespace}/configmaps"
    for name in ("o1", "o2"):
        owner = (await api.post(path, {"apiVersion": "v1", "kind": "ConfigMap",
                                       "metadata": {"name": name, "labels": {"role": "owner"}}})).body
        ref = {"apiVersion": "v1", "kind": "ConfigMap", "name": name, "uid": owner["metadata"]["uid"]}
        await api.post(path, {"apiVersion": "v1", "kind": "ConfigMap",
                              "metadata": {"name": f"{name}-dep", "ownerReferences": [ref]}})
    reply = await api.delete(path, {"propagationPolicy": "Orphan"}, params={"labelSelector": "role=owner"})
    assert reply.status == 200, reply.body
    assert sorted(i["metadata"]["finalizers"][0] for i in reply.body["items"]) == ["orphan", "orphan"]
    for name in ("o1", "o2"):
        await _until_gone(api, f"{path}/{name}")
        dep = await api.get(f"{path}/{name}-dep")
        assert dep.status == 200 and "ownerReferences" not in dep.body["metadata"]


async def test_orphan_dependents_false_still_under_way_is_202(api: Api, namespace: str) -> None:
    path = f"/api/v1/namespaces/{namespace}/configmaps"
    await api.post(path, {"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": "held",
                                                                              "finalizers": [HOLD]}})
    reply = await api.delete(f"{path}/held", {"orphanDependents": False})
    assert reply.status == 202, reply.body
    assert reply.body["metadata"]["finalizers"] == [HOLD]
    await api.patch(f"{path}/held", {"metadata": {"finalizers": None}}, "application/merge-patch+json")


async def _until_gone(api: Api, path: str) -> None:
    import asyncio

    deadline = time.monotonic() + DEADLINE
    while (reply := await api.get(path)).status != 404:
        if time.monotonic() > deadline:
            raise AssertionError(f"{path} still there after {DEADLINE}s: {reply.body}")
        await asyncio.sleep(0.05)
