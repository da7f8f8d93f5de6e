"""A Deployment's status and conditions from its ReplicaSets (kube's calculateStatus and syncRolloutStatus)."""

from __future__ import annotations

import datetime as dt

from kcp_sim_cluster.controlplane import deployment_status as ds


def _deployment(replicas: int = 3, generation: int = 2, status: dict | None = None, deadline: int = 600) -> dict:
    return {"metadata": {"name": "web", "generation": generation},
            "spec": {"replicas": replicas, "progressDeadlineSeconds": deadline}, "status": status or {}}


def _rs(name: str, replicas: int, available: int, ready: int | None = None) -> dict:
    return {"metadata": {"name": name}, "spec": {"replicas": replicas},
            "status": {"replicas": replicas, "availableReplicas": available,
                       "readyReplicas": available if ready is None else ready}}


def _condition(status: dict, type_: str) -> dict:
    return next(c for c in status["conditions"] if c["type"] == type_)


def test_counts_come_from_the_replica_sets() -> None:
    new, old = _rs("new", 2, 1), _rs("old", 2, 2)
    status = ds.calculate(_deployment(), new, [new, old], max_unavailable=1)
    assert (status["replicas"], status["updatedReplicas"], status["readyReplicas"], status["availableReplicas"],
            status["unavailableReplicas"], status["observedGeneration"]) == (4, 2, 3, 3, 1, 2)
    assert _condition(status, "Available")["reason"] == "MinimumReplicasAvailable"
    short = ds.calculate(_deployment(), new, [new], max_unavailable=1)
    assert (_condition(short, "Available")["status"], _condition(short, "Available")["reason"]) == (
        "False", "MinimumReplicasUnavailable")


def test_a_complete_rollout_says_the_new_replica_set_is_available() -> None:
    new = _rs("web-abc", 3, 3)
    d = _deployment()
    status = ds.calculate(d, new, [new], max_unavailable=0)
    assert ds.rollout_conditions(d, new, status) is None
    progressing = _condition(status, "Progressing")
    assert (progressing["status"], progressing["reason"], progressing["message"]) == (
        "True", "NewReplicaSetAvailable", 'ReplicaSet "web-abc" has successfully progressed.')
    assert [c["type"] for c in status["conditions"]] == ["Available", "Progressing"]  # the changed one last


def test_progress_renews_the_condition_and_a_stall_times_out() -> None:
    new = _rs("web-abc", 3, 1)
    d = _deployment(status={"updatedReplicas": 0})
    status = ds.calculate(d, new, [new], max_unavailable=0)
    assert ds.rollout_conditions(d, new, status) == 601
    assert _condition(status, "Progressing")["reason"] == "ReplicaSetUpdated"
    long_ago = (dt.datetime.now(dt.UTC) - dt.timedelta(seconds=700)).strftime("%Y-%m-%dT%H:%M:%SZ")
    _condition(status, "Progressing")["lastUpdateTime"] = long_ago
    stalled = _deployment(status=status)
    again = ds.calculate(stalled, new, [new], max_unavailable=0)
    assert ds.rollout_conditions(stalled, new, again) is None
    timed_out = _condition(again, "Progressing")
    assert (timed_out["status"], timed_out["reason"], timed_out["message"]) == (
        "False", "ProgressDeadlineExceeded", 'ReplicaSet "web-abc" has timed out progressing.')


def test_pause_and_resume_show_as_unknown_progress() -> None:
    d = _deployment()
    d["spec"]["paused"] = True
    status = {"conditions": []}
    ds.paused_condition(d, status)
    assert (_condition(status, "Progressing")["status"], _condition(status, "Progressing")["reason"]) == (
        "Unknown", "DeploymentPaused")
    d["spec"]["paused"] = False
    ds.paused_condition(d, status)
    assert _condition(status, "Progressing")["reason"] == "DeploymentResumed"


def test_an_unchanged_condition_keeps_its_times() -> None:
    status = {"conditions": [{"type": "Available", "status": "True", "reason": "MinimumReplicasAvailable",
                              "message": "Deployment has minimum availability.", "lastUpdateTime": "t0",
                              "lastTransitionTime": "t0"}]}
    ds.set_deployment_condition(status, "Available", "True", "MinimumReplicasAvailable", "other words")
    assert status["conditions"][0]["lastUpdateTime"] == "t0"
    ds.set_deployment_condition(status, "Available", "True", "Other", "x")
    assert status["conditions"][0]["lastTransitionTime"] == "t0"  # same status: transition time kept
    assert status["conditions"][0]["lastUpdateTime"] != "t0"
