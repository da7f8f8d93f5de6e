"""kube's storage-object-in-use protection controllers (pvc-protection, pv-protection): a deleted claim keeps
its `kubernetes.io/pvc-protection` finalizer while a pod that is not finished names it, a deleted volume its
`kubernetes.io/pv-protection` while the claim it is bound to exists; then the finalizer goes and the delete completes.
(The admission plugin that adds them is api/protection.py.)"""

from __future__ import annotations

from typing import Any

from kcp_apiserver.embedding import Resource
from kcp_sim_cluster.api.protection import PV_PROTECTION, PVC_PROTECTION
from kcp_sim_cluster.controlplane.base import SimController
from kcp_sim_cluster.controlplane.informer import cluster_of
from kcp_sim_cluster.controlplane.objects import Obj, is_deleting
from kcp_sim_cluster.controlplane.podutil import is_terminal
from kcp_sim_cluster.controlplane.runtime import Sim
from kcpcommon.controller import Result
from kcpcommon.keys import ObjectKey


def claims_of(pod: Obj) -> list[str]:
    """The claims a pod names, as `cluster/namespace/name` (the pods informer's `claim` index)."""
    namespace = pod["metadata"].get("namespace", "")
    return [f"{cluster_of(pod)}/{namespace}/{claim}" for volume in (pod.get("spec") or {}).get("volumes") or []
            if (claim := (volume.get("persistentVolumeClaim") or {}).get("claimName"))]


def finalizers_of(obj: Obj) -> list[str]:
    return list(obj["metadata"].get("finalizers") or [])


class StorageProtectionController(SimController):
    name = "sim-storage-protection"
    needs = ("persistentvolumeclaims", "persistentvolumes", "pods")

    def __init__(self, sim: Sim) -> None:
        super().__init__(sim)
        self.pvc_res: Resource = sim.resource("persistentvolumeclaims")  # type: ignore[assignment]
        self.pv_res: Resource = sim.resource("persistentvolumes")  # type: ignore[assignment]

    def wire(self) -> None:
        self.sim.informer("persistentvolumeclaims").add_handler(self._on_claim)
        self.sim.informer("persistentvolumes").add_handler(lambda old, new: self.enqueue(new))
        pods = self.sim.informer("pods")
        pods.add_index("claim", lambda pod: [] if is_terminal(pod) else claims_of(pod))
        pods.add_handler(self._on_pod)

    def _on_claim(self, old: Obj | None, new: Obj | None) -> None:
        """A claim changed (maybe deleted: check its finalizer); a claim gone frees the volume it was bound to."""
        if new is not None:
            self.enqueue(new)
        elif old is not None and (volume := (old.get("spec") or {}).get("volumeName")):
            self.controller.enqueue(ObjectKey(cluster_of(old), "", volume))

    def _on_pod(self, old: Obj | None, new: Obj | None) -> None:
        """A pod gone or finished may free the claims it named."""
        if old is not None and (new is None or is_terminal(new)):
            for claim in claims_of(old):
                cluster, namespace, name = claim.split("/", 2)
                self.controller.enqueue(ObjectKey(cluster, namespace, name))

    async def reconcile(self, key: ObjectKey) -> Result | None:
        if key.namespace:
            claim = self.sim.informer("persistentvolumeclaims").get(key)
            if claim is not None and self._releasable(claim, PVC_PROTECTION) and not self.sim.informer(
                    "pods").keys_by_index("claim", f"{key.cluster}/{key.namespace}/{key.name}"):
                await self._lift(self.pvc_res, claim, PVC_PROTECTION)
            return None
        volume = self.sim.informer("persistentvolumes").get(key)
        if volume is not None and self._releasable(volume, PV_PROTECTION) and not self._bound(key.cluster, volume):
            await self._lift(self.pv_res, volume, PV_PROTECTION)
        return None

    def _bound(self, cluster: str, volume: Obj) -> bool:
        """Whether the claim the volume's claimRef names still exists (the same one, by uid)."""
        ref = (volume.get("spec") or {}).get("claimRef") or {}
        if not ref.get("name"):
            return False
        claim = self.sim.informer("persistentvolumeclaims").get(
            ObjectKey(cluster, ref.get("namespace") or "", ref["name"]))
        return claim is not None and (not ref.get("uid") or claim["metadata"].get("uid") == ref.get("uid"))

    @staticmethod
    def _releasable(obj: Obj, finalizer: str) -> bool:
        return is_deleting(obj) and finalizer in finalizers_of(obj)

    async def _lift(self, res: Resource, obj: Obj, finalizer: str) -> None:
        def drop(current: dict[str, Any]) -> None:
            current["metadata"]["finalizers"] = [f for f in finalizers_of(current) if f != finalizer]

        await self.sim.patch(res, obj, drop)
