"""freeze_like: a new state frozen by sharing what did not change with the state it replaces."""

from __future__ import annotations

from typing import Any

import orjson

from kcpcommon.frozen import FrozenDict, FrozenList, freeze, freeze_like
from kcpcommon.keys import Located, ObjectKey, located


def pod(phase: str, **spec: Any) -> dict[str, Any]:
    return {"metadata": {"name": "web", "resourceVersion": phase, "labels": {"app": "web"}},
            "spec": {"containers": [{"name": "web", "image": "nginx"}], **spec}, "status": {"phase": phase}}


def test_unchanged_parts_are_the_previous_state_s_and_changed_ones_are_frozen_anew() -> None:
    previous = freeze(pod("Pending"))
    new = freeze_like(pod("Running"), previous)
    assert new == pod("Running") and type(new) is FrozenDict
    assert new["spec"] is previous["spec"]
    assert new["metadata"] is not previous["metadata"] and new["metadata"]["labels"] is previous["metadata"]["labels"]
    assert new["status"] is not previous["status"] and type(new["status"]) is FrozenDict


def test_a_part_equal_in_python_but_not_in_json_is_not_shared() -> None:
    for before, after in ((1, 1.0), (1, True), (0, False)):
        previous = freeze(pod("Running", replicas=[before], extra={"v": before}))
        new = freeze_like(pod("Running", replicas=[after], extra={"v": after}), previous)
        assert orjson.dumps(new) == orjson.dumps(pod("Running", replicas=[after], extra={"v": after}))
        assert type(new["spec"]["replicas"]) is FrozenList


def test_a_changed_kind_of_value_is_frozen_from_the_new_state() -> None:
    previous = freeze({"spec": {"a": [1]}, "status": "x"})
    new = freeze_like({"spec": {"a": {"b": 1}}, "status": {"c": [2]}}, previous)
    assert new == {"spec": {"a": {"b": 1}}, "status": {"c": [2]}}
    assert type(new["spec"]["a"]) is FrozenDict and type(new["status"]["c"]) is FrozenList


def test_located_shares_with_the_state_it_replaces_and_knows_its_key() -> None:
    key = ObjectKey("c1", "default", "web")
    previous = located(pod("Pending"), key)
    new = located(pod("Running"), key, previous=previous)
    assert type(new) is Located and new.key == key and new == pod("Running")
    assert new["spec"] is previous["spec"]
