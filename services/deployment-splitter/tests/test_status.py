"""The root's status: sums, Karmada's observedGeneration rule, conditions that name lagging clusters."""

from __future__ import annotations

import json
from typing import Any

from kcp_deployment_splitter.shares import diff_for, share_view, spec_diff_annotation, state_label, status_annotation
from kcp_deployment_splitter.status import Child, aggregate, with_times

ROOT = {"metadata": {"name": "web", "namespace": "default", "uid": "u1", "generation": 3, "labels": {"app": "web"}},
        "spec": {"replicas": 15, "selector": {"matchLabels": {"app": "web"}}, "paused": False,
                 "template": {"metadata": {"labels": {"app": "web"}}, "spec": {"containers": [{"name": "c"}]}}},
        "status": {"observedGeneration": 2}}


def child(target: str, replicas: int, *, ready: int | None = None, observed: int = 3,
          available_cond: str = "True", root: dict[str, Any] = ROOT) -> Child:
    """The root's share on `target` as its syncer reported it (observedGeneration in the root's terms)."""
    ready = replicas if ready is None else ready
    status = {"observedGeneration": observed, "replicas": replicas, "updatedReplicas": replicas,
              "readyReplicas": ready, "availableReplicas": ready, "unavailableReplicas": replicas - ready,
              "conditions": [{"type": "Available", "status": available_cond},
                             {"type": "Progressing", "status": "True", "reason": "NewReplicaSetAvailable"}]}
    shared = {**root, "metadata": {**root["metadata"], "labels": {state_label(target): "Sync"},
                                   "annotations": {spec_diff_annotation(target): diff_for(replicas),
                                                   status_annotation(target): json.dumps(status)}}}
    return Child(target, share_view(shared, target, replicas))


def test_counts_are_sums_and_the_generation_is_observed_once_every_child_caught_up() -> None:
    status = aggregate(ROOT, [child("east", 6), child("west", 9)], settled=True)
    assert (status["replicas"], status["readyReplicas"], status["availableReplicas"]) == (15, 15, 15)
    assert "unavailableReplicas" not in status
    assert status["observedGeneration"] == 3
    conditions = {c["type"]: c for c in status["conditions"]}
    assert conditions["Available"]["status"] == "True"
    assert conditions["Progressing"]["reason"] == "NewReplicaSetAvailable"


def test_a_share_whose_copy_has_not_seen_the_roots_generation_holds_observed_generation_back() -> None:
    status = aggregate(ROOT, [child("east", 6), child("west", 9, observed=2)], settled=True)
    assert status["observedGeneration"] == 2
    assert "west" in {c["type"]: c for c in status["conditions"]}["Progressing"]["message"]


def test_a_share_not_reported_yet_holds_it_back_and_counts_nothing() -> None:
    silent = Child("west", share_view({**ROOT, "metadata": {**ROOT["metadata"], "annotations": {}}}, "west", 9))
    status = aggregate(ROOT, [child("east", 6), silent], settled=True)
    assert status["observedGeneration"] == 2 and status["replicas"] == 6


def test_an_unsettled_placement_holds_it_back() -> None:
    assert aggregate(ROOT, [child("east", 6), child("west", 9)], settled=False)["observedGeneration"] == 2


def test_available_false_names_the_lagging_cluster() -> None:
    status = aggregate(ROOT, [child("east", 6), child("west", 9, ready=2, available_cond="False")], settled=True)
    available = {c["type"]: c for c in status["conditions"]}["Available"]
    assert available["status"] == "False" and available["reason"] == "MinimumReplicasUnavailable"
    assert "west (2 of 9 available)" in available["message"]
    assert status["unavailableReplicas"] == 7 and status["readyReplicas"] == 8


def test_a_cluster_past_its_progress_deadline_makes_the_root_fail_naming_it() -> None:
    stuck = child("west", 9, ready=0)
    stuck.obj["status"]["conditions"][1] = {"type": "Progressing", "status": "False",
                                            "reason": "ProgressDeadlineExceeded", "message": "ReplicaSet timed out"}
    cond = {c["type"]: c for c in aggregate(ROOT, [child("east", 6), stuck], settled=True)["conditions"]}
    assert cond["Progressing"]["status"] == "False" and cond["Progressing"]["reason"] == "ProgressDeadlineExceeded"
    assert cond["Progressing"]["message"].startswith("cluster west:")


def test_condition_times_move_as_kubes_do() -> None:
    old = [{"type": "Available", "status": "True", "reason": "R", "message": "m", "lastUpdateTime": "T0",
            "lastTransitionTime": "T0"}]
    same = with_times([{"type": "Available", "status": "True", "reason": "R", "message": "m"}], old, "T1")[0]
    assert same["lastUpdateTime"] == "T0" and same["lastTransitionTime"] == "T0"
    reworded = with_times([{"type": "Available", "status": "True", "reason": "R", "message": "n"}], old, "T1")[0]
    assert reworded["lastUpdateTime"] == "T1" and reworded["lastTransitionTime"] == "T0"
    flipped = with_times([{"type": "Available", "status": "False", "reason": "R", "message": "m"}], old, "T1")[0]
    assert flipped["lastTransitionTime"] == "T1"


def test_a_child_on_a_cluster_that_is_not_ready_counts_as_unavailable_and_is_named() -> None:
    """Its last copied status (10/10) is not current: like a lost node's pods, neither ready nor available."""
    fresh = aggregate(ROOT, [child("east", 5), child("west", 10)], settled=True)
    assert fresh["readyReplicas"] == 15 and fresh["conditions"][0]["status"] == "True"
    west = child("west", 10)
    lost = aggregate(ROOT, [child("east", 5), Child("west", west.obj, stale="NotReady")], settled=True)
    assert (lost["readyReplicas"], lost["availableReplicas"], lost["unavailableReplicas"]) == (5, 5, 10)
    assert lost["replicas"] == 15
    assert lost["conditions"][0]["status"] == "False"
    assert "west (cluster NotReady, status unknown)" in lost["conditions"][0]["message"]


def test_the_sums_keep_the_root_s_collision_count() -> None:
    colliding = {**ROOT, "status": {"observedGeneration": 2, "collisionCount": 2}}
    assert aggregate(colliding, [child("east", 6), child("west", 9)], settled=True)["collisionCount"] == 2
    assert "collisionCount" not in aggregate(ROOT, [child("east", 6)], settled=True)
