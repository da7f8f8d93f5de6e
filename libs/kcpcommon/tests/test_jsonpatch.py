"""The shared RFC 6902 implementation: pure, and its failures say which operation's path failed."""

from __future__ import annotations

import pytest

from kcpcommon.jsonpatch import JSONPatchError, apply_json_patch


def test_patches_any_json_value_without_touching_the_input() -> None:
    spec = {"replicas": 1, "template": {"spec": {"containers": [{"name": "c"}]}}}
    result = apply_json_patch(spec, [{"op": "replace", "path": "/replicas", "value": 8},
                                     {"op": "add", "path": "/template/spec/containers/-", "value": {"name": "d"}}])
    assert result == {"replicas": 8, "template": {"spec": {"containers": [{"name": "c"}, {"name": "d"}]}}}
    assert spec["replicas"] == 1 and len(spec["template"]["spec"]["containers"]) == 1


def test_a_failing_operation_names_its_path() -> None:
    with pytest.raises(JSONPatchError) as err:
        apply_json_patch({"replicas": 1}, [{"op": "replace", "path": "/paused", "value": True}])
    assert err.value.path == "/paused" and "does not exist" in str(err.value)


@pytest.mark.parametrize("operations", [{"op": "add"}, "[]", None, [1]])
def test_not_a_list_of_operation_objects_is_refused(operations: object) -> None:
    with pytest.raises(JSONPatchError):
        apply_json_patch({}, operations)


def test_test_is_json_equality() -> None:
    with pytest.raises(JSONPatchError):
        apply_json_patch({"flag": True}, [{"op": "test", "path": "/flag", "value": 1}])
    assert apply_json_patch({"n": 1}, [{"op": "test", "path": "/n", "value": 1.0}]) == {"n": 1}
