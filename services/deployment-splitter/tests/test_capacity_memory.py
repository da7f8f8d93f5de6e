"""What a target was seen able to run survives a leader change: it is kept on the child and read back."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta
from typing import Any

from kcp_deployment_splitter.capacity import CapacityTracker
from kcp_deployment_splitter.children import desired_child, matches
from kcp_deployment_splitter.names import CAPACITY_ANNOTATION

WALL = datetime(2026, 11, 25, 12, 0, 0, tzinfo=UTC)
ALLOCATABLE = {"cpu": "1", "pods": "110"}


def short_child(replicas: int, available: int) -> dict[str, Any]:
    return {"metadata": {"generation": 2, "annotations": {}}, "spec": {"replicas": replicas},
            "status": {"observedGeneration": 2, "updatedReplicas": replicas, "availableReplicas": available}}


def tracker(wall: datetime, clock: float = 1000.0) -> CapacityTracker:
    return CapacityTracker(grace_period=0, retry_period=600, clock=lambda: clock, wall=lambda: wall)


def leader_learns(child: dict[str, Any]) -> str:
    first = tracker(WALL)
    first.observe("root", "small", child, ALLOCATABLE)
    assert first.learned("root", "small", ALLOCATABLE) == 4
    note = first.note("root", "small")
    assert note is not None
    return note


def test_a_new_leader_reads_the_learned_capacity_from_the_child() -> None:
    note = leader_learns(short_child(7, 4))
    child = short_child(4, 4)  # rebalanced: the shortfall is no longer observable
    child["metadata"]["annotations"][CAPACITY_ANNOTATION] = note
    successor = tracker(WALL + timedelta(seconds=30), clock=5.0)
    assert successor.learned("root", "small", ALLOCATABLE) is None  # nothing of its own
    assert successor.learned("root", "small", ALLOCATABLE, child) == 4
    assert successor.note("root", "small") == note  # and keeps writing the same thing


def test_a_note_past_the_retry_period_or_for_other_allocatable_is_not_believed() -> None:
    child = short_child(4, 4)
    child["metadata"]["annotations"][CAPACITY_ANNOTATION] = leader_learns(short_child(7, 4))
    assert tracker(WALL + timedelta(seconds=601)).learned("root", "small", ALLOCATABLE, child) is None
    assert tracker(WALL).learned("root", "small", {"cpu": "2", "pods": "110"}, child) is None
    child["metadata"]["annotations"][CAPACITY_ANNOTATION] = "not json"
    assert tracker(WALL).learned("root", "small", ALLOCATABLE, child) is None


def test_the_child_is_written_with_the_note_and_rewritten_when_it_is_missing() -> None:
    root = {"metadata": {"name": "web", "uid": "u", "generation": 1, "namespace": "default"},
            "spec": {"replicas": 7}}
    plain = desired_child(root, "small", 4)
    noted = desired_child(root, "small", 4, capacity_note='{"replicas":4}')
    assert plain["metadata"]["annotations"].get(CAPACITY_ANNOTATION) is None
    assert noted["metadata"]["annotations"][CAPACITY_ANNOTATION] == '{"replicas":4}'
    assert not matches(plain, noted) and matches(noted, plain)
