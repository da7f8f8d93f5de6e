"""kube's quota evaluation: what an object uses, what a quota lets through, in kube's words."""

from __future__ import annotations

from fractions import Fraction
from typing import Any

from kcp_sim_cluster.api.quota import charge, matches_scopes, missing_constraints, usage
from kcp_sim_cluster.controlplane.disruption import selected
from kcp_sim_cluster.controlplane.nodelifecycle import never_updated
from kcp_sim_cluster.controlplane.quota import counted_by


def pod(*containers: dict[str, Any], init: tuple[dict[str, Any], ...] = (), **spec: Any) -> dict[str, Any]:
    return {"metadata": {"name": "p"}, "spec": {"containers": list(containers), "initContainers": list(init), **spec}}


def quota(hard: dict[str, str], used: dict[str, str] | None = None, **spec: Any) -> dict[str, Any]:
    status = {"hard": hard, "used": used} if used is not None else {}
    return {"metadata": {"name": "q"}, "spec": {"hard": hard, **spec}, "status": status}


def test_a_pod_uses_its_count_and_its_containers_summed_at_least_each_init_container() -> None:
    used = usage("", "pods", pod({"resources": {"requests": {"cpu": "250m"}, "limits": {"memory": "1Gi"}}},
                                 {"resources": {"requests": {"cpu": "250m"}}},
                                 init=({"resources": {"requests": {"cpu": "2"}}},)))
    assert used == {"count/pods": 1, "pods": 1, "requests.cpu": 2, "cpu": 2, "limits.memory": 2**30}
    assert usage("", "pods", {**pod(), "status": {"phase": "Succeeded"}}) == {}  # a finished pod frees its share
    assert usage("apps", "deployments", {"spec": {}}) == {"count/deployments.apps": 1}
    assert usage("", "services", {"spec": {"type": "NodePort", "ports": [{}, {}]}}) == {
        "count/services": 1, "services": 1, "services.nodeports": 2}


def test_a_charge_adds_to_used_or_says_why_not_in_kubes_words() -> None:
    assert charge(quota({"pods": "2", "requests.cpu": "1"}, {"pods": "1", "requests.cpu": "500m"}),
                  {"pods": Fraction(1), "requests.cpu": Fraction(1, 4), "count/pods": Fraction(1)}) == {
        "pods": "2", "requests.cpu": "750m"}
    assert charge(quota({"requests.cpu": "1"}, {"requests.cpu": "500m"}), {"requests.cpu": Fraction(3, 5)}) == (
        "exceeded quota: q, requested: requests.cpu=600m, used: requests.cpu=500m, limited: requests.cpu=1")
    assert charge(quota({"pods": "1"}), {"pods": Fraction(1)}) == "status unknown for quota: q, resources: pods"
    assert charge(quota({"secrets": "1"}, {"secrets": "1"}), {"pods": Fraction(1)}) == {"secrets": "1"}


def test_compute_quotas_need_every_container_to_name_them_and_scopes_pick_pods() -> None:
    bare = pod({"name": "c"})
    assert missing_constraints(bare, {"requests.cpu": "1", "limits.memory": "1Gi", "pods": "3"}) == [
        "limits.memory", "requests.cpu"]
    assert missing_constraints(pod({"resources": {"requests": {"cpu": "1"}}}), {"cpu": "2"}) == []
    best_effort = quota({"pods": "1"}, scopes=["BestEffort"])
    assert matches_scopes(best_effort, "", "pods", bare)
    assert not matches_scopes(best_effort, "", "pods", pod({"resources": {"requests": {"cpu": "1"}}}))
    assert not matches_scopes(best_effort, "apps", "deployments", {"spec": {}})
    assert matches_scopes(quota({"pods": "1"}, scopes=["Terminating"]), "", "pods", pod(activeDeadlineSeconds=5))


def test_which_objects_a_quota_resource_counts() -> None:
    assert counted_by("count/deployments.apps") == ("apps", "deployments")
    assert counted_by("count/configmaps") == ("", "configmaps")
    assert counted_by("services.loadbalancers") == ("", "services")
    assert counted_by("requests.storage") == ("", "persistentvolumeclaims")
    assert counted_by("limits.memory") == ("", "pods")


def test_a_node_that_never_posted_status_gets_kubes_unknown_conditions_once() -> None:
    node: dict[str, Any] = {"metadata": {"name": "n", "creationTimestamp": "2026-01-01T00:00:00Z"}}
    assert never_updated(node)
    conds = {c["type"]: c for c in node["status"]["conditions"]}
    assert set(conds) == {"Ready", "MemoryPressure", "DiskPressure", "PIDPressure"}
    assert conds["Ready"]["reason"] == "NodeStatusNeverUpdated"
    assert conds["Ready"]["lastHeartbeatTime"] == "2026-01-01T00:00:00Z"
    assert not never_updated(node)


def test_a_budget_without_a_selector_selects_every_pod_of_its_namespace() -> None:
    pods: list[dict[str, Any]] = [{"metadata": {"name": "a", "labels": {"app": "web"}}}, {"metadata": {"name": "b"}}]
    assert [p["metadata"]["name"] for p in selected({"spec": {}}, pods)] == ["a", "b"]
    assert [p["metadata"]["name"] for p in selected({"spec": {"selector": {"matchLabels": {"app": "web"}}}},
                                                    pods)] == ["a"]
