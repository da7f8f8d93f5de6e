"""A simulated storage provisioner: every PersistentVolumeClaim is bound at once.

A simulated cluster has no disks, so a claim becomes Bound with the capacity and access modes it
asked for and a volume name `pvc-<uid>` (as dynamic provisioning names them), which is what
workloads and their controllers wait for.
"""

from __future__ import annotations

from typing import Any

from kcp_apiserver.registry.resource import Resource
from kcp_sim_cluster.controlplane.base import SimController
from kcp_sim_cluster.controlplane.events import NORMAL
from kcp_sim_cluster.controlplane.objects import Obj, is_deleting
from kcp_sim_cluster.controlplane.runtime import Sim
from kcpcommon.controller import Result
from kcpcommon.keys import ObjectKey

COMPONENT = "persistentvolume-controller"


class VolumeBinder(SimController):
    name = "sim-volumes"
    needs = ("persistentvolumeclaims",)

    def __init__(self, sim: Sim) -> None:
        super().__init__(sim)
        self.pvc_res: Resource = sim.resource("persistentvolumeclaims")  # type: ignore[assignment]

    def wire(self) -> None:
        self.sim.informer("persistentvolumeclaims").add_handler(lambda old, new: self.enqueue(new))

    async def reconcile(self, key: ObjectKey) -> Result | None:
        claim = self.sim.informer("persistentvolumeclaims").get(key)
        if claim is None or is_deleting(claim) or (claim.get("status") or {}).get("phase") == "Bound":
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


def claim_name(template: Obj, set_name: str, ordinal: int) -> str:
    """kube's name for a StatefulSet pod's claim: `<template>-<set>-<ordinal>`."""
    return f"{template['metadata']['name']}-{set_name}-{ordinal}"
