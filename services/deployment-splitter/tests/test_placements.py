"""Placements (issue 25): which Placement governs a namespace, where it goes, and how it leaves a SyncTarget."""

from __future__ import annotations

from typing import Any

from kcp_deployment_splitter.placements import (
    DRAINING,
    choose_targets,
    governing,
    location_targets,
    namespace_labels,
    selected_locations,
    selects_namespace,
)
from kcp_deployment_splitter.reconcile_placements import requester_of
from kcp_deployment_splitter.status import with_times

from kcpcommon.keys import PLACED, PLACED_LABEL_PREFIX, placed_label, sync_target_key

C = "root:compute"


def placement(name: str, created: str, selector: Any = None, **spec: Any) -> dict[str, Any]:
    body = {**spec} if selector is None else {**spec, "namespaceSelector": selector}
    return {"metadata": {"name": name, "creationTimestamp": created,
                         "annotations": {"kcp.io/cluster": "root:team"}}, "spec": body}


def namespace(name: str, **labels: str) -> dict[str, Any]:
    return {"metadata": {"name": name, "labels": labels}}


def test_kcp_s_namespace_selector_rule_absent_selects_none_empty_selects_all() -> None:
    assert not selects_namespace(placement("p", "t1"), namespace("web"))
    assert selects_namespace(placement("p", "t1", {}), namespace("web"))
    assert selects_namespace(placement("p", "t1", {"matchLabels": {"team": "a"}}), namespace("web", team="a"))
    assert not selects_namespace(placement("p", "t1", {"matchLabels": {"team": "a"}}), namespace("web", team="b"))


def test_the_oldest_placement_governs_and_the_others_conflict() -> None:
    young, old = placement("young", "2026-01-02T00:00:00Z", {}), placement("old", "2026-01-01T00:00:00Z", {})
    winner, others = governing([young, old], namespace("web"))
    assert winner is old and others == [young]


def test_locations_by_any_selector_and_their_synctargets() -> None:
    eu = {"metadata": {"name": "eu", "labels": {"region": "eu"}}, "spec": {"instanceSelector": {
        "matchLabels": {"region": "eu"}}}}
    us = {"metadata": {"name": "us", "labels": {"region": "us"}}, "spec": {"instanceSelector": {
        "matchLabels": {"region": "us"}}}}
    p = placement("p", "t", {}, locationSelectors=[{"matchLabels": {"region": "us"}}])
    assert selected_locations(p, [eu, us]) == [us]
    assert selected_locations(placement("all", "t", {}), [us, eu]) == [eu, us]  # none: every Location
    targets = [{"metadata": {"name": n, "labels": {"region": r}}} for n, r in (("e1", "eu"), ("u1", "us"),
                                                                                ("u2", "us"))]
    assert location_targets([us], targets) == ["u1", "u2"]


def test_a_namespace_keeps_its_targets_while_usable_and_namespaces_spread_over_the_rest() -> None:
    assert choose_targets("root:team", "web", ["b"], ("a", "b", "c"), 1) == ["b"]
    assert choose_targets("root:team", "web", ["gone"], ("a", "b"), 1)[0] in ("a", "b")
    two = choose_targets("root:team", "web", [], ("a", "b", "c"), 2)
    assert len(set(two)) == 2
    assert choose_targets("root:team", "web", [], ("a",), 3) == ["a"]
    firsts = {choose_targets("root:team", f"ns-{i}", [], ("a", "b", "c"), 1)[0] for i in range(30)}
    assert firsts == {"a", "b", "c"}  # spread, by hash


def test_a_namespace_drains_a_target_it_leaves_until_nothing_of_it_is_there() -> None:
    placed = {sync_target_key(C, "eu-1"): PLACED}
    names = {sync_target_key(C, "eu-1"): "eu-1"}
    moving = namespace_labels(C, ["us-1"], placed, holding={"eu-1"}, names=names)
    assert moving == {PLACED_LABEL_PREFIX + sync_target_key(C, "eu-1"): DRAINING, placed_label(C, "us-1"): PLACED}
    placed = {sync_target_key(C, "eu-1"): DRAINING, sync_target_key(C, "us-1"): PLACED}
    names[sync_target_key(C, "us-1")] = "us-1"
    assert namespace_labels(C, ["us-1"], placed, holding={"eu-1", "us-1"}, names=names) == {}  # still held
    assert namespace_labels(C, ["us-1"], placed, holding={"us-1"}, names=names) == {
        PLACED_LABEL_PREFIX + sync_target_key(C, "eu-1"): None}  # empty there: the label goes


def test_the_requester_is_read_from_kcp_s_annotation_only() -> None:
    recorded = {"metadata": {"annotations": {"scheduling.kcp.io/requester": '{"username": "bob", "groups": ["b"]}'}}}
    assert requester_of(recorded) == ("bob", ["b"])
    assert requester_of({"metadata": {"annotations": {"scheduling.kcp.io/requester": "not json"}}}) is None
    assert requester_of({"metadata": {}}) is None


def test_a_placement_s_condition_keeps_its_transition_time_while_its_status_holds_and_has_no_update_time() -> None:
    first = with_times([{"type": "Ready", "status": "True", "reason": "r", "message": ""}], None, "T0",
                       update_times=False)
    again = with_times([{"type": "Ready", "status": "True", "reason": "r2", "message": "m"}], first, "T1",
                       update_times=False)
    assert again[0]["lastTransitionTime"] == first[0]["lastTransitionTime"] == "T0"
    assert "lastUpdateTime" not in again[0]  # the Placement's schema has none: it would be pruned, and rewritten
    flipped = with_times([{"type": "Ready", "status": "False", "reason": "r", "message": ""}], again, "T2",
                         update_times=False)
    assert flipped[0]["lastTransitionTime"] == "T2"
