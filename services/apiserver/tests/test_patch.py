"""JSON patch, JSON merge patch and strategic merge patch, as kube-apiserver applies them."""

from __future__ import annotations

import copy
from typing import Any

import pytest

from kcp_apiserver.apimachinery.status import APIError
from kcp_apiserver.registry.builtinschemas import PatchMeta
from kcp_apiserver.registry.patch import (
    apply_json_patch,
    apply_merge_patch,
    apply_strategic_merge_patch,
    parse_patch,
)

POD_META = PatchMeta.for_definition("io.k8s.api.core.v1.Pod")
DEPLOYMENT_META = PatchMeta.for_definition("io.k8s.api.apps.v1.Deployment")


def pod(*containers: dict[str, Any], **metadata: Any) -> dict[str, Any]:
    return {"apiVersion": "v1", "kind": "Pod", "metadata": {"name": "p", **metadata},
            "spec": {"containers": list(containers)}}


def names(items: list[dict[str, Any]], key: str = "name") -> list[Any]:
    return [item[key] for item in items]


def directives(value: Any) -> list[str]:
    """Every `$`-key anywhere in value."""
    if isinstance(value, dict):
        return [k for k in value if k.startswith("$")] + [d for v in value.values() for d in directives(v)]
    if isinstance(value, list):
        return [d for v in value for d in directives(v)]
    return []


def smp(doc: dict[str, Any], patch: dict[str, Any], meta: PatchMeta = POD_META) -> dict[str, Any]:
    """Apply, and check the invariants every strategic merge must keep."""
    doc_before, patch_before = copy.deepcopy(doc), copy.deepcopy(patch)
    result = apply_strategic_merge_patch(doc, patch, meta)
    assert doc == doc_before and patch == patch_before
    assert directives(result) == []
    return result


# -- parse_patch ---------------------------------------------------------------------------------

def test_parse_patch_decodes_each_patch_type() -> None:
    assert parse_patch("application/json-patch+json", b'[{"op": "remove", "path": "/a"}]') == [
        {"op": "remove", "path": "/a"}]
    assert parse_patch("application/merge-patch+json", b'{"a": null}') == {"a": None}
    assert parse_patch("application/strategic-merge-patch+json; charset=utf-8", b'{"a": 1}') == {"a": 1}


def test_parse_patch_rejects_malformed_json_as_bad_request() -> None:
    with pytest.raises(APIError) as err:
        parse_patch("application/strategic-merge-patch+json", b'{"a": ')
    assert err.value.code == 400 and err.value.reason == "BadRequest"
    assert "strategic merge patch is not valid JSON" in err.value.message
    with pytest.raises(APIError) as err:
        parse_patch("application/merge-patch+json", b"")
    assert err.value.code == 400 and "empty" in err.value.message
    with pytest.raises(APIError) as err:
        parse_patch("application/merge-patch+json", b'{"a": NaN}')
    assert err.value.code == 400


def test_parse_patch_rejects_bodies_of_the_wrong_shape() -> None:
    with pytest.raises(APIError) as err:
        parse_patch("application/json-patch+json", b'{"op": "add"}')
    assert err.value.code == 400 and "array" in err.value.message
    with pytest.raises(APIError) as err:
        parse_patch("application/json-patch+json", b"[1]")
    assert err.value.code == 400
    with pytest.raises(APIError) as err:
        parse_patch("application/strategic-merge-patch+json", b"[]")
    assert err.value.code == 400 and "object" in err.value.message


def test_parse_patch_rejects_unknown_patch_types_as_unsupported_media_type() -> None:
    for content_type in ("application/json", "application/apply-patch+yaml", "text/plain"):
        with pytest.raises(APIError) as err:
            parse_patch(content_type, b"{}")
        assert err.value.code == 415 and err.value.reason == "UnsupportedMediaType"
        assert content_type in err.value.message


def test_parse_patch_limits_json_patch_operations_like_kube() -> None:
    body = b"[" + b",".join([b'{"op": "test", "path": "", "value": 1}'] * 10001) + b"]"
    with pytest.raises(APIError) as err:
        parse_patch("application/json-patch+json", body)
    assert err.value.code == 413


# -- JSON patch ----------------------------------------------------------------------------------

def test_json_patch_adds_replaces_and_removes() -> None:
    doc = {"metadata": {"name": "a", "labels": {"x": "1"}}, "data": {"k": "v"}}
    result = apply_json_patch(doc, [
        {"op": "add", "path": "/metadata/labels/y", "value": "2"},
        {"op": "replace", "path": "/data/k", "value": "w"},
        {"op": "remove", "path": "/metadata/labels/x"},
    ])
    assert result == {"metadata": {"name": "a", "labels": {"y": "2"}}, "data": {"k": "w"}}


def test_json_patch_appends_with_dash_and_inserts_by_index() -> None:
    doc = {"metadata": {"finalizers": ["a", "c"]}}
    result = apply_json_patch(doc, [
        {"op": "add", "path": "/metadata/finalizers/-", "value": "d"},
        {"op": "add", "path": "/metadata/finalizers/1", "value": "b"},
    ])
    assert result["metadata"]["finalizers"] == ["a", "b", "c", "d"]


def test_json_patch_unescapes_pointer_tokens() -> None:
    doc = {"metadata": {"annotations": {"example.com/a~b": "old"}}}
    result = apply_json_patch(doc, [{"op": "replace", "path": "/metadata/annotations/example.com~1a~0b",
                                     "value": "new"}])
    assert result["metadata"]["annotations"] == {"example.com/a~b": "new"}


def test_json_patch_moves_and_copies() -> None:
    doc = {"a": {"b": 1}, "list": [1, 2, 3]}
    result = apply_json_patch(doc, [
        {"op": "copy", "from": "/a", "path": "/c"},
        {"op": "move", "from": "/a/b", "path": "/moved"},
        {"op": "move", "from": "/list/0", "path": "/list/-"},
    ])
    assert result == {"a": {}, "c": {"b": 1}, "moved": 1, "list": [2, 3, 1]}


def test_json_patch_test_operation_passes_when_equal() -> None:
    doc = {"metadata": {"resourceVersion": "5"}, "n": 1}
    result = apply_json_patch(doc, [{"op": "test", "path": "/metadata/resourceVersion", "value": "5"},
                                    {"op": "test", "path": "/n", "value": 1.0},
                                    {"op": "replace", "path": "/n", "value": 2}])
    assert result["n"] == 2


def test_json_patch_test_failure_is_unprocessable_like_kube() -> None:
    doc = {"metadata": {"resourceVersion": "5"}}
    with pytest.raises(APIError) as err:
        apply_json_patch(doc, [{"op": "test", "path": "/metadata/resourceVersion", "value": "4"}])
    assert err.value.code == 422 and err.value.reason == "Invalid"
    assert err.value.message == "the server rejected our request due to an error in our request"
    assert "/metadata/resourceVersion" in err.value.details["causes"][0]["message"]


def test_json_patch_test_does_not_confuse_true_with_one() -> None:
    with pytest.raises(APIError) as err:
        apply_json_patch({"flag": True}, [{"op": "test", "path": "/flag", "value": 1}])
    assert err.value.code == 422


@pytest.mark.parametrize("op", [
    {"op": "remove", "path": "/missing"},
    {"op": "replace", "path": "/missing", "value": 1},
    {"op": "add", "path": "/missing/child", "value": 1},
    {"op": "add", "path": "/list/5", "value": 1},
    {"op": "add", "path": "/list/01", "value": 1},
    {"op": "move", "from": "/a", "path": "/a/b"},
    {"op": "copy", "from": "/missing", "path": "/b"},
    {"op": "add", "path": "no-slash", "value": 1},
    {"op": "add", "path": "/x"},
    {"op": "frobnicate", "path": "/a"},
    {"path": "/a"},
])
def test_json_patch_operations_that_do_not_apply_are_unprocessable(op: dict[str, Any]) -> None:
    with pytest.raises(APIError) as err:
        apply_json_patch({"a": {"b": 1}, "list": [1]}, [op])
    assert err.value.code == 422


def test_json_patch_does_not_mutate_the_input_document() -> None:
    doc = {"metadata": {"labels": {"a": "1"}}, "list": [{"x": 1}]}
    before = copy.deepcopy(doc)
    result = apply_json_patch(doc, [{"op": "add", "path": "/metadata/labels/b", "value": "2"},
                                    {"op": "replace", "path": "/list/0/x", "value": 2}])
    assert doc == before
    assert result["metadata"]["labels"] == {"a": "1", "b": "2"} and result["list"] == [{"x": 2}]


def test_json_patch_does_not_alias_values_from_the_patch() -> None:
    patch = [{"op": "add", "path": "/spec", "value": {"a": [1]}}]
    result = apply_json_patch({}, patch)
    result["spec"]["a"].append(2)
    assert patch[0]["value"] == {"a": [1]}


# -- JSON merge patch ----------------------------------------------------------------------------

def test_merge_patch_merges_maps_and_deletes_nulls() -> None:
    doc = {"metadata": {"labels": {"a": "1", "b": "2"}, "name": "x"}, "data": {"k": "v"}}
    result = apply_merge_patch(doc, {"metadata": {"labels": {"a": None, "c": "3"}}, "data": None})
    assert result == {"metadata": {"labels": {"b": "2", "c": "3"}, "name": "x"}}


def test_merge_patch_replaces_lists_and_scalars() -> None:
    doc = {"spec": {"containers": [{"name": "a"}, {"name": "b"}], "replicas": 1}}
    result = apply_merge_patch(doc, {"spec": {"containers": [{"name": "c"}], "replicas": 3}})
    assert result == {"spec": {"containers": [{"name": "c"}], "replicas": 3}}


def test_merge_patch_drops_nulls_inside_new_objects_and_replaces_non_objects() -> None:
    result = apply_merge_patch({"a": "scalar"}, {"a": {"b": None, "c": 1}, "d": {"e": None}})
    assert result == {"a": {"c": 1}, "d": {}}


def test_merge_patch_does_not_mutate_the_input_document() -> None:
    doc = {"metadata": {"labels": {"a": "1"}}, "spec": {"x": [1]}}
    before = copy.deepcopy(doc)
    result = apply_merge_patch(doc, {"metadata": {"labels": {"a": None}}})
    assert doc == before
    result["spec"]["x"].append(2)
    assert doc == before


def test_merge_patch_that_is_not_an_object_is_a_bad_request() -> None:
    with pytest.raises(APIError) as err:
        apply_merge_patch({}, [1])
    assert err.value.code == 400


# -- strategic merge patch: maps and unknown fields ----------------------------------------------

def test_strategic_merge_merges_maps_and_null_deletes_a_key() -> None:
    doc = pod({"name": "a", "image": "a:1"}, labels={"x": "1", "y": "2"})
    result = smp(doc, {"metadata": {"labels": {"x": None, "z": "3"}}})
    assert result["metadata"]["labels"] == {"y": "2", "z": "3"}
    assert result["spec"] == doc["spec"]


def test_strategic_merge_without_schema_merges_maps_and_replaces_lists() -> None:
    doc = {"spec": {"things": [1, 2], "nested": {"a": 1, "b": 2}}}
    result = smp(doc, {"spec": {"things": [3], "nested": {"b": None, "c": 3}}}, PatchMeta())
    assert result == {"spec": {"things": [3], "nested": {"a": 1, "c": 3}}}


def test_strategic_merge_replaces_lists_without_a_merge_strategy() -> None:
    doc = pod({"name": "a", "args": ["x", "y"]})
    doc["spec"]["tolerations"] = [{"key": "a"}, {"key": "b"}]
    result = smp(doc, {"spec": {"tolerations": [{"key": "c"}], "containers": [{"name": "a", "args": ["z"]}]}})
    assert result["spec"]["tolerations"] == [{"key": "c"}]
    assert result["spec"]["containers"] == [{"name": "a", "args": ["z"]}]


# -- strategic merge patch: lists merged by key --------------------------------------------------

def test_strategic_merge_merges_containers_by_name() -> None:
    doc = pod({"name": "app", "image": "app:1", "ports": [{"containerPort": 80}]},
              {"name": "sidecar", "image": "sc:1"})
    result = smp(doc, {"spec": {"containers": [{"name": "sidecar", "image": "sc:2"}]}})
    assert result["spec"]["containers"] == [
        {"name": "app", "image": "app:1", "ports": [{"containerPort": 80}]},
        {"name": "sidecar", "image": "sc:2"},
    ]


def test_strategic_merge_merges_nested_lists_inside_merged_elements() -> None:
    doc = pod({"name": "app", "env": [{"name": "A", "value": "1"}, {"name": "B", "value": "2"}]})
    result = smp(doc, {"spec": {"containers": [{"name": "app", "env": [{"name": "B", "value": "3"}]}]}})
    assert result["spec"]["containers"][0]["env"] == [{"name": "A", "value": "1"}, {"name": "B", "value": "3"}]


def test_strategic_merge_adds_new_elements_before_server_only_ones_like_kube() -> None:
    # Without $setElementOrder kube puts patch items first unless the server had them later.
    doc = pod({"name": "a"}, {"name": "b"})
    result = smp(doc, {"spec": {"containers": [{"name": "c", "image": "c:1"}]}})
    assert names(result["spec"]["containers"]) == ["c", "a", "b"]


def test_strategic_merge_keeps_server_only_elements_before_later_patched_ones() -> None:
    doc = pod({"name": "b"}, {"name": "c"}, {"name": "a"})
    result = smp(doc, {"spec": {"containers": [{"name": "a", "image": "x"}, {"name": "b", "image": "y"},
                                               {"name": "d"}]}})
    assert names(result["spec"]["containers"]) == ["c", "a", "b", "d"]


def test_strategic_merge_deletes_an_element_with_patch_delete() -> None:
    doc = pod({"name": "a"}, {"name": "b"}, {"name": "c"})
    result = smp(doc, {"spec": {"containers": [{"name": "b", "$patch": "delete"}]}})
    assert names(result["spec"]["containers"]) == ["a", "c"]


def test_strategic_merge_replaces_a_list_with_patch_replace() -> None:
    doc = pod({"name": "a", "image": "a"}, {"name": "b"})
    result = smp(doc, {"spec": {"containers": [{"$patch": "replace"}, {"name": "c", "image": "c"}]}})
    assert result["spec"]["containers"] == [{"name": "c", "image": "c"}]


def test_strategic_merge_merges_owner_references_by_uid() -> None:
    owners = [{"apiVersion": "apps/v1", "kind": "ReplicaSet", "name": "rs", "uid": "u1"},
              {"apiVersion": "v1", "kind": "ConfigMap", "name": "cm", "uid": "u2"}]
    doc = pod({"name": "a"}, ownerReferences=owners)
    result = smp(doc, {"metadata": {"ownerReferences": [
        {"uid": "u1", "controller": True},
        {"uid": "u3", "apiVersion": "v1", "kind": "Secret", "name": "s"},
        {"uid": "u2", "$patch": "delete"},
    ]}})
    assert result["metadata"]["ownerReferences"] == [
        {"apiVersion": "apps/v1", "kind": "ReplicaSet", "name": "rs", "uid": "u1", "controller": True},
        {"uid": "u3", "apiVersion": "v1", "kind": "Secret", "name": "s"},
    ]


def test_strategic_merge_without_the_merge_key_is_a_bad_request() -> None:
    with pytest.raises(APIError) as err:
        apply_strategic_merge_patch(pod({"name": "a"}), {"spec": {"containers": [{"image": "x"}]}}, POD_META)
    assert err.value.code == 400 and "merge key" in err.value.message


def test_strategic_merge_with_an_unknown_patch_directive_is_a_bad_request() -> None:
    with pytest.raises(APIError) as err:
        apply_strategic_merge_patch(pod(), {"metadata": {"$patch": "explode"}}, POD_META)
    assert err.value.code == 400


# -- strategic merge patch: primitive lists ------------------------------------------------------

def test_strategic_merge_unions_finalizers() -> None:
    doc = pod(finalizers=["a", "b"])
    result = smp(doc, {"metadata": {"finalizers": ["b", "c"]}})
    assert result["metadata"]["finalizers"] == ["a", "b", "c"]


def test_strategic_merge_deletes_from_primitive_list() -> None:
    doc = pod(finalizers=["a", "b", "c", "b"])
    result = smp(doc, {"metadata": {"$deleteFromPrimitiveList/finalizers": ["b"]}})
    assert result["metadata"]["finalizers"] == ["a", "c"]


def test_strategic_merge_delete_from_a_missing_primitive_list_is_a_no_op() -> None:
    result = smp(pod(), {"metadata": {"$deleteFromPrimitiveList/finalizers": ["b"]}})
    assert "finalizers" not in result["metadata"]


def test_strategic_merge_malformed_primitive_list_directive_is_a_bad_request() -> None:
    with pytest.raises(APIError) as err:
        apply_strategic_merge_patch(pod(), {"metadata": {"$deleteFromPrimitiveList": ["b"]}}, POD_META)
    assert err.value.code == 400


# -- strategic merge patch: $setElementOrder -----------------------------------------------------

def test_strategic_merge_set_element_order_reorders_containers() -> None:
    doc = pod({"name": "a"}, {"name": "b"}, {"name": "c"})
    result = smp(doc, {"spec": {"$setElementOrder/containers": [{"name": "c"}, {"name": "a"}, {"name": "b"}]}})
    assert names(result["spec"]["containers"]) == ["c", "a", "b"]


def test_strategic_merge_set_element_order_orders_added_and_patched_items() -> None:
    doc = pod({"name": "a", "image": "a:1"}, {"name": "b"})
    result = smp(doc, {"spec": {
        "$setElementOrder/containers": [{"name": "d"}, {"name": "a"}, {"name": "b"}, {"name": "c"}],
        "containers": [{"name": "d", "image": "d:1"}, {"name": "c", "image": "c:1"}],
    }})
    assert names(result["spec"]["containers"]) == ["d", "a", "b", "c"]
    assert result["spec"]["containers"][1] == {"name": "a", "image": "a:1"}


def test_strategic_merge_set_element_order_keeps_unlisted_server_items_where_they_were() -> None:
    # kube interleaves: an unlisted item stays before listed items that came after it on the server.
    doc = pod({"name": "c"}, {"name": "b"}, {"name": "d"}, {"name": "a"}, {"name": "e"})
    result = smp(doc, {"spec": {"$setElementOrder/containers": [{"name": "a"}, {"name": "b"}],
                                "containers": [{"name": "a", "image": "x"}, {"name": "b", "image": "y"}]}})
    assert names(result["spec"]["containers"]) == ["c", "d", "a", "b", "e"]


def test_strategic_merge_set_element_order_ignores_items_not_in_the_list() -> None:
    doc = pod({"name": "a"}, {"name": "b"})
    result = smp(doc, {"spec": {"$setElementOrder/containers": [{"name": "x"}, {"name": "b"}, {"name": "a"}]}})
    assert names(result["spec"]["containers"]) == ["b", "a"]


def test_strategic_merge_set_element_order_with_finalizer_deletion_like_kubectl_apply() -> None:
    doc = pod(finalizers=["b", "e", "a", "c", "d"])
    result = smp(doc, {"metadata": {"$setElementOrder/finalizers": ["a", "b", "f"],
                                    "$deleteFromPrimitiveList/finalizers": ["c"], "finalizers": ["f"]}})
    assert result["metadata"]["finalizers"] == ["e", "a", "b", "f", "d"]


def test_strategic_merge_set_element_order_must_agree_with_the_patch_list() -> None:
    doc = pod({"name": "a"}, {"name": "b"})
    patch = {"spec": {"$setElementOrder/containers": [{"name": "a"}, {"name": "b"}],
                      "containers": [{"name": "b", "image": "y"}, {"name": "a", "image": "x"}]}}
    with pytest.raises(APIError) as err:
        apply_strategic_merge_patch(doc, patch, POD_META)
    assert err.value.code == 400 and "doesn't match" in err.value.message


def test_strategic_merge_set_element_order_for_a_new_list_drops_its_directives() -> None:
    doc = {"metadata": {"name": "p"}, "spec": {}}
    result = smp(doc, {"spec": {"$setElementOrder/containers": [{"name": "b"}, {"name": "a"}],
                                "containers": [{"name": "b"},
                                               {"name": "a", "$setElementOrder/env": [{"name": "X"}],
                                                "env": [{"name": "X", "value": None}]}]}})
    assert result["spec"]["containers"] == [{"name": "b"}, {"name": "a", "env": [{"name": "X"}]}]


# -- strategic merge patch: $patch on maps, $retainKeys ------------------------------------------

def test_strategic_merge_patch_replace_replaces_a_map() -> None:
    doc = pod(labels={"a": "1", "b": "2"})
    result = smp(doc, {"metadata": {"labels": {"$patch": "replace", "c": "3"}}})
    assert result["metadata"]["labels"] == {"c": "3"}
    assert result["metadata"]["name"] == "p"


def test_strategic_merge_patch_delete_deletes_a_map() -> None:
    doc = pod(labels={"a": "1"}, annotations={"x": "y"})
    result = smp(doc, {"metadata": {"labels": {"$patch": "delete"}}})
    assert "labels" not in result["metadata"] and result["metadata"]["annotations"] == {"x": "y"}


def test_strategic_merge_patch_delete_on_the_root_empties_the_object() -> None:
    assert smp(pod(), {"$patch": "delete"}) == {}


def test_strategic_merge_replace_strategy_replaces_the_map() -> None:
    pdb = {"spec": {"selector": {"matchLabels": {"a": "1"}}, "minAvailable": 1}}
    meta = PatchMeta.for_definition("io.k8s.api.policy.v1.PodDisruptionBudget")
    result = smp(pdb, {"spec": {"selector": {"matchExpressions": [{"key": "b", "operator": "Exists"}]}}}, meta)
    assert result["spec"] == {"selector": {"matchExpressions": [{"key": "b", "operator": "Exists"}]},
                              "minAvailable": 1}


def test_strategic_merge_retain_keys_clears_unlisted_fields() -> None:
    deployment = {"spec": {"replicas": 1, "strategy": {"type": "RollingUpdate",
                                                       "rollingUpdate": {"maxSurge": 1}}}}
    result = smp(deployment, {"spec": {"strategy": {"$retainKeys": ["type"], "type": "Recreate"}}},
                 DEPLOYMENT_META)
    assert result["spec"] == {"replicas": 1, "strategy": {"type": "Recreate"}}


def test_strategic_merge_retain_keys_inside_a_merged_volume() -> None:
    doc = pod({"name": "a"})
    doc["spec"]["volumes"] = [{"name": "v", "emptyDir": {}}, {"name": "w", "emptyDir": {}}]
    result = smp(doc, {"spec": {"volumes": [{"name": "v", "$retainKeys": ["configMap", "name"],
                                             "configMap": {"name": "cm"}}]}})
    assert result["spec"]["volumes"] == [{"name": "v", "configMap": {"name": "cm"}}, {"name": "w", "emptyDir": {}}]


def test_strategic_merge_retain_keys_must_list_every_patched_field() -> None:
    deployment = {"spec": {"strategy": {"type": "RollingUpdate"}}}
    patch = {"spec": {"strategy": {"$retainKeys": ["type"], "type": "Recreate", "rollingUpdate": {}}}}
    with pytest.raises(APIError) as err:
        apply_strategic_merge_patch(deployment, patch, DEPLOYMENT_META)
    assert err.value.code == 400 and "retainKeys" in err.value.message


# -- strategic merge patch: whole objects --------------------------------------------------------

def test_strategic_merge_through_a_deployment_template_uses_the_real_schema() -> None:
    deployment = {"spec": {"template": {"spec": {"containers": [{"name": "a", "image": "a:1"},
                                                                {"name": "b", "image": "b:1"}]}}}}
    result = smp(deployment, {"spec": {"template": {"spec": {"containers": [{"name": "b", "image": "b:2"}]}}}},
                 DEPLOYMENT_META)
    assert result["spec"]["template"]["spec"]["containers"] == [{"name": "a", "image": "a:1"},
                                                                {"name": "b", "image": "b:2"}]


def test_strategic_merge_never_leaves_directives_in_new_values() -> None:
    doc = {"metadata": {"name": "p"}}
    result = smp(doc, {"metadata": {"labels": {"$patch": "replace", "a": "1", "b": None},
                                    "annotations": {"$patch": "delete"},
                                    "$retainKeys": ["name", "labels", "annotations"]},
                       "spec": {"containers": [{"name": "a", "$patch": "replace"}, {"name": "b"}]}})
    assert result == {"metadata": {"name": "p", "labels": {"a": "1"}}, "spec": {"containers": [{"name": "b"}]}}


def test_strategic_merge_does_not_mutate_the_input_document_or_patch() -> None:
    doc = pod({"name": "a", "env": [{"name": "X", "value": "1"}]}, finalizers=["f"], labels={"a": "1"})
    patch = {"metadata": {"labels": {"a": None}, "finalizers": ["g"]},
             "spec": {"containers": [{"name": "a", "env": [{"name": "X", "value": "2"}]}, {"name": "b"}]}}
    result = smp(doc, patch)
    result["spec"]["containers"][0]["env"].append({"name": "Y"})
    assert doc["spec"]["containers"][0]["env"] == [{"name": "X", "value": "1"}]
    assert patch["spec"]["containers"][0]["env"] == [{"name": "X", "value": "2"}]


def test_strategic_merge_with_no_patch_metadata_still_applies() -> None:
    result = apply_strategic_merge_patch({"a": {"b": 1}}, {"a": {"c": 2}}, None)
    assert result == {"a": {"b": 1, "c": 2}}


def test_strategic_merge_of_long_lists_finds_each_element_by_key_not_by_scanning(monkeypatch) -> None:  # type: ignore[no-untyped-def]
    """A 3 MB patch holds ~100k list elements; a scan per element made one PATCH minutes of work."""
    from kcp_apiserver.registry import patch as patch_module

    identities = 0
    real_ident = patch_module._ident

    def counting_ident(value: Any, key: str | None) -> Any:
        nonlocal identities
        identities += 1
        return real_ident(value, key)

    monkeypatch.setattr(patch_module, "_ident", counting_ident)
    n = 2000
    doc = pod(*({"name": f"c{i}", "image": "old"} for i in range(0, n, 2)))
    wanted = [{"name": f"c{i}", "image": "new"} for i in range(1, n)] + [{"name": "c0", "$patch": "delete"}]
    result = smp(doc, {"spec": {"containers": wanted}})
    assert names(result["spec"]["containers"]) == [f"c{i}" for i in range(1, n)]
    assert {c["image"] for c in result["spec"]["containers"]} == {"new"}
    assert identities < 20 * n


def test_json_patch_copies_stop_at_kube_accumulated_copy_limit() -> None:
    """Each copy of /data into itself doubles the document: 20 of them are 100 MiB, 30 would be 100 GiB."""
    ops = [{"op": "copy", "from": "/data", "path": f"/data/c{i}"} for i in range(20)]
    with pytest.raises(APIError) as caught:
        apply_json_patch({"data": {"a": "x" * 100}}, ops)
    assert caught.value.code == 422
    [cause] = caught.value.details["causes"]
    assert cause["message"].startswith("Unable to complete the copy, the accumulated size increase of copy is ")
    assert cause["message"].endswith(", exceeding the limit 3145728")
    small = apply_json_patch({"data": {"a": "x"}}, ops[:3])
    assert len(small["data"]) == 4
