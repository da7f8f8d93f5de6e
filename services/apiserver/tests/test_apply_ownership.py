"""Server-side apply's merge and ownership algebra, case by case from kube's documented behaviour.

Each test plays writes against one object as the registry does (merge, then record ownership) and
checks the object and who owns what afterwards.
"""

from __future__ import annotations

import copy
from typing import Any

import orjson
import pytest

from kcp_apiserver.apimachinery.status import APIError
from kcp_apiserver.registry.managedfields import decode
from kcp_apiserver.registry.ownership import ApplyOwnership, UpdateOwnership
from kcp_apiserver.registry.typeschema import TypeSchema

V = "ssa.example.com/v1"
Obj = dict[str, Any]


def widget(**spec: Any) -> Obj:
    return {"apiVersion": V, "kind": "Widget", "metadata": {"name": "w", "namespace": "ns"}, "spec": spec}


def apply(schema: TypeSchema, live: Obj | None, manager: str, config: Obj, *, force: bool = False) -> Obj:
    own = ApplyOwnership(manager, V, schema, copy.deepcopy(config), force=force, has_status=True)
    new = own.merged(copy.deepcopy(live) if live is not None else {})
    own.record(live, new, "2026-01-01T00:00:00Z")
    return new


def update(schema: TypeSchema, live: Obj, manager: str, new: Obj) -> Obj:
    new = copy.deepcopy(new)
    UpdateOwnership(manager, V, schema, has_status=True).record(live, new, "2026-01-01T00:00:01Z")
    return new


def owned(obj: Obj, manager: str, operation: str = "Apply") -> dict[str, Any]:
    managers = decode(obj["metadata"].get("managedFields")) or {}
    for entry in managers.values():
        if entry.manager == manager and entry.operation == operation:
            return entry.fields
    return {}


def test_two_appliers_share_a_map_list_item_by_item(widget_schema: TypeSchema) -> None:
    obj = apply(widget_schema, None, "a", widget(ports=[{"name": "http", "protocol": "TCP", "port": 80}]))
    obj = apply(widget_schema, obj, "b", widget(ports=[{"name": "https", "protocol": "TCP", "port": 443}]))
    assert [p["name"] for p in obj["spec"]["ports"]] == ["http", "https"]
    assert list(owned(obj, "a")["f:spec"]["f:ports"]) == ['k:{"name":"http","protocol":"TCP"}']
    assert list(owned(obj, "b")["f:spec"]["f:ports"]) == ['k:{"name":"https","protocol":"TCP"}']
    obj = apply(widget_schema, obj, "a", widget())  # a drops its item: only a's item goes
    assert [p["name"] for p in obj["spec"]["ports"]] == ["https"]
    assert owned(obj, "a") == {"f:spec": {}}  # it applied an empty spec


def test_set_items_belong_to_whoever_applied_them(widget_schema: TypeSchema) -> None:
    obj = apply(widget_schema, None, "a", widget(tags=["x", "y"]))
    obj = apply(widget_schema, obj, "b", widget(tags=["z", "x"]))
    assert obj["spec"]["tags"] == ["z", "x", "y"]  # the applier's order; live-only items stay in place
    obj = apply(widget_schema, obj, "a", widget(tags=[]))
    assert sorted(obj["spec"]["tags"]) == ["x", "z"]  # y was only a's; x is b's too


def test_an_atomic_list_has_one_owner_and_changing_it_conflicts(widget_schema: TypeSchema) -> None:
    obj = apply(widget_schema, None, "a", widget(args=["one"]))
    assert owned(obj, "a")["f:spec"] == {"f:args": {}}
    with pytest.raises(APIError) as caught:
        apply(widget_schema, obj, "b", widget(args=["two"]))
    assert caught.value.code == 409
    assert caught.value.message == 'Apply failed with 1 conflict: conflict with "a": .spec.args'
    obj = apply(widget_schema, obj, "b", widget(args=["two"]), force=True)
    assert obj["spec"]["args"] == ["two"]
    assert owned(obj, "a") == {}
    assert owned(obj, "b")["f:spec"] == {"f:args": {}}


def test_a_field_the_applier_dropped_is_removed_unless_someone_else_owns_it(widget_schema: TypeSchema) -> None:
    obj = apply(widget_schema, None, "a", widget(size=1, color="red", labels={"k": "v"}))
    obj = apply(widget_schema, obj, "b", widget(color="red"))  # same value: shared, no conflict
    obj = apply(widget_schema, obj, "a", widget(size=1))
    assert obj["spec"] == {"size": 1, "color": "red"}  # labels went empty: gone
    obj = apply(widget_schema, obj, "b", widget())
    assert "color" not in obj["spec"]


def test_force_moves_ownership_of_the_conflicting_field_only(widget_schema: TypeSchema) -> None:
    obj = apply(widget_schema, None, "a", widget(size=1, color="red"))
    with pytest.raises(APIError) as caught:
        apply(widget_schema, obj, "b", widget(size=2))
    assert caught.value.details["causes"] == [
        {"reason": "FieldManagerConflict", "message": 'conflict with "a"', "field": ".spec.size"}]
    obj = apply(widget_schema, obj, "b", widget(size=2), force=True)
    assert obj["spec"] == {"size": 2, "color": "red"}
    assert owned(obj, "a")["f:spec"] == {"f:color": {}}
    assert owned(obj, "b")["f:spec"] == {"f:size": {}}


def test_a_conflict_names_every_field_grouped_by_manager(widget_schema: TypeSchema) -> None:
    obj = apply(widget_schema, None, "a", widget(size=1, color="red"))
    edited = copy.deepcopy(obj)
    edited["spec"]["settings"] = {"mode": "fast"}
    obj = update(widget_schema, obj, "editor", edited)
    with pytest.raises(APIError) as caught:
        apply(widget_schema, obj, "b", widget(size=2, color="blue", settings={"mode": "slow"}))
    assert caught.value.message == (
        'Apply failed with 3 conflicts: conflicts with "a":\n- .spec.color\n- .spec.size\n'
        f'conflicts with "editor" using {V}:\n- .spec.settings.mode')
    assert [c["field"] for c in caught.value.details["causes"]] == [".spec.color", ".spec.size",
                                                                   ".spec.settings.mode"]


def test_an_update_takes_the_fields_it_changed_from_the_applier(widget_schema: TypeSchema) -> None:
    obj = apply(widget_schema, None, "a", widget(size=1, color="red"))
    edited = copy.deepcopy(obj)
    edited["spec"]["size"] = 5
    obj = update(widget_schema, obj, "kubectl-edit", edited)
    assert owned(obj, "a")["f:spec"] == {"f:color": {}}
    assert owned(obj, "kubectl-edit", "Update") == {"f:spec": {"f:size": {}}}
    again = update(widget_schema, obj, "kubectl-edit", obj)  # nothing changed: entries untouched
    assert again["metadata"]["managedFields"] == obj["metadata"]["managedFields"]


def test_writing_a_single_empty_entry_clears_managed_fields(widget_schema: TypeSchema) -> None:
    obj = apply(widget_schema, None, "a", widget(size=1))
    cleared = copy.deepcopy(obj)
    cleared["metadata"]["managedFields"] = [{}]
    assert "managedFields" not in update(widget_schema, obj, "x", cleared)["metadata"]


def test_invalid_managed_fields_in_a_request_are_replaced_by_the_live_ones(widget_schema: TypeSchema) -> None:
    obj = apply(widget_schema, None, "a", widget(size=1))
    bad = copy.deepcopy(obj)
    bad["metadata"]["managedFields"] = [{"manager": "m", "operation": "Bogus", "fieldsType": "FieldsV1"}]
    assert update(widget_schema, obj, "x", bad)["metadata"]["managedFields"] == obj["metadata"]["managedFields"]


def test_the_first_apply_to_an_unowned_object_conflicts_with_before_first_apply(widget_schema: TypeSchema) -> None:
    obj = widget(size=1)
    with pytest.raises(APIError) as caught:
        apply(widget_schema, obj, "a", widget(size=2))
    assert caught.value.message == f'Apply failed with 1 conflict: conflict with "before-first-apply" using {V}: .spec.size'
    obj = apply(widget_schema, obj, "a", widget(size=1))  # agreeing with it shares the field
    assert owned(obj, "a") == {"f:spec": {"f:size": {}}}


def test_status_applies_own_status_only(widget_schema: TypeSchema) -> None:
    own = ApplyOwnership("ctl", V, widget_schema, {**widget(size=9), "status": {"ready": True}},
                         subresource="status", has_status=True)
    assert own.applied == {"f:status": {"f:ready": {}}}


def test_kubectl_may_take_fields_its_client_side_apply_last_set(widget_schema: TypeSchema) -> None:
    """Only while the live value is still what the last-applied annotation says; the annotation follows."""
    annotation = "kubectl.kubernetes.io/last-applied-configuration"
    obj = widget(size=1, color="red")
    obj["metadata"]["annotations"] = {annotation: orjson.dumps(widget(size=1)).decode()}
    obj = update(widget_schema, widget(), "kubectl-client-side-apply", obj)
    with pytest.raises(APIError):  # color was never in the last-applied configuration
        apply(widget_schema, obj, "kubectl", widget(size=2, color="blue"))
    obj = apply(widget_schema, obj, "kubectl", widget(size=2))
    assert obj["spec"]["size"] == 2
    assert owned(obj, "kubectl") == {"f:spec": {"f:size": {}}}
    assert orjson.loads(obj["metadata"]["annotations"][annotation])["spec"] == {"size": 2}


def test_more_than_ten_updaters_fold_the_oldest_into_ancient_changes(widget_schema: TypeSchema) -> None:
    obj = widget()
    for i in range(12):
        edited = copy.deepcopy(obj)
        edited["spec"]["labels"] = {**edited["spec"].get("labels", {}), f"k{i}": "v"}
        new = copy.deepcopy(edited)
        UpdateOwnership(f"m{i:02d}", V, widget_schema).record(obj, new, f"2026-01-01T00:00:{i:02d}Z")
        obj = new
    names = [e["manager"] for e in obj["metadata"]["managedFields"]]
    assert len(names) == 10 and "ancient-changes" in names and "m00" not in names and "m11" in names
    ancient = owned(obj, "ancient-changes", "Update")
    assert ancient == {"f:spec": {"f:labels": {".": {}, "f:k0": {}, "f:k1": {}, "f:k2": {}}}}


def _service(*ports: Obj) -> Obj:
    return {"apiVersion": "v1", "kind": "Service", "metadata": {"name": "web", "namespace": "ns"},
            "spec": {"ports": list(ports)}}


def test_an_applied_port_without_protocol_is_the_live_tcp_port() -> None:
    """kube defaults a map-list item's key fields in the applied configuration: no second item, no 422."""
    from kcp_apiserver.registry import builtinschemas

    service = builtinschemas.type_schema("io.k8s.api.core.v1.Service")
    live = update(service, {}, "creator", _service({"port": 80, "protocol": "TCP", "targetPort": 8080}))
    obj = apply(service, live, "syncer", _service({"port": 80, "targetPort": 8080}), force=True)
    assert obj["spec"]["ports"] == [{"port": 80, "protocol": "TCP", "targetPort": 8080}]
    assert owned(obj, "syncer")["f:spec"]["f:ports"] == {
        'k:{"port":80,"protocol":"TCP"}': {".": {}, "f:port": {}, "f:targetPort": {}}}
    obj = apply(service, obj, "syncer", _service({"port": 80, "targetPort": 9090}), force=True)  # creator's
    assert obj["spec"]["ports"] == [{"port": 80, "protocol": "TCP", "targetPort": 9090}]
    fresh = apply(service, None, "syncer", _service({"port": 80}))  # a new item gets the default too
    assert fresh["spec"]["ports"] == [{"port": 80, "protocol": "TCP"}]
    assert apply(service, fresh, "syncer", _service({"port": 80})) == fresh


def test_a_crd_key_default_keys_the_applied_item() -> None:
    from kcp_apiserver.apiextensions.resources import resources_for

    port = {"type": "object", "properties": {"name": {"type": "string"},
                                             "protocol": {"type": "string", "default": "TCP"}}}
    schema = {"type": "object", "properties": {"spec": {"type": "object", "properties": {"ports": {
        "type": "array", "items": port, "x-kubernetes-list-type": "map",
        "x-kubernetes-list-map-keys": ["name", "protocol"]}}}}}
    crd: Obj = {"metadata": {"name": "gates.ssa.example.com"},
                "spec": {"group": "ssa.example.com", "scope": "Namespaced", "names": {"plural": "gates", "kind": "Gate"},
                         "versions": [{"name": "v1", "served": True, "storage": True,
                                       "schema": {"openAPIV3Schema": schema}}]}}
    [res] = resources_for(crd)
    assert res.type_schema is not None
    live = widget(ports=[{"name": "http", "protocol": "TCP"}])
    obj = apply(res.type_schema, live, "a", widget(ports=[{"name": "http"}]), force=True)
    assert obj["spec"]["ports"] == [{"name": "http", "protocol": "TCP"}]
    assert list(owned(obj, "a")["f:spec"]["f:ports"]) == ['k:{"name":"http","protocol":"TCP"}']
