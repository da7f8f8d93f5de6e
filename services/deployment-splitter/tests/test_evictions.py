"""A cordoned or evicted SyncTarget's `status.eviction`: what is left on it, across workspaces, and its phase."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta
from typing import Any

from kcp_deployment_splitter.placements import PLACED_INDEX, placed_index
from kcp_deployment_splitter.reconcile_evictions import CORDONED, EVICTED, EVICTING, Left, eviction_status, left_on
from kcp_deployment_splitter.shares import shares_patch

from kcpcommon.keys import ASSIGNMENT_LABEL, CLUSTER_ANNOTATION, key_for, placed_label
from kcpcommon.store import Indexer

NOW = datetime(2026, 11, 29, 12, 0, 0, tzinfo=UTC)
COMPUTE = "compute"


def stamp(when: datetime) -> str:
    return when.strftime("%Y-%m-%dT%H:%M:%SZ")


def obj(cluster: str, name: str, namespace: str | None = None, labels: dict[str, str] | None = None,
        **rest: Any) -> dict[str, Any]:
    meta: dict[str, Any] = {"name": name, "annotations": {CLUSTER_ANNOTATION: cluster}, "labels": labels or {}}
    if namespace:
        meta["namespace"] = namespace
    return {"metadata": meta, **rest}


def split(cluster: str, namespace: str, root: str, **shares: int) -> dict[str, Any]:
    """A root Deployment with `shares` (target=replicas) written on it, as the splitter writes them."""
    patch = shares_patch({"metadata": {}}, shares, {})
    assert patch is not None
    found = obj(cluster, root, namespace, patch["metadata"]["labels"], spec={"replicas": sum(shares.values())})
    found["metadata"]["annotations"].update(patch["metadata"]["annotations"])
    return found


def target(name: str = "eu-1", served: int | None = None, **spec: Any) -> dict[str, Any]:
    status: dict[str, Any] = {"conditions": [{"type": "Ready", "status": "True",
                                              "lastTransitionTime": stamp(NOW - timedelta(hours=1))}]}
    if served is not None:
        status["servedWorkspaces"] = served
    return obj(COMPUTE, name, spec={"kubeconfig": "x", **spec}, status=status)


def caches(*objects: dict[str, Any]) -> tuple[Indexer, Indexer]:
    namespaces, deployments = Indexer(key_for, {PLACED_INDEX: placed_index}), Indexer(key_for)
    for o in objects:
        (deployments if o["metadata"].get("namespace") else namespaces).upsert(o)
    return namespaces, deployments


def test_left_counts_placed_and_draining_namespaces_of_every_workspace_and_the_shares_in_them() -> None:
    here, elsewhere = placed_label(COMPUTE, "eu-1"), placed_label(COMPUTE, "us-1")
    namespaces, deployments = caches(
        obj("team-a", "default", labels={here: "Placed"}),
        obj("team-b", "default", labels={here: "Draining", elsewhere: "Placed"}),
        obj("team-c", "default", labels={elsewhere: "Placed"}),
        obj(COMPUTE, "local", labels={ASSIGNMENT_LABEL: "eu-1"}),  # the namespace rule in the SyncTarget's own workspace
        split("team-a", "default", "web", **{"eu-1": 2}), split("team-a", "default", "api", **{"eu-1": 3}),
        split("team-b", "default", "web", **{"eu-1": 4, "us-1": 4}),
        split("team-c", "default", "web", **{"us-1": 4}), split(COMPUTE, "local", "db", **{"eu-1": 1}),
        obj("team-a", "default", "new", {}, spec={"replicas": 5}),  # not placed yet: no share
        obj("team-a", "default", "pinned", {ASSIGNMENT_LABEL: "eu-1"}, spec={"replicas": 5}),  # a person's, not split
    )
    left = left_on(COMPUTE, "eu-1", namespaces=namespaces, deployments=deployments)
    assert left.workspaces == {"team-a", "team-b", COMPUTE}
    assert (left.namespaces, left.deployments, left.replicas) == (3, 4, 10)


def test_a_share_being_deleted_is_not_left() -> None:
    going = split("team-a", "default", "web", **{"eu-1": 2})
    going["metadata"]["deletionTimestamp"] = stamp(NOW)
    namespaces, deployments = caches(obj("team-a", "default", labels={placed_label(COMPUTE, "eu-1"): "Placed"}), going)
    assert left_on(COMPUTE, "eu-1", namespaces=namespaces, deployments=deployments).deployments == 0


def test_cordoned_then_evicting_then_evicted_once_nothing_is_left_and_the_syncer_serves_none() -> None:
    some = Left({"team-a"}, 1, 2, 6)
    cordoned = eviction_status(target(unschedulable=True), some, now=NOW, grace_period=30, previous=None)
    assert cordoned is not None and cordoned["phase"] == CORDONED and "stay until it is evicted" in cordoned["message"]
    evicting = eviction_status(target(unschedulable=True, evictAfter=stamp(NOW)), some, now=NOW, grace_period=30,
                               previous=cordoned)
    assert evicting is not None and evicting["phase"] == EVICTING and (evicting["deployments"], evicting["replicas"]) == (2, 6)
    later = NOW + timedelta(seconds=5)
    still = eviction_status(target(served=1, evictAfter=stamp(NOW)), Left(), now=later, grace_period=30,
                            previous=evicting)
    assert still is not None and still["phase"] == EVICTING and "still serves 1" in still["message"]
    assert still["lastTransitionTime"] == evicting["lastTransitionTime"]  # the phase stayed
    done = eviction_status(target(served=0, evictAfter=stamp(NOW)), Left(), now=later, grace_period=30,
                           previous=still)
    assert done is not None and done["phase"] == EVICTED and done["lastTransitionTime"] == stamp(later)


def test_neither_cordoned_nor_evicted_has_no_eviction_and_a_future_evict_after_is_not_yet() -> None:
    assert eviction_status(target(), Left(), now=NOW, grace_period=30, previous=None) is None
    assert eviction_status(target(evictAfter=stamp(NOW + timedelta(minutes=5))), Left(), now=NOW, grace_period=30,
                           previous=None) is None
