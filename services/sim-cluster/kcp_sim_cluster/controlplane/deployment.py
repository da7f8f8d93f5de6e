"""The Deployment controller: ReplicaSets by pod-template hash, rolling and recreate rollouts.

kube's pkg/controller/deployment in outline. The new ReplicaSet is the one whose template equals the
Deployment's (ignoring the hash label), named `<deployment>-<hash>`, created when missing. Rolling
updates grow it and shrink the old ones within maxSurge and maxUnavailable (`rollout.py`); Recreate
empties the old ones first. Every ReplicaSet carries the revision annotation (and the Deployment the
current one), so `kubectl rollout history` lists revisions and `kubectl rollout undo` (which copies an
old ReplicaSet's template back) makes that ReplicaSet new again under the next revision. A paused
Deployment only scales; a resize mid-rollout is spread in proportion; old ReplicaSets beyond
revisionHistoryLimit are deleted.
"""

from __future__ import annotations

from typing import Any

import structlog

from kcp_apiserver.embedding import Resource
from kcp_apiserver.embedding import status as st
from kcp_sim_cluster.controlplane import deployment_status as ds
from kcp_sim_cluster.controlplane import rollout
from kcp_sim_cluster.controlplane.base import SimController
from kcp_sim_cluster.controlplane.claims import claim, selector_of
from kcp_sim_cluster.controlplane.events import NORMAL
from kcp_sim_cluster.controlplane.hashing import HASH_LABEL, pod_template_hash, templates_equal_ignoring_hash
from kcp_sim_cluster.controlplane.informer import cluster_of, controller_uid, index_value, key_of
from kcp_sim_cluster.controlplane.objects import (
    Obj,
    annotations_of,
    copy_obj,
    get_condition,
    is_deleting,
    labels,
    owner_reference,
)
from kcp_sim_cluster.controlplane.podutil import is_terminal
from kcp_sim_cluster.controlplane.runtime import Sim
from kcpcommon.controller import Result
from kcpcommon.keys import CLUSTER_ANNOTATION, ObjectKey

log = structlog.get_logger("sim.deployment")

COMPONENT = "deployment-controller"
REVISION = "deployment.kubernetes.io/revision"
REVISION_HISTORY = "deployment.kubernetes.io/revision-history"
DESIRED = "deployment.kubernetes.io/desired-replicas"
MAX = "deployment.kubernetes.io/max-replicas"
LAST_APPLIED = "kubectl.kubernetes.io/last-applied-configuration"
ROLLBACK_TO = "deprecated.deployment.rollback.to"
NOT_COPIED = (LAST_APPLIED, REVISION, REVISION_HISTORY, DESIRED, MAX, ROLLBACK_TO)


def _copied_annotations(d: Obj) -> dict[str, str]:
    """The Deployment's annotations its ReplicaSets carry (the server stamps its own cluster annotation)."""
    return {k: v for k, v in annotations_of(d).items() if k not in NOT_COPIED and k != CLUSTER_ANNOTATION}


def revision(obj: Obj) -> int:
    try:
        return int(annotations_of(obj).get(REVISION, "0"))
    except ValueError:
        return 0


def spec_replicas(rs: Obj) -> int:
    return int((rs.get("spec") or {}).get("replicas") or 0)


def _fenceposts(d: Obj) -> tuple[int, int]:
    """(maxSurge, maxUnavailable) resolved; Recreate has neither."""
    strategy = (d.get("spec") or {}).get("strategy") or {}
    if strategy.get("type") == "Recreate":
        return 0, 0
    rolling = strategy.get("rollingUpdate") or {}
    want = ds.replicas(d)
    surge, unavailable = rollout.resolve_fenceposts(rolling.get("maxSurge"), rolling.get("maxUnavailable"), want)
    return surge, min(unavailable, want)


class DeploymentController(SimController):
    name = "sim-deployment"
    needs = ("deployments", "replicasets", "pods")
    workers = 4

    def __init__(self, sim: Sim) -> None:
        super().__init__(sim)
        self.d_res: Resource = sim.resource("deployments")  # type: ignore[assignment]
        self.rs_res: Resource = sim.resource("replicasets")  # type: ignore[assignment]

    def wire(self) -> None:
        self.sim.informer("deployments").add_index("uid", lambda o: [o["metadata"].get("uid", "")])
        self.sim.informer("deployments").add_handler(lambda old, new: self.enqueue(new if new is not None else old))
        self.sim.informer("replicasets").add_handler(self._on_rs)
        self.sim.informer("pods").add_handler(self._on_pod)

    def _on_rs(self, old: Obj | None, new: Obj | None) -> None:
        rs = new if new is not None else old
        assert rs is not None
        uid = controller_uid(rs)
        if uid:
            for key in self.sim.informer("deployments").keys_by_index("uid", uid):
                self.enqueue_soon(key)
        elif new is not None:  # an orphan its Deployments may adopt
            namespace = index_value(cluster_of(new), new["metadata"].get("namespace", ""))
            for d in self.sim.informer("deployments").by_index("namespace", namespace):
                selector = selector_of(d)
                if selector is not None and selector.matches(labels(new)):
                    self.enqueue(d)

    def _on_pod(self, old: Obj | None, new: Obj | None) -> None:
        """A Recreate rollout waits for the old pods to go: their deletion wakes it."""
        if new is not None or old is None:
            return
        for rs_key in self.sim.informer("replicasets").keys_by_index("uid", controller_uid(old)):
            rs = self.sim.informer("replicasets").get(rs_key)
            if rs is not None:
                self._on_rs(None, rs)

    # -- reading ------------------------------------------------------------------------------

    async def _replica_sets(self, d: Obj) -> list[Obj]:
        """Its ReplicaSets, adopting orphans its selector matches and releasing what it no longer does."""
        informer = self.sim.informer("replicasets")
        key = key_of(d)
        return await claim(self.sim, self.rs_res, d, informer.by_index("owner", d["metadata"]["uid"]),
                           informer.by_index("orphan", index_value(key.cluster, key.namespace)))

    def _split(self, d: Obj, rss: list[Obj]) -> tuple[Obj | None, list[Obj]]:
        template = (d.get("spec") or {}).get("template") or {}
        matching = sorted((rs for rs in rss if templates_equal_ignoring_hash((rs.get("spec") or {}).get("template")
                                                                           or {}, template)),
                          key=lambda rs: (rs["metadata"].get("creationTimestamp", ""), rs["metadata"]["name"]))
        new = matching[0] if matching else None
        return new, [rs for rs in rss if rs is not new]

    # -- the sync ------------------------------------------------------------------------------

    async def reconcile(self, key: ObjectKey) -> Result | None:
        d = self.sim.informer("deployments").get(key)
        if d is None:
            return None
        rss = await self._replica_sets(d)
        new_rs, olds = self._split(d, rss)
        if is_deleting(d):
            return await self._sync_status(d, new_rs, olds)
        spec = d.get("spec") or {}
        if spec.get("paused") or self._is_scaling_event(d, rss):
            new_rs, d = await self._new_rs(d, new_rs, olds, create=False)
            await self._scale(d, new_rs, olds)
            if spec.get("paused"):
                await self._cleanup(d, new_rs, olds)
            return await self._sync_status(d, new_rs, olds)
        if ((spec.get("strategy") or {}).get("type")) == "Recreate":
            return await self._recreate(d, new_rs, olds)
        return await self._rolling(d, new_rs, olds)

    def _is_scaling_event(self, d: Obj, rss: list[Obj]) -> bool:
        want = str(ds.replicas(d))
        return any(annotations_of(rs).get(DESIRED, want) != want for rs in rss if spec_replicas(rs) > 0)

    async def _rolling(self, d: Obj, new_rs: Obj | None, olds: list[Obj]) -> Result | None:
        new_rs, d = await self._new_rs(d, new_rs, olds, create=True)
        assert new_rs is not None
        want = ds.replicas(d)
        surge, unavailable = _fenceposts(d)
        everything = [new_rs, *olds]
        size = spec_replicas(new_rs)
        if size > want:
            target = want
        else:
            target = rollout.new_rs_replicas(want, surge, size, sum(spec_replicas(rs) for rs in everything))
        if target != size:
            new_rs = await self._scale_rs(d, new_rs, target) or new_rs
            return await self._sync_status(d, new_rs, olds)
        new_state = rollout.RSState(new_rs["metadata"]["name"], size, _available(new_rs))
        old_states = [rollout.RSState(rs["metadata"]["name"], spec_replicas(rs), _available(rs),
                                      rs["metadata"].get("creationTimestamp", "")) for rs in olds]
        shrink = rollout.old_scale_down(want, unavailable, new_state, old_states)
        if shrink:
            shrunk = []
            for rs in olds:
                new_size = shrink.get(rs["metadata"]["name"])
                shrunk.append(rs if new_size is None else (await self._scale_rs(d, rs, new_size) or rs))
            return await self._sync_status(d, new_rs, shrunk)
        if ds.is_complete(d, ds.calculate(d, new_rs, [new_rs, *olds], unavailable)):
            await self._cleanup(d, new_rs, olds)
        return await self._sync_status(d, new_rs, olds)

    async def _recreate(self, d: Obj, new_rs: Obj | None, olds: list[Obj]) -> Result | None:
        active_olds = [rs for rs in olds if spec_replicas(rs) > 0]
        if active_olds:
            olds = [await self._scale_rs(d, rs, 0) or rs if spec_replicas(rs) > 0 else rs for rs in olds]
            return await self._sync_status(d, new_rs, olds)
        pods = self.sim.informer("pods")
        if any(not is_terminal(p) for rs in olds for p in pods.by_index("owner", rs["metadata"]["uid"])):
            return await self._sync_status(d, new_rs, olds)  # old pods still running: wait for them to go
        new_rs, d = await self._new_rs(d, new_rs, olds, create=True)
        assert new_rs is not None
        if spec_replicas(new_rs) != ds.replicas(d):
            new_rs = await self._scale_rs(d, new_rs, ds.replicas(d)) or new_rs
            return await self._sync_status(d, new_rs, olds)
        if ds.is_complete(d, ds.calculate(d, new_rs, [new_rs, *olds], 0)):
            await self._cleanup(d, new_rs, olds)
        return await self._sync_status(d, new_rs, olds)

    async def _scale(self, d: Obj, new_rs: Obj | None, olds: list[Obj]) -> None:
        """kube's scale(): resize the one active ReplicaSet, or spread a resize over several."""
        want = ds.replicas(d)
        everything = [rs for rs in (new_rs, *olds) if rs is not None]
        active = [rs for rs in everything if spec_replicas(rs) > 0]
        if len(active) <= 1:
            target = active[0] if active else (new_rs if new_rs is not None else _newest(everything))
            if target is not None and (spec_replicas(target) != want or annotations_of(target).get(DESIRED) != str(want)):
                await self._scale_rs(d, target, want)
            return
        if new_rs is not None and spec_replicas(new_rs) == want and _available(new_rs) == want:
            for rs in olds:
                if spec_replicas(rs):
                    await self._scale_rs(d, rs, 0)
            return
        surge, _ = _fenceposts(d)
        states = [rollout.RSState(rs["metadata"]["name"], spec_replicas(rs), _available(rs),
                                  rs["metadata"].get("creationTimestamp", ""), _max_replicas(rs)) for rs in active]
        sizes = rollout.proportional_scale(want, surge, int((d.get("status") or {}).get("replicas") or 0), states)
        for rs in active:
            size = sizes.get(rs["metadata"]["name"], spec_replicas(rs))
            if size != spec_replicas(rs) or annotations_of(rs).get(DESIRED) != str(want):
                await self._scale_rs(d, rs, size)

    # -- ReplicaSets ---------------------------------------------------------------------------

    async def _new_rs(self, d: Obj, new_rs: Obj | None, olds: list[Obj], *, create: bool) -> tuple[Obj | None, Obj]:
        """The new ReplicaSet with its revision brought up to date (created when asked); and the Deployment."""
        max_old = max((revision(rs) for rs in olds), default=0)
        new_revision = max_old + 1
        if new_rs is not None:
            # kube copies the Deployment's annotations (a change-cause among them) to its new ReplicaSet on every
            # sync, not only when creating it
            copied = _copied_annotations(d)
            stale = any(annotations_of(new_rs).get(k) != v for k, v in copied.items())
            if revision(new_rs) < new_revision or annotations_of(new_rs).get(DESIRED) is None or stale:
                previous = revision(new_rs)
                surge, _ = _fenceposts(d)

                def mark(rs: dict[str, Any]) -> None:
                    notes = rs["metadata"].setdefault("annotations", {})
                    notes.update(copied)
                    if previous and previous < new_revision:
                        history = [h for h in notes.get(REVISION_HISTORY, "").split(",") if h]
                        notes[REVISION_HISTORY] = ",".join([*history, str(previous)])
                    notes[REVISION] = str(max(previous, new_revision))
                    notes.setdefault(DESIRED, str(ds.replicas(d)))
                    notes.setdefault(MAX, str(ds.replicas(d) + surge))

                new_rs = await self.sim.patch(self.rs_res, new_rs, mark) or new_rs
            d = await self._deployment_revision(d, new_rs, found=True)
            return new_rs, d
        if not create:
            return None, d
        created = await self._create_rs(d, olds, new_revision)
        if created is None:
            return None, d
        d = await self._deployment_revision(d, created, found=False)
        return created, d

    async def _create_rs(self, d: Obj, olds: list[Obj], new_revision: int) -> Obj | None:
        spec = d.get("spec") or {}
        status = d.get("status") or {}
        template = copy_obj(spec.get("template") or {})
        hash_ = pod_template_hash(template, status.get("collisionCount"))
        template.setdefault("metadata", {}).setdefault("labels", {})[HASH_LABEL] = hash_
        selector = copy_obj(spec.get("selector") or {})
        selector.setdefault("matchLabels", {})[HASH_LABEL] = hash_
        want = ds.replicas(d)
        surge, _ = _fenceposts(d)
        if (spec.get("strategy") or {}).get("type") == "Recreate":
            size = want
        else:
            size = rollout.new_rs_replicas(want, surge, 0, sum(spec_replicas(rs) for rs in olds))
        notes = _copied_annotations(d)
        notes.update({REVISION: str(new_revision), DESIRED: str(want), MAX: str(want + surge)})
        name = f"{d['metadata']['name']}-{hash_}"
        rs = {"apiVersion": "apps/v1", "kind": "ReplicaSet",
              "metadata": {"name": name, "namespace": d["metadata"].get("namespace", ""),
                           "labels": dict(template["metadata"]["labels"]), "annotations": notes,
                           "ownerReferences": [owner_reference(d)]},
              "spec": {"replicas": size, "minReadySeconds": int(spec.get("minReadySeconds") or 0),
                       "selector": selector, "template": template}}
        key = key_of(d)
        try:
            created = await self.sim.registry.create(self.rs_res, key.cluster, key.namespace, rs)
        except st.APIError as exc:
            if exc.code != 409:
                raise
            existing = self.sim.informer("replicasets").get(ObjectKey(key.cluster, key.namespace, name))
            if existing is not None and controller_uid(existing) == d["metadata"]["uid"]:
                return existing  # ours: the informer had not shown it yet
            await self._bump_collisions(d)
            raise  # retried with the next collisionCount
        if size > 0:
            self._scaled_event(d, created, 0, size)
        return created

    async def _bump_collisions(self, d: Obj) -> None:
        def bump(current: dict[str, Any]) -> bool:
            status = current.setdefault("status", {})
            status["collisionCount"] = int(status.get("collisionCount") or 0) + 1
            return True

        await self.sim.write_status(self.d_res, d, bump)

    async def _deployment_revision(self, d: Obj, new_rs: Obj, *, found: bool) -> Obj:
        """The Deployment's revision annotation follows its new ReplicaSet (kube writes it with the status)."""
        wanted = annotations_of(new_rs).get(REVISION, "")
        name = new_rs["metadata"]["name"]
        cond = get_condition(d.get("status"), ds.PROGRESSING)
        needs_cond = not found or cond is None
        if annotations_of(d).get(REVISION) == wanted and not needs_cond:
            return d

        def update(current: dict[str, Any]) -> bool:
            current["metadata"].setdefault("annotations", {})[REVISION] = wanted
            if ds.deadline(current) is not None:
                status = current.setdefault("status", {})
                if not found:
                    ds.set_deployment_condition(status, ds.PROGRESSING, "True", "NewReplicaSetCreated",
                                                f'Created new replica set "{name}"')
                elif get_condition(status, ds.PROGRESSING) is None:
                    ds.set_deployment_condition(status, ds.PROGRESSING, "True", "FoundNewReplicaSet",
                                                f'Found new replica set "{name}"')
            return True

        return await self.sim.write_status(self.d_res, d, update) or d

    async def _scale_rs(self, d: Obj, rs: Obj, size: int) -> Obj | None:
        before = spec_replicas(rs)
        surge, _ = _fenceposts(d)
        want = ds.replicas(d)

        def scale(current: dict[str, Any]) -> None:
            current.setdefault("spec", {})["replicas"] = size
            notes = current["metadata"].setdefault("annotations", {})
            notes[DESIRED] = str(want)
            notes[MAX] = str(want + surge)

        scaled = await self.sim.patch(self.rs_res, rs, scale)
        if scaled is not None and before != size:
            self._scaled_event(d, rs, before, size)
        return scaled

    def _scaled_event(self, d: Obj, rs: Obj, before: int, after: int) -> None:
        direction = "up" if after > before else "down"
        self.sim.recorder.record(d, NORMAL, "ScalingReplicaSet",
                                 f"Scaled {direction} replica set {rs['metadata']['name']} from {before} to {after}",
                                 component=COMPONENT)

    async def _cleanup(self, d: Obj, new_rs: Obj | None, olds: list[Obj]) -> None:
        """Delete the oldest empty ReplicaSets beyond revisionHistoryLimit."""
        limit = (d.get("spec") or {}).get("revisionHistoryLimit")
        limit = 10 if limit is None else int(limit)
        empty = [rs for rs in olds if spec_replicas(rs) == 0 and not int((rs.get("status") or {}).get("replicas") or 0)
                 and not is_deleting(rs)]
        surplus = len(empty) - limit
        if surplus <= 0:
            return
        for rs in sorted(empty, key=lambda r: (revision(r), r["metadata"].get("creationTimestamp", "")))[:surplus]:
            await self.sim.delete(self.rs_res, rs)

    # -- status --------------------------------------------------------------------------------

    async def _sync_status(self, d: Obj, new_rs: Obj | None, olds: list[Obj]) -> Result | None:
        _, unavailable = _fenceposts(d)
        everything = [rs for rs in (new_rs, *olds) if rs is not None]
        status = ds.calculate(d, new_rs, everything, unavailable)
        requeue = None
        ds.paused_condition(d, status)
        if not (d.get("spec") or {}).get("paused") and not is_deleting(d):
            requeue = ds.rollout_conditions(d, new_rs, status)

        def update(current: dict[str, Any]) -> bool:
            if current.get("status") == status:
                return False
            current["status"] = status
            return True

        await self.sim.write_status(self.d_res, d, update)
        return Result(requeue_after=requeue) if requeue else None


def _available(rs: Obj) -> int:
    return int((rs.get("status") or {}).get("availableReplicas") or 0)


def _max_replicas(rs: Obj) -> int | None:
    try:
        return int(annotations_of(rs)[MAX])
    except (KeyError, ValueError):
        return None


def _newest(rss: list[Obj]) -> Obj | None:
    return max(rss, key=lambda rs: rs["metadata"].get("creationTimestamp", ""), default=None)
