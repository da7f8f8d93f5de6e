"""The volume side of kube's PersistentVolume controller: each volume's phase, and what a released
volume becomes.

A volume is Available while free, Bound while the claim its `claimRef` names is bound to it, Released
once that claim is gone. A released volume that a provisioner made with the Delete reclaim policy is
deleted, as the provisioner deletes the volume behind it; one kept (Retain, or made by hand) stays
Released until its author frees it.
"""

from __future__ import annotations

from typing import Any

from kcp_apiserver.embedding import Resource
from kcp_sim_cluster.controlplane.base import SimController
from kcp_sim_cluster.controlplane.informer import cluster_of
from kcp_sim_cluster.controlplane.objects import Obj, annotations_of, is_deleting, now
from kcp_sim_cluster.controlplane.runtime import Sim
from kcp_sim_cluster.controlplane.volumematch import RELEASED, volume_phase
from kcpcommon.controller import Result
from kcpcommon.keys import ObjectKey


class VolumeController(SimController):
    name = "sim-persistentvolumes"
    needs = ("persistentvolumes", "persistentvolumeclaims")

    def __init__(self, sim: Sim) -> None:
        super().__init__(sim)
        self.pv_res: Resource = sim.resource("persistentvolumes")  # type: ignore[assignment]

    def wire(self) -> None:
        self.sim.informer("persistentvolumes").add_handler(lambda old, new: self.enqueue(new))
        self.sim.informer("persistentvolumeclaims").add_handler(self._on_claim)

    def _on_claim(self, old: Obj | None, new: Obj | None) -> None:
        """A claim bound, or gone, changes the phase of the volume it names."""
        claim = new if new is not None else old
        assert claim is not None
        name = (claim.get("spec") or {}).get("volumeName")
        if name:
            self.controller.enqueue(ObjectKey(cluster_of(claim), "", name))

    async def reconcile(self, key: ObjectKey) -> Result | None:
        pv = self.sim.informer("persistentvolumes").get(key)
        if pv is None or is_deleting(pv):
            return None
        ref = (pv.get("spec") or {}).get("claimRef") or {}
        claim = self.sim.informer("persistentvolumeclaims").get(
            ObjectKey(key.cluster, ref.get("namespace") or "", ref.get("name") or "")) if ref else None
        phase = volume_phase(pv, claim)
        if phase == RELEASED and _deleted_when_released(pv):
            await self.sim.delete(self.pv_res, pv)
            return None
        if (pv.get("status") or {}).get("phase") == phase:
            return None

        def set_phase(current: dict[str, Any]) -> bool:
            status = current.setdefault("status", {})
            if status.get("phase") == phase:
                return False
            status["phase"] = phase
            status["lastPhaseTransitionTime"] = now().strftime("%Y-%m-%dT%H:%M:%SZ")
            return True

        await self.sim.write_status(self.pv_res, pv, set_phase)
        return None


def _deleted_when_released(pv: Obj) -> bool:
    return ((pv.get("spec") or {}).get("persistentVolumeReclaimPolicy") == "Delete"
            and "pv.kubernetes.io/provisioned-by" in annotations_of(pv))
