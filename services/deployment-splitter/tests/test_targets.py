"""Which SyncTargets hold replicas: Ready, grace period, unschedulable, evictAfter, deleted."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta
from typing import Any

from kcp_deployment_splitter.targets import placement_facts, room_for, usable_for, view

from kcpcommon.keys import CLUSTER_ANNOTATION, sync_target_key

NOW = datetime(2026, 11, 25, 12, 0, 0, tzinfo=UTC)


def stamp(when: datetime) -> str:
    return when.strftime("%Y-%m-%dT%H:%M:%SZ")


def target(name: str, ready: str | None = "True", since: datetime = NOW - timedelta(hours=1),
           **spec: Any) -> dict[str, Any]:
    obj: dict[str, Any] = {"metadata": {"name": name, "creationTimestamp": stamp(NOW - timedelta(hours=2))},
                           "spec": {"kubeconfig": "x", **spec}, "status": {}}
    if ready is not None:
        obj["status"]["conditions"] = [{"type": "Ready", "status": ready, "lastTransitionTime": stamp(since)}]
    return obj


def test_ready_targets_are_usable_sorted_by_name() -> None:
    seen = view([target("west"), target("east")], now=NOW, grace_period=30)
    assert seen.usable == ("east", "west") and not seen.lost and seen.recheck_after is None


def test_a_target_not_ready_within_the_grace_period_keeps_its_share_and_is_looked_at_again_when_it_ends() -> None:
    seen = view([target("east"), target("west", "False", NOW - timedelta(seconds=10))], now=NOW, grace_period=30)
    assert seen.usable == ("east", "west") and seen.cordoned == {"west": "NotReady for 10s"}
    assert seen.recheck_after == 20
    assert usable_for(seen, holding=["west"]) == ("east", "west")
    assert seen.not_ready == {"west": "NotReady"}


def test_a_target_not_ready_since_it_came_is_given_nothing_though_inside_the_grace_period() -> None:
    """Never Ready (Ready=False from the start, as the cluster controller reports while it connects): a
    workload that holds nothing there gets nothing there, a new one included."""
    seen = view([target("east"), target("west", "False", NOW - timedelta(seconds=5))], now=NOW, grace_period=30)
    assert usable_for(seen, holding=[]) == ("east",)
    assert usable_for(seen, holding=["east"]) == ("east",)


def test_a_target_not_ready_past_the_grace_period_is_lost_with_the_reason() -> None:
    seen = view([target("east"), target("west", "Unknown", NOW - timedelta(seconds=31))], now=NOW, grace_period=30)
    assert seen.usable == ("east",)
    assert seen.lost == {"west": "NotReady for 31s"}


def test_evicted_targets_are_lost_at_once_even_when_ready_and_evict_after_in_future_is_looked_at_then() -> None:
    seen = view([target("b", evictAfter=stamp(NOW - timedelta(seconds=1))),
                 target("c", evictAfter=stamp(NOW + timedelta(seconds=50)))], now=NOW, grace_period=30)
    assert seen.usable == ("c",)
    assert seen.lost["b"].startswith("evicted after")
    assert seen.recheck_after == 50


def test_a_cordoned_target_keeps_what_it_holds_and_gets_nothing_new() -> None:
    """`spec.unschedulable` is kcp's cordon (kubectl cordon of a Node): existing work stays, new work goes
    elsewhere; only eviction drains."""
    seen = view([target("a", unschedulable=True), target("b")], now=NOW, grace_period=30)
    assert seen.usable == ("a", "b") and not seen.lost
    assert seen.cordoned == {"a": "unschedulable"}
    assert usable_for(seen, holding=["a"]) == ("a", "b")
    assert usable_for(seen, holding=[]) == ("b",)


def test_a_cordoned_target_that_is_evicted_or_not_ready_past_the_grace_period_is_lost() -> None:
    seen = view([target("a", unschedulable=True, evictAfter=stamp(NOW)),
                 target("b", "False", NOW - timedelta(seconds=40), unschedulable=True),
                 target("c", "False", NOW - timedelta(seconds=10), unschedulable=True)], now=NOW, grace_period=30)
    assert seen.lost["a"].startswith("evicted after") and seen.lost["b"] == "NotReady for 40s"
    assert seen.usable == ("c",) and seen.cordoned == {"c": "unschedulable"}


def test_a_deleting_target_and_one_never_ready_are_lost() -> None:
    deleting = target("a")
    deleting["metadata"]["deletionTimestamp"] = stamp(NOW)
    seen = view([deleting, target("b", ready=None)], now=NOW, grace_period=30)
    assert seen.usable == ()
    assert seen.lost["a"] == "deleted" and "b" in seen.lost


def test_room_is_the_tightest_resource_after_what_others_use() -> None:
    allocatable = {"cpu": "4", "memory": "8Gi", "pods": "110"}
    assert room_for({"cpu": "500m"}, allocatable) == 8
    assert room_for({"cpu": "500m"}, allocatable, {"cpu": "3"}) == 2
    assert room_for({}, {"pods": "5"}, {"pods": 2}) == 3
    assert room_for({"cpu": "1"}, {}) is None


def test_capacity_bounds_and_the_sync_target_key_are_read_and_a_bound_change_wakes_the_roots() -> None:
    bounded = target("a", capacityBounds={"pods": "5"})
    bounded["metadata"]["annotations"] = {CLUSTER_ANNOTATION: "compute"}
    seen = view([bounded, target("b")], now=NOW, grace_period=30)
    assert seen.bounds == {"a": {"pods": "5"}} and seen.keys == {"a": sync_target_key("compute", "a")}
    raised = {**bounded, "spec": {**bounded["spec"], "capacityBounds": {"pods": "9"}}}
    assert placement_facts(bounded) != placement_facts(raised)
