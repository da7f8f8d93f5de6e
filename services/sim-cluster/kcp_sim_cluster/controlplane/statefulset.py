"""The StatefulSet controller: pods `<name>-0` .. `<name>-N-1` with stable names, in order.

OrderedReady (kube's default) creates ordinal i only once 0..i-1 are Running and Ready, and removes
surplus pods from the highest ordinal down, one at a time; Parallel does both at once. A rolling
update replaces pods whose revision is not the current template's, from the highest ordinal down to
the partition, one at a time, each once the others are Ready. Status carries kube's revisions
(`<name>-<hash>`), which `kubectl rollout status` compares.
"""

from __future__ import annotations

import time
from typing import Any

from kcp_apiserver.embedding import Resource
from kcp_sim_cluster.controlplane.base import SimController
from kcp_sim_cluster.controlplane.events import NORMAL
from kcp_sim_cluster.controlplane.hashing import pod_template_hash
from kcp_sim_cluster.controlplane.history import sync_history
from kcp_sim_cluster.controlplane.objects import Obj, copy_obj, is_deleting, labels, owner_reference
from kcp_sim_cluster.controlplane.podutil import is_available, is_ready, is_terminal, phase
from kcp_sim_cluster.controlplane.replicaset import pod_from_template
from kcp_sim_cluster.controlplane.runtime import Sim
from kcp_sim_cluster.controlplane.volumes import claim_name
from kcpcommon.controller import Result
from kcpcommon.keys import ObjectKey

COMPONENT = "statefulset-controller"
REVISION_LABEL = "controller-revision-hash"
POD_NAME_LABEL = "statefulset.kubernetes.io/pod-name"
POD_INDEX_LABEL = "apps.kubernetes.io/pod-index"


def _ordinal(sts_name: str, pod: Obj) -> int | None:
    suffix = pod["metadata"]["name"].removeprefix(f"{sts_name}-")
    return int(suffix) if suffix.isdigit() and pod["metadata"]["name"] != suffix else None


class StatefulSetController(SimController):
    name = "sim-statefulset"
    needs = ("statefulsets", "pods")
    optional = ("controllerrevisions",)
    workers = 2

    def __init__(self, sim: Sim) -> None:
        super().__init__(sim)
        self.sts_res: Resource = sim.resource("statefulsets")  # type: ignore[assignment]
        self.pod_res: Resource = sim.resource("pods")  # type: ignore[assignment]
        self.revision_res = sim.resource("controllerrevisions") if "controllerrevisions" in sim.informers else None
        self.pvc_res = sim.resource("persistentvolumeclaims")

    def wire(self) -> None:
        self.watch_owned("statefulsets", "pods")

    async def reconcile(self, key: ObjectKey) -> Result | None:
        sts = self.sim.informer("statefulsets").get(key)
        if sts is None:
            return None
        spec = sts.get("spec") or {}
        name = key.name
        template = spec.get("template") or {}
        hash_ = pod_template_hash(template)
        revision = f"{name}-{hash_}"
        pods: dict[int, Obj] = {}
        for pod in self.sim.informer("pods").by_index("owner", sts["metadata"]["uid"]):
            ordinal = _ordinal(name, pod)
            if ordinal is not None:
                pods[ordinal] = pod
        replicas = int(spec.get("replicas", 1))
        ordered = spec.get("podManagementPolicy", "OrderedReady") != "Parallel"
        if not is_deleting(sts):
            if self.revision_res is not None:
                in_use = {labels(p).get(REVISION_LABEL, "") for p in pods.values()}
                in_use.add(str((sts.get("status") or {}).get("currentRevision") or ""))
                await sync_history(self.sim, self.revision_res, sts, template, hash_, in_use)
            await self._manage(sts, key, revision, pods, replicas, ordered)
        return await self._status(sts, revision, pods, replicas)

    async def _manage(self, sts: Obj, key: ObjectKey, revision: str, pods: dict[int, Obj], replicas: int,
                      ordered: bool) -> None:
        spec = sts.get("spec") or {}
        for i in range(replicas):
            pod = pods.get(i)
            if pod is None:
                await self._create(sts, key, revision, i)
                if ordered:
                    return
                continue
            if is_terminal(pod) and not is_deleting(pod):
                await self.sim.delete(self.pod_res, pod)  # recreated on the next pass
                if ordered:
                    return
            elif ordered and (is_deleting(pod) or phase(pod) != "Running" or not is_ready(pod)):
                return  # wait for it before touching the next ordinal
        surplus = sorted((i for i in pods if i >= replicas), reverse=True)
        for i in surplus:
            if not is_deleting(pods[i]):
                await self.sim.delete(self.pod_res, pods[i])
                self.sim.recorder.record(sts, NORMAL, "SuccessfulDelete",
                                         f"delete Pod {pods[i]['metadata']['name']} in StatefulSet {key.name} successful",
                                         component=COMPONENT)
            if ordered:
                return
        strategy = spec.get("updateStrategy") or {}
        if strategy.get("type", "RollingUpdate") != "RollingUpdate":
            return
        partition = int((strategy.get("rollingUpdate") or {}).get("partition") or 0)
        if any(is_deleting(p) or not is_ready(p) for i, p in pods.items() if i < replicas):
            return  # one at a time, each once the others are Ready
        for i in range(replicas - 1, partition - 1, -1):
            pod = pods.get(i)
            if pod is not None and labels(pod).get(REVISION_LABEL) != revision:
                await self.sim.delete(self.pod_res, pod)
                return

    async def _create(self, sts: Obj, key: ObjectKey, revision: str, ordinal: int) -> None:
        spec = sts.get("spec") or {}
        name = f"{key.name}-{ordinal}"
        pod = pod_from_template(sts, spec.get("template") or {}, name=name)
        pod["metadata"]["labels"].update({REVISION_LABEL: revision, POD_NAME_LABEL: name,
                                          POD_INDEX_LABEL: str(ordinal)})
        pod["spec"]["hostname"] = name
        if spec.get("serviceName"):
            pod["spec"]["subdomain"] = spec["serviceName"]
        await self._claims(sts, key, ordinal, pod)
        if await self.sim.create(self.pod_res, key.cluster, key.namespace, pod) is not None:
            self.sim.recorder.record(sts, NORMAL, "SuccessfulCreate",
                                     f"create Pod {name} in StatefulSet {key.name} successful", component=COMPONENT)

    async def _claims(self, sts: Obj, key: ObjectKey, ordinal: int, pod: dict[str, Any]) -> None:
        """The pod's PersistentVolumeClaims from volumeClaimTemplates, created if missing, mounted by name."""
        templates = (sts.get("spec") or {}).get("volumeClaimTemplates") or []
        if not templates or self.pvc_res is None:
            return
        selector = ((sts.get("spec") or {}).get("selector") or {}).get("matchLabels") or {}
        retention = (sts.get("spec") or {}).get("persistentVolumeClaimRetentionPolicy") or {}
        volumes = [v for v in pod["spec"].get("volumes") or []]
        for template in templates:
            name = claim_name(template, key.name, ordinal)
            template_meta = template.get("metadata") or {}
            # kube's claim is a copy of the template (its annotations too), with the selector's labels added
            claim: dict[str, Any] = {"apiVersion": "v1", "kind": "PersistentVolumeClaim",
                                     "metadata": {"name": name, "namespace": key.namespace,
                                                  "labels": {**template_meta.get("labels", {}), **selector}},
                                     "spec": copy_obj(template.get("spec") or {})}
            if template_meta.get("annotations"):
                claim["metadata"]["annotations"] = dict(template_meta["annotations"])
            if retention.get("whenDeleted") == "Delete":
                claim["metadata"]["ownerReferences"] = [{**owner_reference(sts), "controller": True}]
            await self.sim.create(self.pvc_res, key.cluster, key.namespace, claim)  # None: it exists, kept
            volumes = [v for v in volumes if v.get("name") != template["metadata"]["name"]]
            volumes.append({"name": template["metadata"]["name"], "persistentVolumeClaim": {"claimName": name}})
        pod["spec"]["volumes"] = volumes

    async def _status(self, sts: Obj, revision: str, pods: dict[int, Obj], replicas: int) -> Result | None:
        spec = sts.get("spec") or {}
        min_ready = int(spec.get("minReadySeconds") or 0)
        now_ts = time.time()
        live = [p for p in pods.values() if not is_terminal(p)]
        old = sts.get("status") or {}
        updated = sum(1 for p in live if labels(p).get(REVISION_LABEL) == revision)
        current_revision = old.get("currentRevision") or revision
        if updated == replicas and len(live) == replicas and all(is_ready(p) for p in live):
            current_revision = revision
        status: dict[str, Any] = {
            "observedGeneration": sts["metadata"].get("generation", 1), "replicas": len(live),
            "readyReplicas": sum(1 for p in live if is_ready(p)),
            "availableReplicas": sum(1 for p in live if is_available(p, min_ready, now_ts)),
            "currentReplicas": sum(1 for p in live if labels(p).get(REVISION_LABEL) == current_revision),
            "updatedReplicas": updated, "currentRevision": current_revision, "updateRevision": revision,
            "collisionCount": int(old.get("collisionCount") or 0),
        }
        status = {k: v for k, v in status.items() if v or k in ("replicas", "observedGeneration", "collisionCount",
                                                                "availableReplicas")}

        def update(current: dict[str, Any]) -> bool:
            if current.get("status") == status:
                return False
            current["status"] = copy_obj(status)
            return True

        await self.sim.write_status(self.sts_res, sts, update)
        return None
