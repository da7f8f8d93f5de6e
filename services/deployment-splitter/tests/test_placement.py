"""Plans (break-glass weights, capacity) and the grow-before-shrink order of writes."""

from __future__ import annotations

from datetime import UTC, datetime

import pytest
from kcp_deployment_splitter.capacity import CapacityTracker, capacity_of, pod_requests, requested_by
from kcp_deployment_splitter.placement import InvalidPlacement, parse_placement, plan, step

WALL = datetime(2026, 11, 25, 12, 0, 0, tzinfo=UTC)


def test_the_placement_annotation_restricts_and_weighs() -> None:
    assert parse_placement("east,west") == {"east": 1, "west": 1}
    assert parse_placement(" east=2 , west=3 ") == {"east": 2, "west": 3}
    assert parse_placement("") is None and parse_placement(None) is None
    for bad in ("east=x", "=2", "east=-1"):
        with pytest.raises(InvalidPlacement):
            parse_placement(bad)


def test_a_plan_over_usable_targets_follows_the_annotation_and_skips_empty_shares() -> None:
    assert plan(15, ("east", "west")).shares == {"east": 8, "west": 7}
    assert plan(15, ("east", "north", "west"), placement={"east": 2, "west": 3}).shares == {"east": 6, "west": 9}
    assert plan(1, ("east", "west")).shares == {"east": 1}


def test_growing_children_are_written_first_and_shrinking_ones_wait_until_they_are_available() -> None:
    desired, current = {"east": 15}, {"east": 8, "west": 7}
    assert step(desired, current, {"east": 8, "west": 7}) == {"east": 15, "west": 7}
    assert step(desired, current, {"east": 15, "west": 7}) == {"east": 15, "west": 0}


def test_a_shrinking_child_keeps_only_its_available_replicas_while_the_others_grow() -> None:
    assert step({"east": 15}, {"east": 8, "west": 7}, {"east": 8, "west": 3}) == {"east": 15, "west": 3}
    assert step({"east": 8, "west": 7}, {"east": 15}, {}) == {"east": 8, "west": 7}


def test_a_deleted_target_gives_its_child_up_at_once() -> None:
    assert step({"east": 15}, {"east": 8, "west": 7}, {"east": 8}, gone=frozenset({"west"})) == {"east": 15, "west": 0}


def test_a_growing_child_at_its_known_capacity_lets_the_others_shrink() -> None:
    assert step({"a": 10, "b": 5}, {"a": 5, "b": 10}, {"a": 4}, capacity={"a": 4}) == {"a": 10, "b": 5}


def test_scaling_down_shrinks_at_once() -> None:
    assert step({"east": 3, "west": 2}, {"east": 8, "west": 7}, {}) == {"east": 3, "west": 2}


def test_a_disruption_budget_keeps_old_replicas_while_a_capped_new_share_is_short_of_it() -> None:
    # west can run 4 of its 10 (its capacity): without a floor east goes and only 4 stay available
    desired, current, available = {"west": 10}, {"east": 10, "west": 10}, {"east": 10, "west": 4}
    assert step(desired, current, available, capacity={"west": 4}) == {"east": 0, "west": 10}
    # minAvailable 8: east keeps the 4 that reach it, not all 10
    assert step(desired, current, available, capacity={"west": 4}, floor=8) == {"east": 4, "west": 10}
    # only available replicas count: east has 3 available, all it can give
    assert step(desired, current, {"east": 3, "west": 4}, capacity={"west": 4}, floor=8) == {"east": 3, "west": 10}
    # once the new share is available the floor holds nothing back
    assert step(desired, current, {"east": 10, "west": 10}, capacity={"west": 4}, floor=10) == {"east": 0, "west": 10}


def test_the_floor_takes_the_fewest_replicas_from_shrinking_children_in_name_order() -> None:
    current, available = {"a": 3, "b": 3, "c": 6}, {"a": 3, "b": 3, "c": 2}
    assert step({"c": 6}, current, available, capacity={"c": 2}) == {"a": 0, "b": 0, "c": 6}
    assert step({"c": 6}, current, available, capacity={"c": 2}, floor=4) == {"a": 2, "b": 0, "c": 6}
    assert step({"c": 6}, current, available, capacity={"c": 2}, floor=6) == {"a": 3, "b": 1, "c": 6}


def test_the_floor_counts_a_just_shrunk_child_by_its_last_report_not_as_unproven() -> None:
    # east was kept at 1; its status still reports the generation before (4 available): not proven, but running
    desired, current = {"west": 4}, {"east": 1, "west": 4}
    proven, reported = {"east": 0, "west": 2}, {"east": 1, "west": 2}
    assert step(desired, current, proven, capacity={"west": 2}, floor=3) == {"east": 0, "west": 4}
    assert step(desired, current, proven, capacity={"west": 2}, floor=3, reported=reported) == {"east": 1, "west": 4}


def test_a_deleted_target_is_not_held_by_the_floor() -> None:
    assert step({"west": 10}, {"east": 10, "west": 10}, {"east": 10, "west": 4}, capacity={"west": 4},
                gone=frozenset({"east"}), floor=8) == {"east": 0, "west": 10}


def test_requests_and_use_by_other_deployments() -> None:
    template = {"spec": {"containers": [{"resources": {"requests": {"cpu": "250m", "memory": "64Mi"}}},
                                        {"resources": {"limits": {"cpu": "250m"}}}]}}
    assert pod_requests(template) == {"cpu": 0.5, "memory": 64 * 2**20}
    used = requested_by([{"spec": {"replicas": 3, "template": template}}])
    assert used["cpu"] == 1.5 and used["pods"] == 3
    assert capacity_of(requests=pod_requests(template), allocatable={"cpu": "2", "pods": "110"}, used=used,
                       learned=None) == 1
    assert capacity_of(requests={}, allocatable={}, used={}, learned=None) is None
    assert capacity_of(requests={}, allocatable={"pods": "10"}, used={}, learned=4) == 4


def short_child(replicas: int, available: int, generation: int = 2) -> dict:
    return {"metadata": {"generation": generation}, "spec": {"replicas": replicas},
            "status": {"observedGeneration": generation, "updatedReplicas": replicas, "availableReplicas": available}}


def test_a_child_short_of_replicas_past_the_grace_period_teaches_its_capacity_until_allocatable_changes() -> None:
    now = [100.0]
    tracker = CapacityTracker(grace_period=30, retry_period=600, clock=lambda: now[0], wall=lambda: WALL)
    alloc = {"pods": "110"}
    assert tracker.observe("root", "small", short_child(7, 4), alloc) == 30
    now[0] += 10
    assert tracker.observe("root", "small", short_child(7, 4), alloc) == 20
    assert tracker.learned("root", "small", alloc) is None
    now[0] += 25
    assert tracker.observe("root", "small", short_child(7, 4), alloc) is None
    assert tracker.learned("root", "small", alloc) == 4
    assert tracker.learned("root", "small", {"pods": "220"}) is None  # a node joined: try again


def test_a_child_that_becomes_available_or_changes_stops_the_clock() -> None:
    now = [0.0]
    tracker = CapacityTracker(grace_period=30, retry_period=600, clock=lambda: now[0], wall=lambda: WALL)
    tracker.observe("r", "t", short_child(7, 4), {})
    now[0] += 20
    assert tracker.observe("r", "t", short_child(7, 7), {}) is None
    now[0] += 20
    assert tracker.observe("r", "t", short_child(7, 4), {}) == 30  # timed from scratch
    now[0] += 29
    assert tracker.observe("r", "t", short_child(9, 4, generation=3), {}) == 30  # new spec: from scratch too


def test_learned_capacity_expires_after_the_retry_period() -> None:
    now = [0.0]
    tracker = CapacityTracker(grace_period=0, retry_period=60, clock=lambda: now[0], wall=lambda: WALL)
    tracker.observe("r", "t", short_child(7, 4), {})
    assert tracker.learned("r", "t", {}) == 4
    now[0] += 61
    assert tracker.learned("r", "t", {}) is None
