"""The ReplicaSet controller: keeps `spec.replicas` pods of the template, and reports on them.

Pods are created with generateName `<replicaset>-` (five random characters follow) and a controller
reference to the ReplicaSet, in kube's slow-start batches (1, 2, 4, ... at once, at most
`BURST_REPLICAS` per sync), so a misconfigured template fails once rather than a thousand times.
Surplus pods go in kube's order: unscheduled before scheduled, pending before running, unready before
ready, newer before older. Status: replicas, fullyLabeledReplicas, readyReplicas, availableReplicas
and observedGeneration.
"""

from __future__ import annotations

import asyncio
import time
from typing import Any

import structlog

from kcp_apiserver.embedding import Resource
from kcp_apiserver.embedding import status as st
from kcp_sim_cluster.controlplane.base import SimController
from kcp_sim_cluster.controlplane.claims import claim, selector_of
from kcp_sim_cluster.controlplane.events import NORMAL, WARNING
from kcp_sim_cluster.controlplane.expectations import Expectations
from kcp_sim_cluster.controlplane.informer import cluster_of, controller_uid, index_value, key_of
from kcp_sim_cluster.controlplane.objects import Obj, copy_obj, is_deleting, labels, owner_reference, set_condition
from kcp_sim_cluster.controlplane.podutil import is_active, is_available, is_ready, node_name, phase
from kcp_sim_cluster.controlplane.runtime import Sim
from kcpcommon.controller import Result
from kcpcommon.keys import ObjectKey

log = structlog.get_logger("sim.replicaset")

COMPONENT = "replicaset-controller"
BURST_REPLICAS = 500
INITIAL_BATCH = 1


def pod_from_template(owner: Obj, template: Obj, *, name: str = "", generate_name: str = "") -> dict[str, Any]:
    """A pod of `template`, controlled by `owner` (kube's GetPodFromTemplate)."""
    meta = template.get("metadata") or {}
    pod_meta: dict[str, Any] = {"namespace": owner["metadata"].get("namespace", ""),
                                "labels": dict(meta.get("labels") or {}),
                                "ownerReferences": [owner_reference(owner)]}
    if meta.get("annotations"):
        pod_meta["annotations"] = dict(meta["annotations"])
    if meta.get("finalizers"):
        pod_meta["finalizers"] = list(meta["finalizers"])
    if name:
        pod_meta["name"] = name
    else:
        pod_meta["generateName"] = generate_name
    return {"apiVersion": "v1", "kind": "Pod", "metadata": pod_meta, "spec": copy_obj(template.get("spec") or {})}


async def slow_start(count: int, create: Any) -> tuple[int, int, BaseException | None]:
    """Call `create()` count times in doubling batches; stop after the first batch with a failure.
    Returns (attempted, succeeded, first error)."""
    attempted, done, batch, error = 0, 0, INITIAL_BATCH, None
    while attempted < count and error is None:
        size = min(batch, count - attempted)
        attempted += size
        results = await asyncio.gather(*(create() for _ in range(size)), return_exceptions=True)
        for result in results:
            if isinstance(result, BaseException):
                if isinstance(result, asyncio.CancelledError):
                    raise result
                error = error or result
            else:
                done += 1
        batch *= 2
    return attempted, done, error


def deletion_rank(pod: Obj) -> tuple[Any, ...]:
    """Lower ranks are deleted first (kube's ActivePodsWithRanks, simplified)."""
    phases = {"Pending": 0, "Unknown": 1, "Running": 2}
    created = pod["metadata"].get("creationTimestamp", "")
    return (1 if node_name(pod) else 0, phases.get(phase(pod), 3), 1 if is_ready(pod) else 0,
            tuple(-ord(c) for c in created))


class ReplicaSetController(SimController):
    name = "sim-replicaset"
    owners = "replicasets"  # the resource whose objects own the pods (replication.py reuses this for RCs)
    component = COMPONENT
    needs = ("replicasets", "pods")
    workers = 4

    def __init__(self, sim: Sim) -> None:
        super().__init__(sim)
        self.rs_res: Resource = sim.resource(self.owners)  # type: ignore[assignment]
        self.pod_res: Resource = sim.resource("pods")  # type: ignore[assignment]
        self.expectations = Expectations()

    def wire(self) -> None:
        self.sim.informer(self.owners).add_index("uid", lambda o: [o["metadata"].get("uid", "")])
        self.sim.informer(self.owners).add_handler(self._on_rs)
        self.sim.informer("pods").add_handler(self._on_pod)

    def _on_rs(self, old: Obj | None, new: Obj | None) -> None:
        if new is None:
            assert old is not None
            self.expectations.forget(key_of(old))
        self.enqueue(new if new is not None else old)

    def _owner(self, pod: Obj) -> ObjectKey | None:
        uid = controller_uid(pod)
        if not uid:
            return None
        owners = self.sim.informer(self.owners).keys_by_index("uid", uid)
        return owners[0] if owners else None

    def _on_pod(self, old: Obj | None, new: Obj | None) -> None:
        if new is not None and not controller_uid(new) and (old is None or labels(old) != labels(new)
                                                            or controller_uid(old)):
            self._wake_selecting(new)  # an orphan its ReplicaSets may adopt
        for pod in (old, new):
            if pod is None:
                continue
            owner = self._owner(pod)
            if owner is None:
                continue
            if old is None:
                self.expectations.created(owner)
            elif new is None:
                self.expectations.deleted(owner, key_of(pod))
            self.enqueue_soon(owner)
            if old is None or new is None:
                break

    def _wake_selecting(self, pod: Obj) -> None:
        namespace = index_value(cluster_of(pod), pod["metadata"].get("namespace", ""))
        for rs in self.sim.informer(self.owners).by_index("namespace", namespace):
            selector = selector_of(rs)
            if selector is not None and selector.matches(labels(pod)):
                self.enqueue(rs)

    async def reconcile(self, key: ObjectKey) -> Result | None:
        rs = self.sim.informer(self.owners).get(key)
        if rs is None:
            return None
        pods_informer = self.sim.informer("pods")
        pods = await claim(self.sim, self.pod_res, rs, pods_informer.by_index("owner", rs["metadata"]["uid"]),
                           pods_informer.by_index("orphan", index_value(key.cluster, key.namespace)))
        active = [p for p in pods if is_active(p)]
        failure = None
        if self.expectations.satisfied(key) and not is_deleting(rs):
            failure = await self._manage(key, rs, active)
            pods = [p for p in self.sim.informer("pods").by_index("owner", rs["metadata"]["uid"])]
            active = [p for p in pods if is_active(p)]
        return await self._status(rs, active, failure)

    async def _manage(self, key: ObjectKey, rs: Obj, active: list[Obj]) -> str | None:
        wanted = int((rs.get("spec") or {}).get("replicas", 1))
        diff = len(active) - wanted
        if diff < 0:
            count = min(-diff, BURST_REPLICAS)
            self.expectations.expect(key, adds=count)
            template = (rs.get("spec") or {}).get("template") or {}
            cluster, namespace = key.cluster, key.namespace
            name = rs["metadata"]["name"]

            async def create() -> None:
                pod = pod_from_template(rs, template, generate_name=f"{name}-")
                try:
                    created = await self.sim.registry.create(self.pod_res, cluster, namespace, pod)
                except BaseException:
                    self.expectations.created(key)  # it will never be seen
                    raise
                self.sim.recorder.record(rs, NORMAL, "SuccessfulCreate", f"Created pod: {created['metadata']['name']}",
                                         component=self.component)

            attempted, _, error = await slow_start(count, create)
            for _ in range(count - attempted):
                self.expectations.created(key)  # the batches never started
            if error is not None:
                message = str(error)
                self.sim.recorder.record(rs, WARNING, "FailedCreate", f"Error creating: {message}",
                                         component=self.component)
                if isinstance(error, st.APIError) and error.code in (403, 422, 409):
                    return message
                raise error
        elif diff > 0:
            victims = sorted(active, key=deletion_rank)[:min(diff, BURST_REPLICAS)]
            self.expectations.expect(key, deletes={key_of(p) for p in victims})

            async def delete(pod: Obj) -> None:
                if await self.sim.delete(self.pod_res, pod):
                    self.sim.recorder.record(rs, NORMAL, "SuccessfulDelete", f"Deleted pod: {pod['metadata']['name']}",
                                             component=self.component)
                else:
                    self.expectations.deleted(key, key_of(pod))

            await asyncio.gather(*(delete(p) for p in victims))
        return None

    async def _status(self, rs: Obj, active: list[Obj], failure: str | None) -> Result | None:
        spec = rs.get("spec") or {}
        min_ready = int(spec.get("minReadySeconds") or 0)
        template_labels = labels(spec.get("template") or {})
        now_ts = time.time()
        ready = sum(1 for p in active if is_ready(p))
        available = sum(1 for p in active if is_available(p, min_ready, now_ts))
        wanted: dict[str, Any] = {
            "replicas": len(active),
            "fullyLabeledReplicas": sum(1 for p in active
                                        if all(labels(p).get(k) == v for k, v in template_labels.items())),
            "readyReplicas": ready, "availableReplicas": available,
            "observedGeneration": rs["metadata"].get("generation", 1),
        }

        def update(current: dict[str, Any]) -> bool:
            status = current.setdefault("status", {})
            before = copy_obj(status)
            for field, value in wanted.items():
                if value or field in ("replicas", "observedGeneration"):
                    status[field] = value
                else:
                    status.pop(field, None)
            if failure:
                set_condition(status, "ReplicaFailure", "True", "FailedCreate", failure)
            elif status.get("conditions"):
                status["conditions"] = [c for c in status["conditions"] if c.get("type") != "ReplicaFailure"]
                if not status["conditions"]:
                    del status["conditions"]
            return status != before

        await self.sim.write_status(self.rs_res, rs, update)
        if min_ready and ready > available:
            return Result(requeue_after=float(min_ready))
        return None


