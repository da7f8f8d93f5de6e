"""What a target was seen able to run survives a leader change: it is kept on the root and read back."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta
from typing import Any

from kcp_deployment_splitter.capacity import CapacityTracker
from kcp_deployment_splitter.names import CAPACITY_ANNOTATION
from kcp_deployment_splitter.shares import capacity_annotation, share_view, shares_patch

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


def test_the_note_is_written_on_the_root_read_back_through_the_share_and_removed_with_it() -> None:
    root: dict[str, Any] = {"metadata": {"name": "web", "uid": "u", "generation": 1, "namespace": "default"},
                            "spec": {"replicas": 7}}
    note = leader_learns(short_child(7, 4))
    patch = shares_patch(root, {"small": 4, "big": 3}, {"small": note, "big": None})
    assert patch is not None
    annotations = patch["metadata"]["annotations"]
    assert annotations[capacity_annotation("small")] == note and capacity_annotation("big") not in annotations
    root["metadata"]["labels"] = patch["metadata"]["labels"]
    root["metadata"]["annotations"] = {k: v for k, v in annotations.items() if v is not None}
    assert share_view(root, "small", 4)["metadata"]["annotations"][CAPACITY_ANNOTATION] == note
    successor = tracker(WALL + timedelta(seconds=30), clock=5.0)
    assert successor.learned("root", "small", ALLOCATABLE, share_view(root, "small", 4)) == 4
    assert shares_patch(root, {"small": 4, "big": 3}, {"small": note}) is None  # nothing to write
    gone = shares_patch(root, {"big": 3}, {})
    assert gone is not None and gone["metadata"]["annotations"][capacity_annotation("small")] is None
