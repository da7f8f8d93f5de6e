"""Server-side apply and managedFields with the real kubectl (1.32 and 1.35) and over raw HTTP."""

from __future__ import annotations

import asyncio
import json
import stat
from pathlib import Path
from typing import Any

import pytest
import yaml

from api import Api
from kcp_process import KcpServer, run_kubectl

APPLY = "application/apply-patch+yaml"


def configmap(ns: str, name: str, data: dict[str, str], **meta: Any) -> dict[str, Any]:
    return {"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": name, "namespace": ns, **meta},
            "data": data}


def get(kcp: KcpServer, ns: str, kind: str, name: str) -> dict[str, Any]:
    out = run_kubectl(kcp, "-n", ns, "get", kind, name, "-o", "json", "--show-managed-fields").stdout
    return json.loads(out)  # type: ignore[no-any-return]


def managers(obj: dict[str, Any]) -> dict[tuple[str, str], dict[str, Any]]:
    """managedFields by (manager, operation): their fieldsV1."""
    return {(e["manager"], e["operation"]): e["fieldsV1"] for e in obj["metadata"].get("managedFields", [])}


@pytest.fixture
def ns(kcp: KcpServer, unique: str) -> str:
    name = f"ssa-{unique}"
    run_kubectl(kcp, "create", "namespace", name)
    return name


@pytest.mark.usefixtures("kubectl_version")
def test_kubectl_server_side_apply_creates_keeps_and_changes(kcp: KcpServer, ns: str) -> None:
    manifest = yaml.safe_dump(configmap(ns, "app", {"a": "1", "b": "2"}, labels={"tier": "web"}))
    out = run_kubectl(kcp, "apply", "--server-side", "-f", "-", input_text=manifest).stdout
    assert "configmap/app serverside-applied" in out
    created = get(kcp, ns, "configmap", "app")
    assert managers(created) == {("kubectl", "Apply"): {"f:data": {"f:a": {}, "f:b": {}},
                                                        "f:metadata": {"f:labels": {"f:tier": {}}}}}
    [entry] = created["metadata"]["managedFields"]
    assert entry["apiVersion"] == "v1" and entry["fieldsType"] == "FieldsV1" and entry["time"].endswith("Z")

    run_kubectl(kcp, "apply", "--server-side", "-f", "-", input_text=manifest)
    assert get(kcp, ns, "configmap", "app")["metadata"]["resourceVersion"] == created["metadata"]["resourceVersion"]

    changed = yaml.safe_dump(configmap(ns, "app", {"a": "3"}))  # b and the label are dropped: removed
    run_kubectl(kcp, "apply", "--server-side", "-f", "-", input_text=changed)
    after = get(kcp, ns, "configmap", "app")
    assert after["data"] == {"a": "3"}
    assert "labels" not in after["metadata"]
    assert managers(after) == {("kubectl", "Apply"): {"f:data": {"f:a": {}}}}
    plain = json.loads(run_kubectl(kcp, "-n", ns, "get", "configmap", "app", "-o", "json").stdout)
    assert "managedFields" not in plain["metadata"]  # kubectl hides them unless asked


@pytest.mark.usefixtures("kubectl_version")
def test_a_conflict_fails_until_forced(kcp: KcpServer, ns: str) -> None:
    run_kubectl(kcp, "apply", "--server-side", "-f", "-", input_text=yaml.safe_dump(configmap(ns, "c", {"key": "1"})))
    run_kubectl(kcp, "-n", ns, "patch", "configmap", "c", "-p", '{"data":{"key":"2"}}', "--field-manager=other")
    mine = yaml.safe_dump(configmap(ns, "c", {"key": "3"}))
    refused = run_kubectl(kcp, "apply", "--server-side", "-f", "-", input_text=mine, check=False)
    assert refused.returncode == 1
    assert 'Apply failed with 1 conflict: conflict with "other" using v1: .data.key' in refused.stderr
    assert "--force-conflicts" in refused.stderr
    assert get(kcp, ns, "configmap", "c")["data"] == {"key": "2"}
    run_kubectl(kcp, "apply", "--server-side", "--force-conflicts", "-f", "-", input_text=mine)
    forced = get(kcp, ns, "configmap", "c")
    assert forced["data"] == {"key": "3"}
    assert managers(forced) == {("kubectl", "Apply"): {"f:data": {"f:key": {}}}}


@pytest.mark.usefixtures("kubectl_version")
def test_server_dry_run_stores_nothing(kcp: KcpServer, ns: str) -> None:
    run_kubectl(kcp, "apply", "--server-side", "-f", "-", input_text=yaml.safe_dump(configmap(ns, "d", {"k": "1"})))
    before = get(kcp, ns, "configmap", "d")
    out = run_kubectl(kcp, "apply", "--server-side", "--dry-run=server", "-o", "json", "-f", "-",
                      input_text=yaml.safe_dump(configmap(ns, "d", {"k": "2"}))).stdout
    assert json.loads(out)["data"] == {"k": "2"}
    after = get(kcp, ns, "configmap", "d")
    assert after["data"] == {"k": "1"}
    assert after["metadata"]["resourceVersion"] == before["metadata"]["resourceVersion"]


@pytest.mark.usefixtures("kubectl_version")
def test_server_side_apply_takes_over_from_client_side_apply(kcp: KcpServer, ns: str) -> None:
    run_kubectl(kcp, "apply", "-f", "-", input_text=yaml.safe_dump(configmap(ns, "m", {"a": "1", "b": "2"})))
    assert ("kubectl-client-side-apply", "Update") in managers(get(kcp, ns, "configmap", "m"))
    run_kubectl(kcp, "apply", "--server-side", "-f", "-", input_text=yaml.safe_dump(configmap(ns, "m", {"a": "5"})))
    after = get(kcp, ns, "configmap", "m")
    assert after["data"] == {"a": "5"}  # b, which client-side apply had set, went with the migration
    assert ("kubectl-client-side-apply", "Update") not in managers(after)
    assert managers(after)[("kubectl", "Apply")]["f:data"] == {"f:a": {}}


@pytest.mark.usefixtures("kubectl_version")
def test_client_side_apply_and_edit_record_their_managers(kcp: KcpServer, ns: str, tmp_path: Path) -> None:
    run_kubectl(kcp, "apply", "-f", "-", input_text=yaml.safe_dump(configmap(ns, "e", {"a": "1"})))
    editor = tmp_path / "editor.sh"
    editor.write_text("#!/bin/sh\nsed -i 's/a: \"1\"/a: \"2\"/' \"$1\"\n")
    editor.chmod(editor.stat().st_mode | stat.S_IEXEC)
    out = run_kubectl(kcp, "-n", ns, "edit", "configmap", "e", env={"EDITOR": str(editor), "KUBE_EDITOR": str(editor)})
    assert "configmap/e edited" in out.stdout
    after = get(kcp, ns, "configmap", "e")
    assert after["data"] == {"a": "2"}
    owners = managers(after)
    assert owners[("kubectl-edit", "Update")] == {"f:data": {"f:a": {}}}
    assert "f:a" not in owners[("kubectl-client-side-apply", "Update")].get("f:data", {})


async def test_kubernetes_asyncio_applies_with_the_apply_content_type(kcp: KcpServer, namespace: str) -> None:
    from kubernetes_asyncio import client, config

    api_client = await config.new_client_from_config(config_file=str(kcp.kubeconfig))
    async with api_client:
        core = client.CoreV1Api(api_client)
        body = configmap(namespace, "lib", {"a": "1"})
        applied = await core.patch_namespaced_config_map("lib", namespace, body, field_manager="lib",
                                                         _content_type=APPLY)
        assert applied.data == {"a": "1"}
        [entry] = applied.metadata.managed_fields
        assert (entry.manager, entry.operation) == ("lib", "Apply")
        other = await core.patch_namespaced_config_map("lib", namespace, configmap(namespace, "lib", {"a": "2"}),
                                                       field_manager="other", force=True, _content_type=APPLY)
        assert other.data == {"a": "2"}
        assert [e.manager for e in other.metadata.managed_fields] == ["other"]


# -- raw HTTP: what kubectl never sends -----------------------------------------------------------

def cm_path(ns: str, name: str = "") -> str:
    return f"/api/v1/namespaces/{ns}/configmaps" + (f"/{name}" if name else "")


async def test_apply_creates_with_201_and_requires_a_field_manager(api: Api, namespace: str) -> None:
    body = configmap(namespace, "x", {"a": "1"})
    missing = await api.patch(cm_path(namespace, "x"), body, APPLY)
    assert missing.status == 422, missing.body
    assert missing.body["message"] == ('PatchOptions.meta.k8s.io "" is invalid: fieldManager: Required value: '
                                       "is required for apply patch")
    too_long = await api.patch(cm_path(namespace, "x"), body, APPLY, params={"fieldManager": "m" * 129})
    assert too_long.status == 422 and too_long.body["details"]["causes"][0]["field"] == "fieldManager"
    assert (await api.get(cm_path(namespace, "x"))).status == 404  # nothing stored on either error
    created = await api.patch(cm_path(namespace, "x"), body, APPLY, params={"fieldManager": "tool"})
    assert created.status == 201, created.body
    assert created.body["metadata"]["managedFields"][0]["manager"] == "tool"
    again = await api.patch(cm_path(namespace, "x"), body, APPLY, params={"fieldManager": "tool"})
    assert again.status == 200
    assert again.body["metadata"]["resourceVersion"] == created.body["metadata"]["resourceVersion"]



async def test_an_apply_naming_a_resource_version_holds_only_on_that_version(api: Api, namespace: str) -> None:
    """kube's optimistic lock for apply (the syncer relies on it when it carries values it read from a cache):
    a stale resourceVersion is a 409 Conflict and changes nothing; the current one applies."""
    params = {"fieldManager": "tool"}
    first = await api.patch(cm_path(namespace, "v"), configmap(namespace, "v", {"a": "1"}), APPLY, params=params)
    version = first.body["metadata"]["resourceVersion"]
    changed = await api.patch(cm_path(namespace, "v"), configmap(namespace, "v", {"a": "2"}), APPLY, params=params)
    stale = await api.patch(cm_path(namespace, "v"), configmap(namespace, "v", {"a": "3"}, resourceVersion=version),
                            APPLY, params=params)
    assert (stale.status, stale.body["reason"]) == (409, "Conflict"), stale.body
    assert (await api.get(cm_path(namespace, "v"))).body["data"] == {"a": "2"}
    current = changed.body["metadata"]["resourceVersion"]
    held = await api.patch(cm_path(namespace, "v"), configmap(namespace, "v", {"a": "3"}, resourceVersion=current),
                           APPLY, params=params)
    assert held.status == 200 and held.body["data"] == {"a": "3"}, held.body


async def test_apply_accepts_yaml_and_refuses_bad_bodies(api: Api, namespace: str) -> None:
    path, params = cm_path(namespace, "y"), {"fieldManager": "tool"}
    text = f"apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: y\n  namespace: {namespace}\ndata:\n  k: v\n"
    made = await api.request("PATCH", path, raw=text.encode(), content_type=APPLY, params=params)
    assert made.status == 201 and made.body["data"] == {"k": "v"}
    unparsable = await api.request("PATCH", path, raw=b"data: [unclosed", content_type=APPLY, params=params)
    assert unparsable.status == 400
    wrong_version = await api.patch(path, {**configmap(namespace, "y", {}), "apiVersion": "v2"}, APPLY, params=params)
    assert wrong_version.status == 400
    assert wrong_version.body["message"] == ("Incorrect version specified in apply patch. Specified patch version: "
                                             "v2, expected: v1")
    wrong_kind = await api.patch(path, {**configmap(namespace, "y", {}), "kind": "Secret"}, APPLY, params=params)
    assert wrong_kind.status == 400
    with_fields = configmap(namespace, "y", {"k": "w"}, managedFields=[{"manager": "x"}])
    assert (await api.patch(path, with_fields, APPLY, params=params)).status == 400
    assert (await api.get(path)).body["data"] == {"k": "v"}
    forced_merge = await api.patch(path, {"data": {"k": "z"}}, "application/merge-patch+json",
                                   params={"force": "true"})
    assert forced_merge.status == 422  # force is for apply only


async def test_duplicate_keys_in_a_map_list_are_422_naming_the_field(api: Api, namespace: str) -> None:
    role = {"apiVersion": "rbac.authorization.k8s.io/v1", "kind": "Role", "metadata": {"name": "r"},
            "rules": [{"apiGroups": [""], "resources": ["configmaps"], "verbs": ["get", "get"]}]}
    path = f"/apis/rbac.authorization.k8s.io/v1/namespaces/{namespace}/roles/r"
    # verbs is atomic in kube's schema: repeated verbs are not duplicates; a set is needed for that
    assert (await api.patch(path, role, APPLY, params={"fieldManager": "t"})).status == 201
    sa = {"apiVersion": "v1", "kind": "ServiceAccount", "metadata": {"name": "sa"},
          "secrets": [{"name": "one"}, {"name": "one"}]}
    dup = await api.patch(f"/api/v1/namespaces/{namespace}/serviceaccounts/sa", sa, APPLY,
                          params={"fieldManager": "t"})
    assert dup.status == 422, dup.body
    assert dup.body["details"]["causes"][0]["field"] == "secrets"
    assert (await api.get(f"/api/v1/namespaces/{namespace}/serviceaccounts/sa")).status == 404


async def test_managed_fields_are_cleared_by_one_empty_entry(api: Api, namespace: str) -> None:
    made = await api.post(cm_path(namespace), configmap(namespace, "z", {"a": "1"}),
                          params={"fieldManager": "maker"})
    assert made.body["metadata"]["managedFields"][0]["manager"] == "maker"
    assert made.body["metadata"]["managedFields"][0]["operation"] == "Update"
    cleared = await api.patch(cm_path(namespace, "z"), {"metadata": {"managedFields": [{}]}},
                              "application/merge-patch+json")
    assert cleared.status == 200 and "managedFields" not in cleared.body["metadata"]
    agent = await api.request("PUT", cm_path(namespace, "z"), {**cleared.body, "data": {"a": "2"}},
                              headers={"User-Agent": "mytool/1.0 (linux)"})
    assert [e["manager"] for e in agent.body["metadata"]["managedFields"]] == ["mytool"]


async def test_apply_to_status_changes_only_status_and_is_watched(api: Api, unique: str, kcp: KcpServer) -> None:
    group = f"ssa{unique}.example.com"
    crd = {"apiVersion": "apiextensions.k8s.io/v1", "kind": "CustomResourceDefinition",
           "metadata": {"name": f"gadgets.{group}"},
           "spec": {"group": group, "scope": "Namespaced",
                    "names": {"plural": "gadgets", "singular": "gadget", "kind": "Gadget", "listKind": "GadgetList"},
                    "versions": [{"name": "v1", "served": True, "storage": True, "subresources": {"status": {}},
                                  "schema": {"openAPIV3Schema": {"type": "object", "properties": {
                                      "spec": {"type": "object", "properties": {
                                          "size": {"type": "integer"},
                                          "ports": {"type": "array", "x-kubernetes-list-type": "map",
                                                    "x-kubernetes-list-map-keys": ["name"],
                                                    "items": {"type": "object", "required": ["name"], "properties": {
                                                        "name": {"type": "string"},
                                                        "port": {"type": "integer"}}}}}},
                                      "status": {"type": "object", "properties": {
                                          "ready": {"type": "boolean"}}}}}}}]}}
    made = await api.patch(f"/apis/apiextensions.k8s.io/v1/customresourcedefinitions/gadgets.{group}", crd, APPLY,
                           params={"fieldManager": "installer"})
    assert made.status == 201, made.body
    run_kubectl(kcp, "wait", "--for=condition=Established", f"crd/gadgets.{group}", "--timeout=60s")
    path = f"/apis/{group}/v1/namespaces/default/gadgets/g"
    gadget = {"apiVersion": f"{group}/v1", "kind": "Gadget", "metadata": {"name": "g"},
              "spec": {"size": 1, "ports": [{"name": "a", "port": 1}]}}
    first = await api.patch(path, gadget, APPLY, params={"fieldManager": "owner"})
    assert first.status == 201, first.body
    rv = first.body["metadata"]["resourceVersion"]
    opened = asyncio.Event()
    events: list[dict[str, Any]] = []

    async def watch() -> None:
        async for event in api.watch(f"/apis/{group}/v1/namespaces/default/gadgets",
                                     {"resourceVersion": rv, "fieldSelector": "metadata.name=g"}, opened=opened):
            events.append(event)
            return

    watching = asyncio.create_task(watch())
    await asyncio.wait_for(opened.wait(), 30)
    status = {"apiVersion": f"{group}/v1", "kind": "Gadget", "metadata": {"name": "g"},
              "spec": {"size": 99}, "status": {"ready": True}}
    applied = await api.patch(path + "/status", status, APPLY, params={"fieldManager": "ctl"})
    assert applied.status == 200, applied.body
    assert applied.body["status"] == {"ready": True} and applied.body["spec"]["size"] == 1
    entry = next(e for e in applied.body["metadata"]["managedFields"] if e["manager"] == "ctl")
    assert entry["subresource"] == "status" and entry["fieldsV1"] == {"f:status": {"f:ready": {}}}
    await asyncio.wait_for(watching, 30)
    assert events[0]["type"] == "MODIFIED" and events[0]["object"]["status"] == {"ready": True}
    duplicate = {**gadget, "spec": {"ports": [{"name": "a"}, {"name": "a"}]}}
    dup = await api.patch(path, duplicate, APPLY, params={"fieldManager": "owner"})
    assert dup.status == 422 and dup.body["details"]["causes"][0]["field"] == "spec.ports"



@pytest.mark.usefixtures("kubectl_version")
def test_an_applied_port_without_protocol_is_keyed_by_its_default(kcp: KcpServer, unique: str) -> None:
    """A Service-like CRD whose ports are keyed by port and protocol (default TCP), as kcp imports Services:
    applying `{port: 80}` twice, with a change, updates the one defaulted port rather than adding a second (422)."""
    group = f"ports{unique}.example.com"
    port = {"type": "object", "required": ["port"], "properties": {
        "port": {"type": "integer"}, "protocol": {"type": "string", "default": "TCP"},
        "targetPort": {"type": "integer"}}}
    crd = {"apiVersion": "apiextensions.k8s.io/v1", "kind": "CustomResourceDefinition",
           "metadata": {"name": f"services.{group}"},
           "spec": {"group": group, "scope": "Namespaced",
                    "names": {"plural": "services", "singular": "service", "kind": "Service"},
                    "versions": [{"name": "v1", "served": True, "storage": True,
                                  "schema": {"openAPIV3Schema": {"type": "object", "properties": {
                                      "spec": {"type": "object", "properties": {"ports": {
                                          "type": "array", "items": port, "x-kubernetes-list-type": "map",
                                          "x-kubernetes-list-map-keys": ["port", "protocol"]}}}}}}}]}}
    run_kubectl(kcp, "apply", "--server-side", "-f", "-", input_text=yaml.safe_dump(crd))
    run_kubectl(kcp, "wait", "--for=condition=Established", f"crd/services.{group}", "--timeout=60s")
    service = {"apiVersion": f"{group}/v1", "kind": "Service", "metadata": {"name": "web", "namespace": "default"},
               "spec": {"ports": [{"port": 80, "targetPort": 8080}]}}
    run_kubectl(kcp, "apply", "--server-side", "-f", "-", input_text=yaml.safe_dump(service))
    service["spec"]["ports"][0]["targetPort"] = 9090
    out = run_kubectl(kcp, "apply", "--server-side", "-f", "-", input_text=yaml.safe_dump(service)).stdout
    assert "serverside-applied" in out
    live = get(kcp, "default", f"services.{group}", "web")
    assert live["spec"]["ports"] == [{"port": 80, "protocol": "TCP", "targetPort": 9090}]
    assert managers(live)[("kubectl", "Apply")]["f:spec"]["f:ports"] == {
        'k:{"port":80,"protocol":"TCP"}': {".": {}, "f:port": {}, "f:targetPort": {}}}
