"""A Location's status over the SyncTargets of its logical cluster (locations.py): what it selects, which of
them are available (Ready and schedulable), what those offer, and a Ready condition that says so."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta
from typing import Any

from kcp_cluster_controller.locations import location_status

NOW = datetime(2026, 11, 29, 3, 0, tzinfo=UTC)


def target(name: str, region: str, *, ready: bool = True, unschedulable: bool = False, cpu: str = "4",
           deleting: bool = False) -> dict[str, Any]:
    meta: dict[str, Any] = {"name": name, "labels": {"region": region}}
    if deleting:
        meta["deletionTimestamp"] = "2026-11-29T02:00:00Z"
    return {"metadata": meta, "spec": {"unschedulable": unschedulable},
            "status": {"allocatable": {"cpu": cpu, "memory": "8Gi", "pods": "110"}, "capacity": {"cpu": cpu},
                       "conditions": [{"type": "Ready", "status": "True" if ready else "False"}]}}


def location(selector: dict[str, Any] | None = None, status: dict[str, Any] | None = None) -> dict[str, Any]:
    return {"metadata": {"name": "eu"}, "spec": {"instanceSelector": selector or {}}, "status": status or {}}


def test_a_location_counts_its_selected_targets_and_sums_what_the_available_ones_offer() -> None:
    targets = [target("eu-1", "eu"), target("eu-2", "eu", cpu="500m"), target("eu-3", "eu", ready=False),
               target("eu-4", "eu", unschedulable=True), target("eu-5", "eu", deleting=True), target("us-1", "us")]
    status = location_status(location({"matchLabels": {"region": "eu"}}), targets, NOW)
    assert (status["instances"], status["availableInstances"]) == (4, 2)
    assert status["allocatable"] == {"cpu": "4500m", "memory": "16Gi", "pods": "220"}
    assert status["capacity"] == {"cpu": "4500m"}
    ready = status["conditions"][0]
    assert (ready["type"], ready["status"], ready["reason"]) == ("Ready", "True", "InstancesAvailable")
    assert ready["message"] == "2 of 4 SyncTargets are Ready and schedulable"
    everything = location_status(location(), targets, NOW)
    assert (everything["instances"], everything["availableInstances"]) == (5, 3)


def test_none_available_is_not_ready_and_the_transition_time_moves_only_with_the_status() -> None:
    first = location_status(location({"matchLabels": {"region": "ap"}}), [target("eu-1", "eu")], NOW)
    assert (first["instances"], first["availableInstances"], first["allocatable"]) == (0, 0, {})
    assert first["conditions"][0]["reason"] == "NoInstancesAvailable"
    later = NOW + timedelta(minutes=5)
    again = location_status(location({"matchLabels": {"region": "ap"}}, first), [target("eu-1", "eu")], later)
    assert again == first  # nothing changed: no write
    moved = location_status(location({"matchLabels": {"region": "eu"}}, first), [target("eu-1", "eu")], later)
    assert moved["conditions"][0]["lastTransitionTime"] == "2026-11-29T03:05:00Z"


def test_a_selector_that_cannot_be_read_is_reported_and_the_counts_are_kept() -> None:
    old = {"instances": 1, "availableInstances": 1}
    status = location_status(location({"matchExpressions": [{"key": "region", "operator": "Gt"}]}, old),
                             [target("eu-1", "eu")], NOW)
    assert status["instances"] == 1
    assert status["conditions"][0]["reason"] == "InvalidSelector"
    assert "spec.instanceSelector" in status["conditions"][0]["message"]
