"""A root's revisions as ReplicaSets in kcp: kube's deployment-controller rules for history."""

from __future__ import annotations

import copy
from typing import Any

from kcp_deployment_splitter.names import ASSIGNMENT_LABEL
from kcp_deployment_splitter.reconcile_revisions import Revisions
from kcp_deployment_splitter.revisions import (
    CHANGE_CAUSE,
    DESIRED_REPLICAS,
    MAX_HISTORY_CHARS,
    MAX_REPLICAS,
    REVISION,
    REVISION_HISTORY,
    RevisionPlan,
    plan_revisions,
    with_history,
)

from kcpcommon.errors import APIAlreadyExistsError
from kcpcommon.keys import ObjectKey
from kcpcommon.podtemplatehash import HASH_LABEL, pod_template_hash


def root(image: str, *, replicas: int = 4, limit: int | None = 10, paused: bool = False,
         cause: str | None = None) -> dict[str, Any]:
    annotations = {"kubectl.kubernetes.io/last-applied-configuration": "{}", "team": "a"}
    if cause:
        annotations[CHANGE_CAUSE] = cause
    spec: dict[str, Any] = {"replicas": replicas, "selector": {"matchLabels": {"app": "web"}}, "paused": paused,
                            "strategy": {"type": "RollingUpdate",
                                         "rollingUpdate": {"maxSurge": "25%", "maxUnavailable": "25%"}},
                            "template": {"metadata": {"labels": {"app": "web"}},
                                         "spec": {"containers": [{"name": "nginx", "image": image}]}}}
    if limit is not None:
        spec["revisionHistoryLimit"] = limit
    return {"metadata": {"name": "web", "namespace": "default", "uid": "root-uid", "annotations": annotations},
            "spec": spec, "status": {"replicas": replicas, "updatedReplicas": replicas, "readyReplicas": replicas,
                                     "availableReplicas": replicas - 1}}


class History:
    """The root's ReplicaSets as the API would hold them after each plan is written."""

    def __init__(self) -> None:
        self.sets: dict[str, dict[str, Any]] = {}
        self.clock = 0

    def roll(self, deployment: dict[str, Any]) -> RevisionPlan:
        plan = plan_revisions(deployment, list(self.sets.values()))
        if plan.create is not None:
            self.clock += 1
            created = copy.deepcopy(plan.create)
            created["metadata"]["creationTimestamp"] = f"2026-01-01T00:00:{self.clock:02d}Z"
            self.sets[created["metadata"]["name"]] = created
        for body in plan.update:
            self.sets[body["metadata"]["name"]] = body
        for gone in plan.delete:
            del self.sets[gone["metadata"]["name"]]
        return plan

    def revisions(self) -> dict[str, str]:
        return {rs["spec"]["template"]["spec"]["containers"][0]["image"]: rs["metadata"]["annotations"][REVISION]
                for rs in self.sets.values()}

    def replicas(self) -> dict[str, int]:
        return {rs["spec"]["template"]["spec"]["containers"][0]["image"]: rs["spec"]["replicas"]
                for rs in self.sets.values()}


def test_the_first_template_is_revision_1_named_by_its_hash_and_controlled_by_the_root() -> None:
    history = History()
    deployment = root("nginx:1", cause="kubectl apply")
    plan = history.roll(deployment)
    digest = pod_template_hash(deployment["spec"]["template"])
    assert plan.create is not None and plan.revision == "1" and plan.current == f"web-{digest}"
    rs = plan.create
    assert rs["metadata"]["labels"] == {"app": "web", HASH_LABEL: digest}
    assert rs["spec"]["selector"]["matchLabels"] == {"app": "web", HASH_LABEL: digest}
    assert rs["spec"]["template"]["metadata"]["labels"] == {"app": "web", HASH_LABEL: digest}
    assert rs["metadata"]["ownerReferences"] == [{"apiVersion": "apps/v1", "kind": "Deployment", "name": "web",
                                                  "uid": "root-uid", "controller": True, "blockOwnerDeletion": True}]
    assert rs["metadata"]["annotations"] == {"team": "a", CHANGE_CAUSE: "kubectl apply", REVISION: "1",
                                             DESIRED_REPLICAS: "4", MAX_REPLICAS: "5"}  # 4 + 25% rounded up
    assert ASSIGNMENT_LABEL not in rs["metadata"]["labels"]  # never synced down, never split
    assert rs["spec"]["replicas"] == 4
    assert plan.statuses[plan.current] == {"replicas": 4, "fullyLabeledReplicas": 4, "readyReplicas": 4,
                                           "availableReplicas": 3}


def test_a_new_template_is_the_next_revision_and_the_old_one_goes_to_zero() -> None:
    history = History()
    history.roll(root("nginx:1"))
    plan = history.roll(root("nginx:2", cause="set image"))
    assert plan.revision == "2"
    assert history.revisions() == {"nginx:1": "1", "nginx:2": "2"}
    assert history.replicas() == {"nginx:1": 0, "nginx:2": 4}
    old = next(n for n in plan.statuses if n != plan.current)
    assert plan.statuses[old] == {"replicas": 0}
    assert plan_revisions(root("nginx:2", cause="set image"), list(history.sets.values())).update == []  # settled


def test_back_to_an_old_template_makes_that_replica_set_the_newest_and_keeps_its_old_number() -> None:
    history = History()
    for image in ("nginx:1", "nginx:2"):
        history.roll(root(image))
    plan = history.roll(root("nginx:1"))
    assert plan.create is None and plan.revision == "3"
    assert history.revisions() == {"nginx:1": "3", "nginx:2": "2"}
    assert history.replicas() == {"nginx:1": 4, "nginx:2": 0}
    back = history.sets[plan.current or ""]
    assert back["metadata"]["annotations"][REVISION_HISTORY] == "1"
    history.roll(root("nginx:2"))
    history.roll(root("nginx:1"))
    assert history.sets[plan.current or ""]["metadata"]["annotations"][REVISION_HISTORY] == "1,3"


def test_revision_history_limit_prunes_the_oldest_old_replica_sets() -> None:
    history = History()
    for image in ("nginx:1", "nginx:2", "nginx:3", "nginx:4"):
        plan = history.roll(root(image, limit=2))
    assert [rs["spec"]["template"]["spec"]["containers"][0]["image"] for rs in plan.delete] == ["nginx:1"]
    assert history.revisions() == {"nginx:2": "2", "nginx:3": "3", "nginx:4": "4"}
    history.roll(root("nginx:5", limit=0))
    assert history.revisions() == {"nginx:5": "5"}


def test_a_paused_root_gets_no_new_revision_until_it_resumes() -> None:
    history = History()
    history.roll(root("nginx:1"))
    plan = history.roll(root("nginx:2", paused=True))
    assert plan.create is None and plan.revision is None
    assert history.revisions() == {"nginx:1": "1"}
    plan = history.roll(root("nginx:2"))
    assert plan.revision == "2" and history.revisions() == {"nginx:1": "1", "nginx:2": "2"}


def test_a_scaled_root_resizes_its_current_replica_set() -> None:
    history = History()
    history.roll(root("nginx:1"))
    plan = history.roll(root("nginx:1", replicas=10))
    assert [(rs["spec"]["replicas"], rs["metadata"]["annotations"][DESIRED_REPLICAS],
             rs["metadata"]["annotations"][MAX_REPLICAS]) for rs in plan.update] == [(10, "10", "13")]


def test_revision_history_keeps_within_kube_s_cap() -> None:
    long = ",".join(str(n) for n in range(1, 1000))
    kept = with_history(long, "1000")
    assert len(kept) <= MAX_HISTORY_CHARS and kept.endswith(",999,1000") and not kept.startswith("1,")


class _Cache:
    def __init__(self, *objs: dict[str, Any]) -> None:
        self.objs = objs

    def get(self, key: Any) -> dict[str, Any] | None:
        return next((o for o in self.objs if o["metadata"]["name"] == key.name), None)

    def by_index(self, name: str, value: str) -> list[dict[str, Any]]:
        return []


async def test_split_children_and_pinned_deployments_get_no_revisions() -> None:
    child = root("nginx:1")
    child["metadata"]["labels"] = {ASSIGNMENT_LABEL: "east"}
    revisions = Revisions(None, deployments=_Cache(child), replica_sets=_Cache(),  # type: ignore[arg-type]
                          events=None)  # type: ignore[arg-type]
    assert await revisions.reconcile(ObjectKey("admin", "default", "web")) is None  # no client touched


def test_a_collision_count_goes_into_the_new_replica_set_s_name() -> None:
    deployment = root("nginx:1")
    first = History().roll(deployment).current
    deployment["status"]["collisionCount"] = 1
    plan = History().roll(deployment)
    digest = pod_template_hash(deployment["spec"]["template"], 1)
    assert plan.current == f"web-{digest}" != first
    assert plan.create is not None and plan.create["spec"]["selector"]["matchLabels"][HASH_LABEL] == digest


class _Resource:
    """One resource of the fake kcp: a create whose name is taken, a get of the taker, writes recorded."""

    def __init__(self, taken: dict[str, Any] | None, writes: list[tuple[str, dict[str, Any]]]) -> None:
        self.taken = taken
        self.writes = writes

    async def create(self, body: dict[str, Any], namespace: str) -> dict[str, Any]:
        raise APIAlreadyExistsError("already exists", status=409, reason="AlreadyExists")

    async def get(self, name: str, namespace: str) -> dict[str, Any]:
        assert self.taken is not None
        return self.taken

    async def replace(self, body: dict[str, Any], namespace: str, subresource: str = "") -> dict[str, Any]:
        self.writes.append((subresource, body))
        return body


class _Kcp:
    def __init__(self, taken: dict[str, Any]) -> None:
        self.taken = taken
        self.writes: list[tuple[str, dict[str, Any]]] = []

    def dynamic(self, cluster: str) -> Any:
        return self

    def resource(self, group_version: str, plural: str, namespaced: bool) -> _Resource:
        return _Resource(self.taken if plural == "replicasets" else None, self.writes)


async def _reconcile_when_taken_by(taken: dict[str, Any]) -> list[tuple[str, dict[str, Any]]]:
    deployment = root("nginx:1")
    kcp = _Kcp(taken)
    revisions = Revisions(kcp, deployments=_Cache(deployment), replica_sets=_Cache(),  # type: ignore[arg-type]
                          events=None)  # type: ignore[arg-type]
    await revisions.reconcile(ObjectKey("admin", "default", "web"))
    return kcp.writes


async def test_a_name_taken_by_another_replica_set_bumps_the_root_s_collision_count() -> None:
    foreign = plan_revisions(root("nginx:1"), []).create
    assert foreign is not None
    foreign["metadata"]["ownerReferences"] = []  # a user's ReplicaSet of that name
    writes = await _reconcile_when_taken_by(foreign)
    assert [(sub, body["status"].get("collisionCount")) for sub, body in writes] == [("status", 1)]


async def test_the_root_s_own_replica_set_not_cached_yet_is_no_collision() -> None:
    own = plan_revisions(root("nginx:1"), []).create
    assert own is not None
    assert await _reconcile_when_taken_by(own) == []
