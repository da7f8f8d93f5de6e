"""What wakes the roots: a SyncTarget's heartbeat does not, a change placement reads does, and a
target NotReady past its grace period does through each root's own `requeue_after`."""

from __future__ import annotations

import copy
import json
from datetime import timedelta
from typing import Any

from kcp_deployment_splitter.capacity import CapacityTracker
from kcp_deployment_splitter.controller import SplitterController
from kcp_deployment_splitter.expectations import Expectations
from kcp_deployment_splitter.load import TargetLoad
from kcp_deployment_splitter.reconcile import Splitter
from kcp_deployment_splitter.settings import SplitterSettings
from kcp_deployment_splitter.shares import shares_of, shares_patch, spec_diff_annotation, status_annotation
from kcp_deployment_splitter.targets import placement_facts
from prometheus_client import CollectorRegistry
from splitter_fakes import CLUSTER, NOW, Writes, sync_target

from kcpcommon.keys import CLUSTER_ANNOTATION, ObjectKey, key_for
from kcpcommon.store import Indexer


def root(name: str, replicas: int) -> dict[str, Any]:
    return {"apiVersion": "apps/v1", "kind": "Deployment",
            "metadata": {"name": name, "namespace": "default", "uid": f"uid-{name}", "generation": 1,
                         "resourceVersion": "1", "labels": {"app": name},
                         "annotations": {CLUSTER_ANNOTATION: CLUSTER}},
            "spec": {"replicas": replicas, "selector": {"matchLabels": {"app": name}},
                     "template": {"metadata": {"labels": {"app": name}},
                                  "spec": {"containers": [{"name": "main", "image": "nginx"}]}}}}


# --- enqueue rules ---

class _Resource:
    """Enough of a DynamicResource for informers that never run."""


class _Clients:
    server = "https://kcp.invalid"

    def dynamic(self, cluster: str) -> _Clients:
        return self

    def resource(self, *args: Any, **kwargs: Any) -> _Resource:
        return _Resource()


def controller_with_roots(*names: str) -> SplitterController:
    controller = SplitterController(_Clients(), SplitterSettings(), CollectorRegistry())  # type: ignore[arg-type]
    for name in names:
        controller.deployments.plain.indexer.upsert(root(name, 3))
    return controller


def test_a_heartbeat_that_changes_nothing_placement_reads_wakes_no_root() -> None:
    controller = controller_with_roots("web", "api")
    before = sync_target("east", heartbeat=NOW - timedelta(seconds=10))
    after = sync_target("east", heartbeat=NOW)
    assert placement_facts(before) == placement_facts(after)
    controller._target_update(before, after)
    assert len(controller.controller.queue) == 0


def test_a_target_turning_not_ready_wakes_every_root_of_its_logical_cluster() -> None:
    controller = controller_with_roots("web", "api")
    controller._target_update(sync_target("east"), sync_target("east", ready="False", since=NOW))
    assert len(controller.controller.queue) == 2


def test_schedulability_and_allocatable_changes_wake_the_roots_too() -> None:
    controller = controller_with_roots("web")
    cordoned = sync_target("east")
    cordoned["spec"]["unschedulable"] = True
    bigger = sync_target("east")
    bigger["status"]["allocatable"] = {"pods": "220"}
    for changed in (cordoned, bigger):
        assert placement_facts(changed) != placement_facts(sync_target("east"))
    controller._target_update(sync_target("east"), cordoned)
    assert len(controller.controller.queue) == 1


def test_a_syncer_s_status_report_leaves_the_dependencies_alone_but_wakes_its_root() -> None:
    controller = controller_with_roots("web")
    unplaced = root("web", 2)
    placed = with_shares(unplaced, east=2)
    reported = with_shares(unplaced, east=2, east_status={"availableReplicas": 2})
    assert controller.dependencies is not None
    controller._deployment_update(placed, reported)
    assert len(controller.dependencies.queue) == 0
    assert len(controller.controller.queue) == 1
    controller._deployment_update(unplaced, placed)  # a new share: what it uses is now on east
    assert len(controller.dependencies.queue) == 1


# --- the grace period's end, through the reconciler ---

def with_shares(parent: dict[str, Any], *, east_status: dict[str, Any] | None = None,
                **shares: int) -> dict[str, Any]:
    """`parent` with `shares` written on it, each reported by its syncer as all available."""
    placed = copy.deepcopy(parent)
    patch = shares_patch(placed, shares, {})
    assert patch is not None
    placed["metadata"]["labels"].update(patch["metadata"]["labels"])
    placed["metadata"]["annotations"].update(patch["metadata"]["annotations"])
    for target, replicas in shares.items():
        status = {"observedGeneration": 1, "replicas": replicas, "updatedReplicas": replicas,
                  "readyReplicas": replicas, "availableReplicas": replicas}
        if target == "east" and east_status is not None:
            status = east_status
        placed["metadata"]["annotations"][status_annotation(target)] = json.dumps(status)
    return placed


def reported(obj: dict[str, Any], target: str, **status: Any) -> None:
    """Change what `target`'s syncer reported of its copy."""
    key = status_annotation(target)
    obj["metadata"]["annotations"][key] = json.dumps({**json.loads(obj["metadata"]["annotations"][key]), **status})


async def test_a_target_not_ready_past_the_grace_period_loses_its_replicas_when_the_timer_fires() -> None:
    clock = [NOW]
    deployments = Indexer(key_for)
    targets = Indexer(key_for)
    deployments.upsert(with_shares(root("web", 4), east=2, west=2))
    targets.upsert(sync_target("east"))
    targets.upsert(sync_target("west", ready="False", since=NOW - timedelta(seconds=10)))
    writes = Writes(deployments)
    splitter = Splitter(writes, deployments=deployments, targets=targets, grace_period=30,  # type: ignore[arg-type]
                        capacity=CapacityTracker(grace_period=30, retry_period=600, clock=lambda: 0.0,
                                                 wall=lambda: clock[0]),
                        load=TargetLoad(), expectations=Expectations(ttl=15, clock=lambda: 0.0),
                        registry=CollectorRegistry(), now=lambda: clock[0])
    key = ObjectKey(CLUSTER, "default", "web")
    inside = await splitter.reconcile(key)
    assert [body for what, body in writes.log if what == "web"] == []  # the shares stay
    assert inside is not None and inside.requeue_after is not None and 20 <= inside.requeue_after <= 21
    clock[0] = NOW + timedelta(seconds=inside.requeue_after)  # the work queue brings the root back then
    await splitter.reconcile(key)
    moved = [body for what, body in writes.log if what == "web"]
    assert moved and moved[0]["metadata"]["annotations"][spec_diff_annotation("east")] == \
        '[{"op":"replace","path":"/replicas","value":4}]'
    # make-before-break: west keeps its 2 until east reports its 4 available
    assert shares_of(deployments.get(key) or {}) == {"east": 4, "west": 2}


# --- PodDisruptionBudgets: what they wake, and what they hold back through the reconciler ---

def budget(name: str, min_available: Any, *, status: dict[str, Any] | None = None) -> dict[str, Any]:
    return {"apiVersion": "policy/v1", "kind": "PodDisruptionBudget",
            "metadata": {"name": name, "namespace": "default", "resourceVersion": "1",
                         "annotations": {CLUSTER_ANNOTATION: CLUSTER}},
            "spec": {"minAvailable": min_available, "selector": {"matchLabels": {"app": "web"}}},
            "status": status or {}}


def test_a_budget_s_spec_wakes_the_roots_of_its_namespace_and_its_status_does_not() -> None:
    controller = controller_with_roots("web", "api")
    controller._budget(budget("web", 3))
    assert len(controller.controller.queue) == 2
    fresh = controller_with_roots("web")
    fresh._budget_update(budget("web", 3), budget("web", 3, status={"currentHealthy": 3}))
    assert len(fresh.controller.queue) == 0
    fresh._budget_update(budget("web", 3), budget("web", 4))
    assert len(fresh.controller.queue) == 1


async def test_a_budget_keeps_old_replicas_while_a_capped_new_cluster_is_short_and_the_root_says_why() -> None:
    deployments = Indexer(key_for)
    targets, budgets = Indexer(key_for), Indexer(key_for)
    web = root("web", 4)
    web["metadata"]["annotations"]["splitter.kcp.io/placement"] = "west"  # everything moves to west
    web = with_shares(web, east=4, west=4)
    reported(web, "west", readyReplicas=2, availableReplicas=2)  # west runs 2 of 4: all its 2 pods fit
    deployments.upsert(web)
    targets.upsert(sync_target("east"))
    small = sync_target("west")
    small["status"]["allocatable"] = {"pods": "2"}
    targets.upsert(small)
    budgets.upsert(budget("web-pdb", 3))
    budgets.upsert(budget("typo", "three"))  # kube's API would refuse it: left out, and said
    writes = Writes(deployments)
    splitter = Splitter(writes, deployments=deployments, targets=targets, grace_period=30,  # type: ignore[arg-type]
                        capacity=CapacityTracker(grace_period=30, retry_period=600, clock=lambda: 0.0,
                                                 wall=lambda: NOW),
                        load=TargetLoad(), expectations=Expectations(ttl=15, clock=lambda: 0.0),
                        registry=CollectorRegistry(), now=lambda: NOW, budgets=budgets)
    await splitter.reconcile(ObjectKey(CLUSTER, "default", "web"))
    # without the budget east's share goes (west is at its capacity); minAvailable 3 keeps 1 there
    assert shares_of(deployments.get(ObjectKey(CLUSTER, "default", "web")) or {}) == {"east": 1, "west": 4}
    status = next(body["status"] for what, body in writes.log if what == "web/status")
    progressing = next(c for c in status["conditions"] if c["type"] == "Progressing")
    assert ("Kept 1 replicas (1 on east): moving them would violate the pod's disruption budget \"web-pdb\" "
            "(minAvailable: 3; 2 would be available, it needs 3).") in progressing["message"]
    assert ("Ignored PodDisruptionBudget typo: spec.minAvailable: 'three' must be an integer or a percentage"
            in progressing["message"])
