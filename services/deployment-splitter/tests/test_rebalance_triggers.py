"""What wakes the roots: a SyncTarget's heartbeat does not, a change placement reads does, and a
target NotReady past its grace period does through each root's own `requeue_after`."""

from __future__ import annotations

import copy
import itertools
from datetime import UTC, datetime, timedelta
from typing import Any

from kcp_deployment_splitter.capacity import CapacityTracker
from kcp_deployment_splitter.controller import SplitterController
from kcp_deployment_splitter.expectations import Expectations
from kcp_deployment_splitter.load import TargetLoad
from kcp_deployment_splitter.names import ASSIGNMENT_LABEL, ROOT_LABEL
from kcp_deployment_splitter.reconcile import ROOT_INDEX, Splitter
from kcp_deployment_splitter.settings import SplitterSettings
from kcp_deployment_splitter.targets import placement_facts
from prometheus_client import CollectorRegistry

from kcpcommon.keys import CLUSTER_ANNOTATION, ObjectKey, key_for
from kcpcommon.store import Indexer

NOW = datetime(2026, 11, 25, 12, 0, 0, tzinfo=UTC)
CLUSTER = "tenant"


def stamp(when: datetime) -> str:
    return when.strftime("%Y-%m-%dT%H:%M:%SZ")


def sync_target(name: str, ready: str = "True", since: datetime = NOW - timedelta(hours=1),
                heartbeat: datetime = NOW) -> dict[str, Any]:
    return {"metadata": {"name": name, "annotations": {CLUSTER_ANNOTATION: CLUSTER}, "resourceVersion": "1",
                         "creationTimestamp": stamp(NOW - timedelta(hours=2))},
            "spec": {"kubeconfig": "x"},
            "status": {"lastSyncerHeartbeatTime": stamp(heartbeat), "allocatable": {"pods": "110"},
                       "conditions": [{"type": "Ready", "status": ready, "lastTransitionTime": stamp(since),
                                       "message": f"no syncer heartbeat for {(NOW - heartbeat).seconds}s"}]}}


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


def test_a_child_s_status_update_leaves_the_dependencies_alone_but_wakes_its_root() -> None:
    controller = controller_with_roots("web")
    child = root("web--east", 2)
    child["metadata"]["labels"] = {"app": "web", ASSIGNMENT_LABEL: "east", ROOT_LABEL: "web"}
    reported = copy.deepcopy(child)
    reported["status"] = {"availableReplicas": 2}
    assert controller.dependencies is not None
    controller._deployment_update(child, reported)
    assert len(controller.dependencies.queue) == 0
    assert len(controller.controller.queue) == 1
    controller._deployment(child)  # a new child: what it uses is now on east
    assert len(controller.dependencies.queue) == 1


# --- the grace period's end, through the reconciler ---

class _Writes:
    """A DynamicResource that records the splitter's writes and, as the informer would, caches them."""

    def __init__(self, cache: Indexer) -> None:
        self.cache = cache
        self.log: list[tuple[str, dict[str, Any]]] = []
        self._rv = itertools.count(100)

    def resource(self, *args: Any, **kwargs: Any) -> _Writes:
        return self

    def dynamic(self, cluster: str) -> _Writes:
        return self

    def _written(self, verb: str, body: dict[str, Any]) -> dict[str, Any]:
        body = copy.deepcopy(body)
        body["metadata"]["resourceVersion"] = str(next(self._rv))
        body["metadata"].setdefault("annotations", {})[CLUSTER_ANNOTATION] = CLUSTER
        self.log.append((verb, body))
        if body.get("kind") == "Deployment":
            self.cache.upsert(body)
        return body

    async def create(self, body: dict[str, Any], **kwargs: Any) -> dict[str, Any]:
        return self._written("create", body)

    async def replace(self, body: dict[str, Any], **kwargs: Any) -> dict[str, Any]:
        return self._written("replace", body)

    async def delete(self, name: str, **kwargs: Any) -> None:
        self.log.append(("delete", {"metadata": {"name": name}}))


def child_of(parent: dict[str, Any], target: str, replicas: int) -> dict[str, Any]:
    child = root(f"{parent['metadata']['name']}--{target}", replicas)
    meta = child["metadata"]
    meta["labels"] = {"app": "web", ASSIGNMENT_LABEL: target, ROOT_LABEL: "web"}
    meta["annotations"]["splitter.kcp.io/root-generation"] = "1"
    meta["ownerReferences"] = [{"apiVersion": "apps/v1", "kind": "Deployment", "name": "web", "uid": "uid-web",
                                "controller": True, "blockOwnerDeletion": True}]
    child["spec"] = {**parent["spec"], "replicas": replicas}
    child["status"] = {"observedGeneration": 1, "replicas": replicas, "updatedReplicas": replicas,
                       "readyReplicas": replicas, "availableReplicas": replicas}
    return child


async def test_a_target_not_ready_past_the_grace_period_loses_its_replicas_when_the_timer_fires() -> None:
    clock = [NOW]
    deployments = Indexer(key_for, {ROOT_INDEX: lambda o: [f"{CLUSTER}|default|{o['metadata']['labels'][ROOT_LABEL]}"]
                                    if ROOT_LABEL in o["metadata"]["labels"] else []})
    targets = Indexer(key_for)
    web = root("web", 4)
    for obj in (web, child_of(web, "east", 2), child_of(web, "west", 2)):
        deployments.upsert(obj)
    targets.upsert(sync_target("east"))
    targets.upsert(sync_target("west", ready="False", since=NOW - timedelta(seconds=10)))
    writes = _Writes(deployments)
    splitter = Splitter(writes, deployments=deployments, targets=targets, grace_period=30,  # type: ignore[arg-type]
                        capacity=CapacityTracker(grace_period=30, retry_period=600, clock=lambda: 0.0,
                                                 wall=lambda: clock[0]),
                        load=TargetLoad(), expectations=Expectations(ttl=15, clock=lambda: 0.0),
                        registry=CollectorRegistry(), now=lambda: clock[0])
    key = ObjectKey(CLUSTER, "default", "web")
    inside = await splitter.reconcile(key)
    assert [body for _, body in writes.log if "--" in body["metadata"]["name"]] == []  # children stay
    assert inside is not None and inside.requeue_after is not None and 20 <= inside.requeue_after <= 21
    clock[0] = NOW + timedelta(seconds=inside.requeue_after)  # the work queue brings the root back then
    await splitter.reconcile(key)
    grown = [body for verb, body in writes.log if verb == "replace" and body["metadata"]["name"] == "web--east"]
    assert grown and grown[0]["spec"]["replicas"] == 4


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
    deployments = Indexer(key_for, {ROOT_INDEX: lambda o: [f"{CLUSTER}|default|{o['metadata']['labels'][ROOT_LABEL]}"]
                                    if ROOT_LABEL in o["metadata"]["labels"] else []})
    targets, budgets = Indexer(key_for), Indexer(key_for)
    web = root("web", 4)
    web["metadata"]["annotations"]["splitter.kcp.io/placement"] = "west"  # everything moves to west
    west = child_of(web, "west", 4)
    west["status"].update(readyReplicas=2, availableReplicas=2)  # west runs 2 of 4: all its 2 pods fit
    for obj in (web, child_of(web, "east", 4), west):
        deployments.upsert(obj)
    targets.upsert(sync_target("east"))
    small = sync_target("west")
    small["status"]["allocatable"] = {"pods": "2"}
    targets.upsert(small)
    budgets.upsert(budget("web-pdb", 3))
    budgets.upsert(budget("typo", "three"))  # kube's API would refuse it: left out, and said
    writes = _Writes(deployments)
    splitter = Splitter(writes, deployments=deployments, targets=targets, grace_period=30,  # type: ignore[arg-type]
                        capacity=CapacityTracker(grace_period=30, retry_period=600, clock=lambda: 0.0,
                                                 wall=lambda: NOW),
                        load=TargetLoad(), expectations=Expectations(ttl=15, clock=lambda: 0.0),
                        registry=CollectorRegistry(), now=lambda: NOW, budgets=budgets)
    await splitter.reconcile(ObjectKey(CLUSTER, "default", "web"))
    east = [body for verb, body in writes.log if body["metadata"]["name"] == "web--east"]
    # without the budget east's child is deleted (west is at its capacity); minAvailable 3 keeps 1 there
    assert [(verb, body["spec"]["replicas"]) for verb, body in writes.log
            if body["metadata"]["name"] == "web--east"] == [("replace", 1)], east
    status = next(body["status"] for verb, body in writes.log if body["metadata"]["name"] == "web")
    progressing = next(c for c in status["conditions"] if c["type"] == "Progressing")
    assert ("Kept 1 replicas (1 on east): moving them would violate the pod's disruption budget \"web-pdb\" "
            "(minAvailable: 3; 2 would be available, it needs 3).") in progressing["message"]
    assert ("Ignored PodDisruptionBudget typo: spec.minAvailable: 'three' must be an integer or a percentage"
            in progressing["message"])
