"""A simulated storage provisioner with WaitForFirstConsumer binding (as kind's and k3s's local-path).

A simulated cluster has no disks. A claim stays Pending until a pod that uses it is scheduled, then
becomes Bound with the capacity and access modes it asked for, a volume name `pvc-<uid>` (as dynamic
provisioning names them) and the node it was selected for.
"""

from __future__ import annotations

from typing import Any

from kcp_apiserver.embedding import Resource
from kcp_sim_cluster.controlplane.base import SimController
from kcp_sim_cluster.controlplane.events import NORMAL
from kcp_sim_cluster.controlplane.informer import cluster_of, index_value
from kcp_sim_cluster.controlplane.objects import Obj, is_deleting
from kcp_sim_cluster.controlplane.podutil import node_name
from kcp_sim_cluster.controlplane.runtime import Sim
from kcpcommon.controller import Result
from kcpcommon.keys import ObjectKey

COMPONENT = "persistentvolume-controller"


class VolumeBinder(SimController):
    name = "sim-volumes"
    needs = ("persistentvolumeclaims", "pods")

    def __init__(self, sim: Sim) -> None:
        super().__init__(sim)
        self.pvc_res: Resource = sim.resource("persistentvolumeclaims")  # type: ignore[assignment]

    def wire(self) -> None:
        self.sim.informer("persistentvolumeclaims").add_handler(lambda old, new: self.enqueue(new))
        self.sim.informer("pods").add_handler(self._on_pod)

    def _on_pod(self, old: Obj | None, new: Obj | None) -> None:
        if new is None or not node_name(new) or (old is not None and node_name(old)):
            return  # only a pod's scheduling concerns its claims
        for name in _claims(new):
            self.controller.enqueue(ObjectKey(cluster_of(new), new["metadata"].get("namespace", ""), name))

    def _consumer_node(self, key: ObjectKey) -> str:
        """The node of a scheduled pod that uses the claim ("" while there is none)."""
        for pod in self.sim.informer("pods").by_index("namespace", index_value(key.cluster, key.namespace)):
            if node_name(pod) and key.name in _claims(pod):
                return node_name(pod)
        return ""

    async def reconcile(self, key: ObjectKey) -> Result | None:
        claim = self.sim.informer("persistentvolumeclaims").get(key)
        if claim is None or is_deleting(claim) or (claim.get("status") or {}).get("phase") == "Bound":
            return None
        node = self._consumer_node(key)
        if not node:
            self.sim.recorder.record(claim, NORMAL, "WaitForFirstConsumer",
                                     "waiting for first consumer to be created before binding", component=COMPONENT)
            return None

        def bind(current: dict[str, Any]) -> bool:
            status = current.setdefault("status", {})
            if status.get("phase") == "Bound":
                return False
            spec = current.setdefault("spec", {})
            spec.setdefault("volumeName", f"pvc-{current['metadata']['uid']}")
            notes = current["metadata"].setdefault("annotations", {})
            notes["pv.kubernetes.io/bind-completed"] = "yes"
            notes["pv.kubernetes.io/bound-by-controller"] = "yes"
            notes["volume.kubernetes.io/selected-node"] = node
            storage = ((spec.get("resources") or {}).get("requests") or {}).get("storage")
            status.update({"phase": "Bound", "accessModes": list(spec.get("accessModes") or [])})
            if storage:
                status["capacity"] = {"storage": storage}
            return True

        bound = await self.sim.write_status(self.pvc_res, claim, bind)
        if bound is not None:
            self.sim.recorder.record(bound, NORMAL, "ProvisioningSucceeded",
                                     f"Successfully provisioned volume {bound['spec']['volumeName']}",
                                     component=COMPONENT)
        return None


def _claims(pod: Obj) -> list[str]:
    return [str((v.get("persistentVolumeClaim") or {}).get("claimName"))
            for v in (pod.get("spec") or {}).get("volumes") or [] if v.get("persistentVolumeClaim")]


def claim_name(template: Obj, set_name: str, ordinal: int) -> str:
    """kube's name for a StatefulSet pod's claim: `<template>-<set>-<ordinal>`."""
    return f"{template['metadata']['name']}-{set_name}-{ordinal}"
