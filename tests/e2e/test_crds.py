"""CustomResourceDefinitions per logical cluster, driven by the real kubectl and raw HTTP."""

from __future__ import annotations

import asyncio
import json
import os
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

import pytest
import yaml

from api import Api
from kcp_process import KcpServer, OutputLines, cluster_kubeconfig, kubectl_binary

CRD_PATH = "/apis/apiextensions.k8s.io/v1/customresourcedefinitions"


def widget_crd(group: str, *, plural: str = "widgets", kind: str = "Widget", scope: str = "Namespaced",
               size_max: int = 10, extra_props: dict[str, Any] | None = None,
               versions: list[dict[str, Any]] | None = None) -> dict[str, Any]:
    schema = {"type": "object", "properties": {
        "spec": {"type": "object", "required": ["size"], "properties": {
            "size": {"type": "integer", "minimum": 0, "maximum": size_max,
                     "description": "How many parts the widget has."},
            "color": {"type": "string", "enum": ["red", "blue"], "default": "red"},
            "replicas": {"type": "integer", "minimum": 0},
            **(extra_props or {})}},
        "status": {"type": "object", "properties": {
            "replicas": {"type": "integer"}, "ready": {"type": "boolean"},
            "conditions": {"type": "array", "items": {"type": "object", "properties": {
                "type": {"type": "string"}, "status": {"type": "string"}}}}}}}}
    version = {"name": "v1", "served": True, "storage": True, "schema": {"openAPIV3Schema": schema},
               "subresources": {"status": {}, "scale": {"specReplicasPath": ".spec.replicas",
                                                        "statusReplicasPath": ".status.replicas"}},
               "additionalPrinterColumns": [
                   {"name": "Size", "type": "integer", "jsonPath": ".spec.size"},
                   {"name": "Color", "type": "string", "jsonPath": ".spec.color"},
                   {"name": "Age", "type": "date", "jsonPath": ".metadata.creationTimestamp"}]}
    return {"apiVersion": "apiextensions.k8s.io/v1", "kind": "CustomResourceDefinition",
            "metadata": {"name": f"{plural}.{group}"},
            "spec": {"group": group, "scope": scope,
                     "names": {"plural": plural, "singular": kind.lower(), "kind": kind, "shortNames": ["wd"],
                               "categories": ["gadgets"]},
                     "versions": versions or [version]}}


async def wait_established(api: Api, prefix: str, name: str, timeout: float = 5.0) -> dict[str, Any]:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        reply = await api.get(f"{prefix}{CRD_PATH}/{name}")
        conditions = {c["type"]: c for c in (reply.body.get("status") or {}).get("conditions", [])}
        if conditions.get("Established", {}).get("status") == "True":
            return reply.body
        await asyncio.sleep(0.05)
    raise AssertionError(f"CRD {name} not established: {reply.body.get('status')}")


async def served(api: Api, path: str, timeout: float = 5.0) -> None:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if (await api.get(path)).status == 200:
            return
        await asyncio.sleep(0.05)
    raise AssertionError(f"{path} never served")


def widget(name: str, size: int = 3, group: str = "", **spec: Any) -> dict[str, Any]:
    return {"apiVersion": f"{group}/v1", "kind": "Widget", "metadata": {"name": name},
            "spec": {"size": size, **spec}}


@pytest.fixture
async def crd_cluster(api: Api, unique: str) -> tuple[str, str]:
    """A logical cluster with the widgets CRD established; returns (path prefix, group)."""
    prefix, group = f"/clusters/crd-{unique}", f"g{unique}.example.com"
    reply = await api.post(f"{prefix}{CRD_PATH}", widget_crd(group))
    assert reply.status == 201, reply.body
    await wait_established(api, prefix, f"widgets.{group}")
    await served(api, f"{prefix}/apis/{group}/v1/namespaces/default/widgets")
    return prefix, group


async def test_a_crd_is_established_and_served_only_in_its_logical_cluster(api: Api, crd_cluster, unique) -> None:
    prefix, group = crd_cluster
    crd = (await api.get(f"{prefix}{CRD_PATH}/widgets.{group}")).body
    conditions = {c["type"]: c for c in crd["status"]["conditions"]}
    assert conditions["NamesAccepted"]["status"] == "True" and conditions["Established"]["status"] == "True"
    assert crd["status"]["acceptedNames"]["kind"] == "Widget"
    created = await api.post(f"{prefix}/apis/{group}/v1/namespaces/default/widgets", widget("w1", group=group))
    assert created.status == 201, created.body
    assert created.body["spec"] == {"size": 3, "color": "red"}  # defaulted
    assert created.body["metadata"]["generation"] == 1
    other = await api.get(f"/clusters/other-{unique}/apis/{group}/v1/namespaces/default/widgets")
    assert other.status == 404
    discovery = await api.get(f"{prefix}/apis/{group}/v1")
    assert [r["name"] for r in discovery.body["resources"]][:1] == ["widgets"]
    assert (await api.get(f"/clusters/other-{unique}/apis/{group}/v1")).status == 404


async def test_invalid_objects_are_422_with_kube_field_messages(api: Api, crd_cluster) -> None:
    prefix, group = crd_cluster
    path = f"{prefix}/apis/{group}/v1/namespaces/default/widgets"
    reply = await api.post(path, widget("big", size=20, group=group))
    assert reply.status == 422 and reply.body["reason"] == "Invalid"
    assert "spec.size: Invalid value: 20: spec.size in body should be less than or equal to 10" in reply.body["message"]
    assert reply.body["details"]["causes"][0]["field"] == "spec.size"
    assert (await api.get(f"{path}/big")).status == 404
    bad_enum = await api.post(path, widget("pink", group=group, color="pink"))
    assert bad_enum.status == 422 and 'Unsupported value: "pink"' in bad_enum.body["message"]
    missing = await api.post(path, {"apiVersion": f"{group}/v1", "kind": "Widget", "metadata": {"name": "m"},
                                    "spec": {}})
    assert missing.status == 422 and "spec.size: Required value" in missing.body["message"]


async def test_unknown_fields_are_pruned_or_refused_per_field_validation(api: Api, crd_cluster) -> None:
    prefix, group = crd_cluster
    path = f"{prefix}/apis/{group}/v1/namespaces/default/widgets"
    body = widget("extra", group=group, bogus=1)
    strict = await api.post(path, body, params={"fieldValidation": "Strict"})
    assert strict.status == 400 and 'unknown field "spec.bogus"' in strict.body["message"]
    warn = await api.post(path, body, params={"fieldValidation": "Warn"})
    assert warn.status == 201 and "spec.bogus" in warn.headers.get("Warning", "")
    assert "bogus" not in warn.body["spec"]
    ignored = await api.post(path, dict(body, metadata={"name": "extra2"}), params={"fieldValidation": "Ignore"})
    assert ignored.status == 201 and "bogus" not in ignored.body["spec"] and "Warning" not in ignored.headers


async def test_schema_changes_take_effect_without_restart(api: Api, crd_cluster) -> None:
    prefix, group = crd_cluster
    path = f"{prefix}/apis/{group}/v1/namespaces/default/widgets"
    assert (await api.post(path, widget("five", size=5, group=group))).status == 201
    crd = (await api.get(f"{prefix}{CRD_PATH}/widgets.{group}")).body
    schema = crd["spec"]["versions"][0]["schema"]["openAPIV3Schema"]["properties"]["spec"]["properties"]
    schema["size"]["maximum"] = 4
    schema["shape"] = {"type": "string", "default": "round"}
    assert (await api.put(f"{prefix}{CRD_PATH}/widgets.{group}", crd)).status == 200
    for _ in range(100):
        reply = await api.post(path, widget("six", size=5, group=group))
        if reply.status == 422:
            break
        await api.delete(f"{path}/six")
        await asyncio.sleep(0.05)
    assert reply.status == 422
    old = await api.get(f"{path}/five")
    assert old.body["spec"]["shape"] == "round"  # defaults apply on read too


async def test_name_conflicts_are_reported_and_not_served(api: Api, crd_cluster) -> None:
    prefix, group = crd_cluster
    rival = widget_crd(group, plural="gizmos", kind="Widget")  # same kind in the same group
    rival["spec"]["names"]["shortNames"] = []
    assert (await api.post(f"{prefix}{CRD_PATH}", rival)).status == 201
    for _ in range(100):
        crd = (await api.get(f"{prefix}{CRD_PATH}/gizmos.{group}")).body
        conditions = {c["type"]: c for c in (crd.get("status") or {}).get("conditions", [])}
        if "NamesAccepted" in conditions:
            break
        await asyncio.sleep(0.05)
    assert conditions["NamesAccepted"]["status"] == "False"
    assert conditions["NamesAccepted"]["reason"] and "Widget" in conditions["NamesAccepted"]["message"]
    assert (await api.get(f"{prefix}/apis/{group}/v1/namespaces/default/gizmos")).status == 404


async def test_deleting_a_crd_deletes_its_objects_and_stops_serving(api: Api, crd_cluster) -> None:
    prefix, group = crd_cluster
    path = f"{prefix}/apis/{group}/v1/namespaces/default/widgets"
    for i in range(3):
        assert (await api.post(path, widget(f"d{i}", group=group))).status == 201
    assert (await api.delete(f"{prefix}{CRD_PATH}/widgets.{group}")).status == 200
    for _ in range(100):
        if (await api.get(f"{prefix}{CRD_PATH}/widgets.{group}")).status == 404:
            break
        await asyncio.sleep(0.05)
    assert (await api.get(f"{prefix}{CRD_PATH}/widgets.{group}")).status == 404
    assert (await api.get(path)).status == 404
    recreated = await api.post(f"{prefix}{CRD_PATH}", widget_crd(group))
    assert recreated.status == 201
    await wait_established(api, prefix, f"widgets.{group}")
    await served(api, path)
    assert (await api.get(path)).body["items"] == []  # the old objects are gone, not resurrected


async def test_wildcard_list_and_watch_work_when_the_crd_is_not_in_admin(api: Api, unique: str) -> None:
    group = f"wild{unique}.example.com"
    for cluster in ("w1", "w2"):
        prefix = f"/clusters/{cluster}-{unique}"
        assert (await api.post(f"{prefix}{CRD_PATH}", widget_crd(group))).status == 201
        await wait_established(api, prefix, f"widgets.{group}")
        await served(api, f"{prefix}/apis/{group}/v1/namespaces/default/widgets")
        assert (await api.post(f"{prefix}/apis/{group}/v1/namespaces/default/widgets",
                               widget("x", group=group))).status == 201
    listed = await api.get(f"/clusters/*/apis/{group}/v1/widgets")
    assert listed.status == 200, listed.body
    assert sorted(i["metadata"]["annotations"]["kcp.io/cluster"] for i in listed.body["items"]) == [
        f"w1-{unique}", f"w2-{unique}"]
    events = []
    async for event in api.watch(f"/clusters/*/apis/{group}/v1/widgets", {"timeoutSeconds": "3"}):
        events.append(event)
        if len(events) == 2:
            break
    assert {e["object"]["metadata"]["annotations"]["kcp.io/cluster"] for e in events} == {f"w1-{unique}",
                                                                                        f"w2-{unique}"}


async def test_two_clusters_define_the_same_resource_with_different_schemas(api: Api, unique: str) -> None:
    group = f"same{unique}.example.com"
    small, large = f"/clusters/small-{unique}", f"/clusters/large-{unique}"
    for prefix, size_max in ((small, 5), (large, 50)):
        assert (await api.post(f"{prefix}{CRD_PATH}", widget_crd(group, size_max=size_max))).status == 201
        await wait_established(api, prefix, f"widgets.{group}")
        await served(api, f"{prefix}/apis/{group}/v1/namespaces/default/widgets")
    body = widget("w", size=20, group=group)
    assert (await api.post(f"{small}/apis/{group}/v1/namespaces/default/widgets", body)).status == 422
    assert (await api.post(f"{large}/apis/{group}/v1/namespaces/default/widgets", body)).status == 201


async def test_cluster_scope_and_versions_with_one_storage_version(api: Api, unique: str) -> None:
    group, prefix = f"ver{unique}.example.com", f"/clusters/ver-{unique}"
    schema = {"openAPIV3Schema": {"type": "object", "properties": {"spec": {
        "type": "object", "x-kubernetes-preserve-unknown-fields": True}}}}
    crd = widget_crd(group, scope="Cluster", versions=[
        {"name": "v1beta1", "served": True, "storage": False, "deprecated": True, "schema": schema},
        {"name": "v1", "served": True, "storage": True, "schema": schema}])
    assert (await api.post(f"{prefix}{CRD_PATH}", crd)).status == 201
    await wait_established(api, prefix, f"widgets.{group}")
    await served(api, f"{prefix}/apis/{group}/v1beta1/widgets")
    created = await api.post(f"{prefix}/apis/{group}/v1beta1/widgets",
                             {"apiVersion": f"{group}/v1beta1", "kind": "Widget", "metadata": {"name": "old"},
                              "spec": {"anything": {"goes": True}}})
    assert created.status == 201 and created.body["apiVersion"] == f"{group}/v1beta1"
    assert "deprecated" in created.headers.get("Warning", "")
    via_v1 = await api.get(f"{prefix}/apis/{group}/v1/widgets/old")
    assert via_v1.body["apiVersion"] == f"{group}/v1" and via_v1.body["spec"] == {"anything": {"goes": True}}
    assert "namespace" not in via_v1.body["metadata"]
    assert "Warning" not in via_v1.headers
    stored = (await api.get(f"{prefix}{CRD_PATH}/widgets.{group}")).body["status"]["storedVersions"]
    assert stored == ["v1"]


async def test_cel_rules_are_enforced_and_broken_rules_refuse_the_crd(api: Api, unique: str) -> None:
    group, prefix = f"cel{unique}.example.com", f"/clusters/cel-{unique}"
    broken = widget_crd(group)
    broken["spec"]["versions"][0]["schema"]["openAPIV3Schema"]["properties"]["spec"]["x-kubernetes-validations"] = [
        {"rule": "self.size >"}]
    reply = await api.post(f"{prefix}{CRD_PATH}", broken)
    assert reply.status == 422 and "x-kubernetes-validations[0].rule" in reply.body["message"]
    assert "compilation failed" in reply.body["message"]
    assert (await api.get(f"{prefix}{CRD_PATH}/widgets.{group}")).status == 404

    crd = widget_crd(group)
    crd["spec"]["versions"][0]["schema"]["openAPIV3Schema"]["properties"]["spec"]["x-kubernetes-validations"] = [
        {"rule": "!has(self.replicas) || self.replicas <= self.size", "message": "replicas must not exceed size"},
        {"rule": "self.color == oldSelf.color", "message": "color is immutable"}]
    assert (await api.post(f"{prefix}{CRD_PATH}", crd)).status == 201
    await wait_established(api, prefix, f"widgets.{group}")
    path = f"{prefix}/apis/{group}/v1/namespaces/default/widgets"
    await served(api, path)
    refused = await api.post(path, widget("over", size=3, group=group, replicas=5))
    assert refused.status == 422, refused.body
    assert 'spec: Invalid value: "object": replicas must not exceed size' in refused.body["message"]
    assert (await api.get(f"{path}/over")).status == 404
    assert (await api.post(path, widget("fine", size=3, group=group, replicas=2))).status == 201
    merge = "application/merge-patch+json"
    immutable = await api.patch(f"{path}/fine", {"spec": {"color": "blue"}}, merge)
    assert immutable.status == 422 and "color is immutable" in immutable.body["message"]
    assert (await api.patch(f"{path}/fine", {"spec": {"size": 4}}, merge)).status == 200
    assert (await api.get(f"{path}/fine")).body["spec"]["color"] == "red"


async def test_cel_cost_is_kube_s_estimate_at_crd_create_and_nested_alls_over_100_items_run(
        api: Api, unique: str) -> None:
    group, prefix = f"celcost{unique}.example.com", f"/clusters/celcost-{unique}"
    nested = "self.names.all(a, self.names.all(b, a.size() <= 20))"

    def with_names(max_items: int | None, rule: str) -> dict[str, Any]:
        names: dict[str, Any] = {"type": "array", "items": {"type": "string"}}
        if max_items is not None:
            names["maxItems"] = max_items
        crd = widget_crd(group, extra_props={"names": names})
        crd["spec"]["versions"][0]["schema"]["openAPIV3Schema"]["properties"]["spec"]["x-kubernetes-validations"] = [
            {"rule": rule, "message": "names are at most 20 characters"}]
        return crd

    costly = await api.post(f"{prefix}{CRD_PATH}", with_names(None, "self.names.all(a, self.names.all(b, a == b))"))
    assert costly.status == 422, costly.body
    cause = costly.body["details"]["causes"][0]
    assert cause["reason"] == "FieldValueForbidden"
    assert cause["field"] == "spec.validation.openAPIV3Schema.properties[spec].x-kubernetes-validations[0].rule"
    assert cause["message"].startswith("Forbidden: estimated rule cost exceeds budget by factor of more than 100x")

    assert (await api.post(f"{prefix}{CRD_PATH}", with_names(100, nested))).status == 201
    await wait_established(api, prefix, f"widgets.{group}")
    path = f"{prefix}/apis/{group}/v1/namespaces/default/widgets"
    await served(api, path)
    names = [f"name-{i}" for i in range(100)]
    assert (await api.post(path, widget("fine", group=group, names=names))).status == 201
    refused = await api.post(path, widget("long", group=group, names=[*names[:99], "x" * 21]))
    assert refused.status == 422, refused.body
    assert 'spec: Invalid value: "object": names are at most 20 characters' in refused.body["message"]


async def test_bad_crds_are_422_and_not_stored(api: Api, unique: str) -> None:
    group = f"bad{unique}.example.com"
    crd = widget_crd(group)
    crd["metadata"]["name"] = f"wrong.{group}"
    reply = await api.post(f"/clusters/bad-{unique}{CRD_PATH}", crd)
    assert reply.status == 422 and reply.body["details"]["causes"][0]["field"] == "metadata.name"
    no_type = widget_crd(group)
    no_type["spec"]["versions"][0]["schema"]["openAPIV3Schema"]["properties"]["spec"]["properties"]["size"] = {}
    reply = await api.post(f"/clusters/bad-{unique}{CRD_PATH}", no_type)
    assert reply.status == 422 and "type" in reply.body["message"]
    assert (await api.get(f"/clusters/bad-{unique}{CRD_PATH}")).body["items"] == []


async def test_status_and_scale_subresources(api: Api, crd_cluster) -> None:
    prefix, group = crd_cluster
    path = f"{prefix}/apis/{group}/v1/namespaces/default/widgets"
    created = (await api.post(path, dict(widget("s", group=group, replicas=1), status={"replicas": 9}))).body
    assert "status" not in created
    with_status = dict(created, status={"replicas": 1, "ready": True})
    after = await api.put(f"{path}/s/status", with_status)
    assert after.status == 200 and after.body["status"]["ready"] is True
    assert after.body["metadata"]["generation"] == 1
    scale = await api.get(f"{path}/s/scale")
    assert scale.body["kind"] == "Scale" and scale.body["spec"]["replicas"] == 1
    assert scale.body["status"]["replicas"] == 1
    patched = await api.patch(f"{path}/s/scale", {"spec": {"replicas": 4}}, "application/merge-patch+json")
    assert patched.status == 200 and patched.body["spec"]["replicas"] == 4
    obj = (await api.get(f"{path}/s")).body
    assert obj["spec"]["replicas"] == 4 and obj["metadata"]["generation"] == 2


async def test_server_side_apply_to_scale_owns_replicas(api: Api, crd_cluster) -> None:
    """kube's apply to /scale: the manager owns the object's replicas (entry subresource scale), and taking
    them from another applier is a conflict until forced."""
    prefix, group = crd_cluster
    path = f"{prefix}/apis/{group}/v1/namespaces/default/widgets"
    apply = "application/apply-patch+yaml"
    made = await api.patch(f"{path}/sc", widget("sc", group=group, replicas=1), apply, params={"fieldManager": "owner"})
    assert made.status == 201, made.body
    scale = {"apiVersion": "autoscaling/v1", "kind": "Scale", "metadata": {"name": "sc"}, "spec": {"replicas": 3}}
    refused = await api.patch(f"{path}/sc/scale", scale, apply, params={"fieldManager": "hpa"})
    assert refused.status == 409, refused.body
    assert refused.body["message"] == 'Apply failed with 1 conflict: conflict with "owner": .spec.replicas'
    forced = await api.patch(f"{path}/sc/scale", scale, apply, params={"fieldManager": "hpa", "force": "true"})
    assert forced.status == 200, forced.body
    assert forced.body["kind"] == "Scale" and forced.body["spec"]["replicas"] == 3
    obj = (await api.get(f"{path}/sc")).body
    assert obj["spec"]["replicas"] == 3
    entries = {(e["manager"], e["operation"]): e for e in obj["metadata"]["managedFields"]}
    assert entries[("hpa", "Apply")]["subresource"] == "scale"
    assert entries[("hpa", "Apply")]["fieldsV1"] == {"f:spec": {"f:replicas": {}}}
    assert "f:replicas" not in entries[("owner", "Apply")]["fieldsV1"]["f:spec"]
    again = await api.patch(f"{path}/sc/scale", scale, apply, params={"fieldManager": "hpa"})
    assert again.status == 200 and again.body["metadata"]["resourceVersion"] == obj["metadata"]["resourceVersion"]
    wrong = await api.patch(f"{path}/sc/scale", dict(scale, apiVersion="autoscaling/v2"), apply,
                            params={"fieldManager": "hpa"})
    assert wrong.status == 400 and "expected: autoscaling/v1" in wrong.body["message"]
    negative = await api.patch(f"{path}/sc/scale", dict(scale, spec={"replicas": -1}), apply,
                               params={"fieldManager": "hpa"})
    assert negative.status == 422, negative.body
    missing = await api.patch(f"{path}/none/scale", dict(scale, metadata={"name": "none"}), apply,
                              params={"fieldManager": "hpa"})
    assert missing.status == 404, missing.body


async def test_strategic_merge_patch_on_a_custom_resource_is_415(api: Api, crd_cluster) -> None:
    prefix, group = crd_cluster
    path = f"{prefix}/apis/{group}/v1/namespaces/default/widgets"
    await api.post(path, widget("smp", group=group))
    reply = await api.patch(f"{path}/smp", {"spec": {"size": 4}}, "application/strategic-merge-patch+json")
    assert reply.status == 415 and reply.body["reason"] == "UnsupportedMediaType"


async def test_openapi_v3_carries_the_crd_schema_per_cluster(api: Api, crd_cluster, unique: str) -> None:
    prefix, group = crd_cluster
    index = (await api.get(f"{prefix}/openapi/v3")).body["paths"]
    assert f"apis/{group}/v1" in index
    doc = (await api.get(index[f"apis/{group}/v1"]["serverRelativeURL"].split("?")[0])).body
    schemas = [s for s in doc["components"]["schemas"].values()
               if s.get("x-kubernetes-group-version-kind", [{}])[0].get("kind") == "Widget"]
    assert schemas[0]["properties"]["spec"]["properties"]["size"]["maximum"] == 10
    elsewhere = (await api.get(f"/clusters/nocrd-{unique}/openapi/v3")).body["paths"]
    assert f"apis/{group}/v1" not in elsewhere


async def test_tables_use_additional_printer_columns(api: Api, crd_cluster) -> None:
    prefix, group = crd_cluster
    path = f"{prefix}/apis/{group}/v1/namespaces/default/widgets"
    await api.post(path, widget("t", size=7, group=group))
    table = await api.get(path, headers={"Accept": "application/json;as=Table;v=v1;g=meta.k8s.io"})
    assert [c["name"] for c in table.body["columnDefinitions"]] == ["Name", "Size", "Color", "Age"]
    assert table.body["rows"][0]["cells"][:3] == ["t", 7, "red"]


# --- the real kubectl --------------------------------------------------------------------------


@pytest.fixture
def kubectl_crd(kcp: KcpServer, unique: str) -> tuple[str, str]:
    """A logical cluster context for kubectl with the widgets CRD; returns (kubeconfig path, group)."""
    cluster, group = f"kc-crd-{unique}", f"kc{unique}.example.com"
    path = cluster_kubeconfig(kcp, cluster, unique)
    kubectl(path, "apply", "-f", "-", input_text=yaml.safe_dump(widget_crd(group)))
    kubectl(path, "wait", "--for", "condition=Established", f"crd/widgets.{group}", "--timeout=10s")
    return str(path), group


def kubectl(kubeconfig: str | Path, *args: str, input_text: str | None = None, check: bool = True,
            env: dict[str, str] | None = None) -> subprocess.CompletedProcess[str]:
    result = subprocess.run([kubectl_binary(), "--kubeconfig", str(kubeconfig), *args], input=input_text,
                            capture_output=True, text=True, timeout=60, env={**os.environ, **(env or {})})
    if check and result.returncode != 0:
        raise AssertionError(f"kubectl {' '.join(args)} failed:\n{result.stderr}")
    return result


def test_kubectl_apply_diff_and_get_with_columns(kubectl_crd: tuple[str, str]) -> None:
    config, group = kubectl_crd
    manifest = widget("k1", size=2, group=group)
    assert "created" in kubectl(config, "apply", "-f", "-", input_text=yaml.safe_dump(manifest)).stdout
    assert "unchanged" in kubectl(config, "apply", "-f", "-", input_text=yaml.safe_dump(manifest)).stdout
    manifest["spec"]["size"] = 4
    diff = kubectl(config, "diff", "-f", "-", input_text=yaml.safe_dump(manifest), check=False)
    assert diff.returncode == 1 and "-  size: 2" in diff.stdout and "+  size: 4" in diff.stdout
    assert "configured" in kubectl(config, "apply", "-f", "-", input_text=yaml.safe_dump(manifest)).stdout
    table = kubectl(config, "get", "widgets").stdout.splitlines()
    assert table[0].split() == ["NAME", "SIZE", "COLOR", "AGE"]
    assert table[1].split()[:3] == ["k1", "4", "red"]
    assert "widget" in kubectl(config, "get", "wd", "-o", "name").stdout  # short name
    assert f"widget.{group}/k1" in kubectl(config, "get", "gadgets", "-o", "name").stdout  # category
    bad = dict(manifest, spec={"size": 99})
    refused = kubectl(config, "apply", "-f", "-", input_text=yaml.safe_dump(bad), check=False)
    assert refused.returncode != 0 and "spec.size" in refused.stderr and "less than or equal to 10" in refused.stderr


def test_kubectl_patch_label_annotate_scale_wait_and_delete(kubectl_crd: tuple[str, str]) -> None:
    config, group = kubectl_crd
    kubectl(config, "apply", "-f", "-", input_text=yaml.safe_dump(widget("k2", group=group, replicas=1)))
    kubectl(config, "patch", "widget", "k2", "--type=merge", "-p", '{"spec":{"size":5}}')
    kubectl(config, "patch", "widget", "k2", "--type=json", "-p", '[{"op":"replace","path":"/spec/color","value":"blue"}]')
    smp = kubectl(config, "patch", "widget", "k2", "-p", '{"spec":{"size":6}}', check=False)
    assert (smp.returncode != 0 and "415" in smp.stderr) or "not supported" in smp.stderr.lower()
    kubectl(config, "label", "widget", "k2", "tier=gold")
    kubectl(config, "annotate", "widget", "k2", "note=hi")
    kubectl(config, "scale", "widget", "k2", "--replicas=3")
    got = json.loads(kubectl(config, "get", "widget", "k2", "-o", "json").stdout)
    assert got["spec"] == {"size": 5, "color": "blue", "replicas": 3}
    assert got["metadata"]["labels"] == {"tier": "gold"} and got["metadata"]["annotations"]["note"] == "hi"
    kubectl(config, "wait", "--for=jsonpath={.spec.replicas}=3", "widget/k2", "--timeout=10s")
    assert 'deleted' in kubectl(config, "delete", "widget", "k2", "--wait=true").stdout
    assert kubectl(config, "get", "widget", "k2", check=False).returncode != 0


def test_kubectl_wait_for_a_status_condition_and_get_watch(kcp: KcpServer, kubectl_crd: tuple[str, str]) -> None:
    config, group = kubectl_crd
    kubectl(config, "apply", "-f", "-", input_text=yaml.safe_dump(widget("k3", group=group)))
    waiter = subprocess.Popen([kubectl_binary(), "--kubeconfig", config, "wait", "--for=condition=Ready",
                               "widget/k3", "--timeout=20s"], stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                              text=True)
    watcher = subprocess.Popen([kubectl_binary(), "--kubeconfig", config, "get", "widgets", "-w",
                                "--request-timeout=0"], stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    try:
        assert watcher.stdout is not None
        output = OutputLines(watcher.stdout)
        output.wait_for("k3")  # listed: kubectl watches from the list's resourceVersion on
        # kubectl wait reads the object, then watches from its resourceVersion: met before or after, it sees it
        status = {"status": {"conditions": [{"type": "Ready", "status": "True"}]}}
        kubectl(config, "patch", "widget", "k3", "--subresource=status", "--type=merge", "-p", json.dumps(status))
        out, err = waiter.communicate(timeout=20)
        assert waiter.returncode == 0, err
        assert "condition met" in out
        kubectl(config, "apply", "-f", "-", input_text=yaml.safe_dump(widget("k4", group=group)))
        output.wait_for("k4")
    finally:
        watcher.terminate()
        waiter.kill()


def test_kubectl_edit_with_an_editor_script(kubectl_crd: tuple[str, str], tmp_path: Path) -> None:
    config, group = kubectl_crd
    kubectl(config, "apply", "-f", "-", input_text=yaml.safe_dump(widget("k5", group=group)))
    editor = tmp_path / "editor.py"
    editor.write_text("import sys, re\npath = sys.argv[1]\ntext = open(path).read()\n"
                      "open(path, 'w').write(re.sub(r'size: 3', 'size: 8', text))\n")
    kubectl(config, "edit", "widget", "k5", env={"KUBE_EDITOR": f"{sys.executable} {editor}"})
    got = json.loads(kubectl(config, "get", "widget", "k5", "-o", "json").stdout)
    assert got["spec"]["size"] == 8


def test_kubectl_explain_prints_the_schema_description(kubectl_crd: tuple[str, str]) -> None:
    config, _ = kubectl_crd
    out = kubectl(config, "explain", "widget.spec.size").stdout
    assert "How many parts the widget has." in out


def test_kubectl_api_resources_lists_the_crd_with_short_names_and_categories(kubectl_crd: tuple[str, str]) -> None:
    config, group = kubectl_crd
    out = kubectl(config, "api-resources", "--api-group", group).stdout.splitlines()
    assert out[1].split()[:2] == ["widgets", "wd"]


def test_kubectl_get_deployments_served_as_a_crd_prints_kube_columns(kcp: KcpServer, unique: str) -> None:
    """Seed 004's demo: Deployments imported as a CRD print READY 8/15 as on a real cluster."""
    cluster = f"deploy-{unique}"
    config = yaml.safe_load(kcp.kubeconfig.read_text())
    base = config["clusters"][0]["cluster"]["server"]
    config["clusters"][0]["cluster"]["server"] = f"{base}/clusters/{cluster}"
    path = kcp.root / f"kubeconfig-deploy-{unique}"
    path.write_text(yaml.safe_dump(config))
    open_object = {"type": "object", "x-kubernetes-preserve-unknown-fields": True}
    crd = {"apiVersion": "apiextensions.k8s.io/v1", "kind": "CustomResourceDefinition",
           "metadata": {"name": "deployments.apps"},
           "spec": {"group": "apps", "scope": "Namespaced",
                    "names": {"plural": "deployments", "kind": "Deployment", "shortNames": ["deploy"],
                              "categories": ["all"]},
                    "versions": [{"name": "v1", "served": True, "storage": True,
                                  "schema": {"openAPIV3Schema": {"type": "object", "properties": {
                                      "spec": open_object, "status": open_object}}},
                                  "subresources": {"status": {}, "scale": {
                                      "specReplicasPath": ".spec.replicas",
                                      "statusReplicasPath": ".status.replicas"}}}]}}
    kubectl(path, "apply", "-f", "-", input_text=yaml.safe_dump(crd))
    kubectl(path, "wait", "--for", "condition=Established", "crd/deployments.apps", "--timeout=10s")
    deployment = {"apiVersion": "apps/v1", "kind": "Deployment", "metadata": {"name": "web"},
                  "spec": {"replicas": 15, "selector": {"matchLabels": {"app": "web"}},
                           "template": {"metadata": {"labels": {"app": "web"}},
                                        "spec": {"containers": [{"name": "nginx", "image": "nginx:1.27"}]}}}}
    kubectl(path, "apply", "-f", "-", input_text=yaml.safe_dump(deployment))
    status = {"status": {"replicas": 15, "readyReplicas": 8, "updatedReplicas": 15, "availableReplicas": 8}}
    kubectl(path, "patch", "deployment", "web", "--subresource=status", "--type=merge", "-p", json.dumps(status))
    table = kubectl(path, "get", "deployments").stdout.splitlines()
    assert table[0].split() == ["NAME", "READY", "UP-TO-DATE", "AVAILABLE", "AGE"]
    assert table[1].split()[:4] == ["web", "8/15", "15", "8"]
    wide = kubectl(path, "get", "deploy", "-o", "wide").stdout.splitlines()
    assert wide[0].split()[-3:] == ["CONTAINERS", "IMAGES", "SELECTOR"]
    assert wide[1].split()[-3:] == ["nginx", "nginx:1.27", "app=web"]


def test_kubectl_apply_of_a_list_keeps_fields_under_preserve_unknown_nodes(kcp: KcpServer, unique: str) -> None:
    """A `kind: List` file is validated by kubectl itself against /openapi/v2, which must not list
    properties where the server keeps unknown fields (nor type a nullable field)."""
    cluster, group = f"kc-list-{unique}", f"list{unique}.example.com"
    path = cluster_kubeconfig(kcp, cluster, unique)
    extra = {"settings": {"type": "object", "x-kubernetes-preserve-unknown-fields": True,
                          "properties": {"known": {"type": "string"}}},
             "note": {"type": "string", "nullable": True}}
    kubectl(path, "apply", "-f", "-", input_text=yaml.safe_dump(widget_crd(group, extra_props=extra)))
    kubectl(path, "wait", "--for", "condition=Established", f"crd/widgets.{group}", "--timeout=10s")
    item = widget("listed", size=1, group=group, settings={"known": "k", "surprise": {"deep": [1, 2]}}, note=None)
    item["metadata"]["namespace"] = "default"
    listed = {"apiVersion": "v1", "kind": "List", "items": [item]}
    applied = kubectl(path, "apply", "-f", "-", input_text=yaml.safe_dump(listed), check=False)
    assert applied.returncode == 0, applied.stderr
    got = json.loads(kubectl(path, "get", "widget", "listed", "-o", "json").stdout)
    assert got["spec"]["settings"] == {"known": "k", "surprise": {"deep": [1, 2]}}
    rejected = kubectl(path, "apply", "-f", "-", check=False, input_text=yaml.safe_dump(
        dict(listed, items=[dict(item, spec={"size": 1, "unknownHere": True})])))
    assert rejected.returncode != 0 and "unknownHere" in rejected.stderr  # the rest of the schema still checks
