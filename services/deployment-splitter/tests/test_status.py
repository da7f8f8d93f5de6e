"""The root's status: sums, Karmada's observedGeneration rule, conditions that name lagging clusters."""

from __future__ import annotations

from typing import Any

from kcp_deployment_splitter.children import desired_child, matches, repaired
from kcp_deployment_splitter.names import ASSIGNMENT_LABEL, ROOT_GENERATION_ANNOTATION, ROOT_LABEL
from kcp_deployment_splitter.status import Child, aggregate, with_times

ROOT = {"metadata": {"name": "web", "namespace": "default", "uid": "u1", "generation": 3, "labels": {"app": "web"}},
        "spec": {"replicas": 15, "selector": {"matchLabels": {"app": "web"}}, "paused": False,
                 "template": {"metadata": {"labels": {"app": "web"}}, "spec": {"containers": [{"name": "c"}]}}},
        "status": {"observedGeneration": 2}}


def child(target: str, replicas: int, *, ready: int | None = None, written_from: int = 3, generation: int = 5,
          observed: int = 5, available_cond: str = "True") -> Child:
    ready = replicas if ready is None else ready
    return Child(target, {
        "metadata": {"generation": generation, "annotations": {ROOT_GENERATION_ANNOTATION: str(written_from)}},
        "spec": {"replicas": replicas},
        "status": {"observedGeneration": observed, "replicas": replicas, "updatedReplicas": replicas,
                   "readyReplicas": ready, "availableReplicas": ready, "unavailableReplicas": replicas - ready,
                   "conditions": [{"type": "Available", "status": available_cond},
                                  {"type": "Progressing", "status": "True", "reason": "NewReplicaSetAvailable"}]}})


def test_counts_are_sums_and_the_generation_is_observed_once_every_child_caught_up() -> None:
    status = aggregate(ROOT, [child("east", 6), child("west", 9)], settled=True)
    assert (status["replicas"], status["readyReplicas"], status["availableReplicas"]) == (15, 15, 15)
    assert "unavailableReplicas" not in status
    assert status["observedGeneration"] == 3
    conditions = {c["type"]: c for c in status["conditions"]}
    assert conditions["Available"]["status"] == "True"
    assert conditions["Progressing"]["reason"] == "NewReplicaSetAvailable"


def test_a_child_not_yet_written_from_the_roots_generation_holds_observed_generation_back() -> None:
    status = aggregate(ROOT, [child("east", 6), child("west", 9, written_from=2)], settled=True)
    assert status["observedGeneration"] == 2
    assert "west" in {c["type"]: c for c in status["conditions"]}["Progressing"]["message"]


def test_a_child_whose_controller_has_not_seen_its_spec_holds_it_back_too() -> None:
    assert aggregate(ROOT, [child("east", 6, observed=4), child("west", 9)], settled=True)["observedGeneration"] == 2


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


def test_a_child_is_the_roots_spec_with_its_own_replicas_labels_and_owner() -> None:
    wanted: dict[str, Any] = desired_child(ROOT, "east", 8)
    assert wanted["metadata"]["name"] == "web--east"
    assert wanted["metadata"]["labels"] == {"app": "web", ASSIGNMENT_LABEL: "east", ROOT_LABEL: "web"}
    assert wanted["metadata"]["ownerReferences"][0]["uid"] == "u1"
    assert wanted["spec"] == {**ROOT["spec"], "replicas": 8}
    assert ROOT["spec"]["replicas"] == 15  # the root is not touched


def test_a_hand_edited_child_is_repaired_keeping_its_finalizers() -> None:
    wanted = desired_child(ROOT, "east", 8)
    edited = repaired({"metadata": {**wanted["metadata"], "finalizers": ["syncer"], "resourceVersion": "9"},
                       "spec": wanted["spec"]}, wanted)
    assert matches(edited, wanted)
    edited["spec"]["replicas"] = 1
    edited["metadata"]["labels"] = {"app": "other"}
    assert not matches(edited, wanted)
    fixed = repaired(edited, wanted)
    assert matches(fixed, wanted)
    assert fixed["metadata"]["finalizers"] == ["syncer"] and fixed["metadata"]["resourceVersion"] == "9"


def test_a_child_on_a_cluster_that_is_not_ready_counts_as_unavailable_and_is_named() -> None:
    """Its last copied status (10/10) is not current: like a lost node's pods, neither ready nor available."""
    root = {"metadata": {"generation": 1}, "spec": {"replicas": 15}}

    def child(target: str, n: int) -> dict:  # type: ignore[type-arg]
        return {"metadata": {"generation": 1, "annotations": {ROOT_GENERATION_ANNOTATION: "1"}},
                "spec": {"replicas": n},
                "status": {"observedGeneration": 1, "replicas": n, "updatedReplicas": n, "readyReplicas": n,
                           "availableReplicas": n,
                           "conditions": [{"type": "Available", "status": "True"}]}}

    fresh = aggregate(root, [Child("east", child("east", 5)), Child("west", child("west", 10))], settled=True)
    assert fresh["readyReplicas"] == 15 and fresh["conditions"][0]["status"] == "True"
    lost = aggregate(root, [Child("east", child("east", 5)), Child("west", child("west", 10), stale="NotReady")],
                     settled=True)
    assert (lost["readyReplicas"], lost["availableReplicas"], lost["unavailableReplicas"]) == (5, 5, 10)
    assert lost["replicas"] == 15
    assert lost["conditions"][0]["status"] == "False"
    assert "west (cluster NotReady, status unknown)" in lost["conditions"][0]["message"]


def test_the_sums_keep_the_root_s_collision_count() -> None:
    colliding = {**ROOT, "status": {"observedGeneration": 2, "collisionCount": 2}}
    assert aggregate(colliding, [child("east", 6), child("west", 9)], settled=True)["collisionCount"] == 2
    assert "collisionCount" not in aggregate(ROOT, [child("east", 6)], settled=True)
