"""The claim side of kube's PersistentVolume controller, and a simulated provisioner.

A claim binds to a PersistentVolume that fits it (`volumematch`): the volume's `claimRef` names the
claim, the claim's `volumeName` the volume, both are Bound and the claim shows the volume's capacity and
access modes. A claim no volume fits is provisioned, as kube's external provisioners do: a volume
`pvc-<claim uid>` made for it (the class's provisioner and reclaim policy, a host path on the node the
claim's first consumer was scheduled to) and bound to it. A claim of a class that binds Immediate is
provisioned at once; WaitForFirstConsumer waits for a scheduled pod that uses it. A claim of no class
that no volume fits is provisioned on its first consumer too: the simulated cluster's stand-in for the
default class kind and k3s install. A class that does not exist provisions nothing (ProvisioningFailed).
"""

from __future__ import annotations

from typing import Any

from kcp_apiserver.embedding import Resource
from kcp_sim_cluster.controlplane.base import SimController
from kcp_sim_cluster.controlplane.events import NORMAL, WARNING
from kcp_sim_cluster.controlplane.informer import cluster_of, index_value
from kcp_sim_cluster.controlplane.objects import Obj, is_deleting
from kcp_sim_cluster.controlplane.podutil import node_name
from kcp_sim_cluster.controlplane.runtime import Sim
from kcp_sim_cluster.controlplane.volumematch import BOUND, best_volume, reserved_for, storage_class
from kcpcommon.controller import Result
from kcpcommon.keys import ObjectKey

COMPONENT = "persistentvolume-controller"
SIM_PROVISIONER = "sim.kcp.io/hostpath"  # provisions claims of no class
HOST_PATH_ROOT = "/var/lib/kcp-sim/volumes"
BOUND_BY_CONTROLLER = "pv.kubernetes.io/bound-by-controller"


class VolumeBinder(SimController):
    name = "sim-volumes"
    needs = ("persistentvolumeclaims", "pods", "persistentvolumes")
    optional = ("storageclasses",)

    def __init__(self, sim: Sim) -> None:
        super().__init__(sim)
        self.pvc_res: Resource = sim.resource("persistentvolumeclaims")  # type: ignore[assignment]
        self.pv_res: Resource = sim.resource("persistentvolumes")  # type: ignore[assignment]

    def wire(self) -> None:
        self.sim.informer("persistentvolumeclaims").add_handler(lambda old, new: self.enqueue(new))
        self.sim.informer("pods").add_handler(self._on_pod)
        self.sim.informer("persistentvolumes").add_handler(self._on_volume)

    def _on_pod(self, old: Obj | None, new: Obj | None) -> None:
        if new is None or not node_name(new) or (old is not None and node_name(old)):
            return  # only a pod's scheduling concerns its claims
        for name in _claims(new):
            self.controller.enqueue(ObjectKey(cluster_of(new), new["metadata"].get("namespace", ""), name))

    def _on_volume(self, old: Obj | None, new: Obj | None) -> None:
        """A volume made for a claim finishes its binding; one made or freed may fit any waiting claim."""
        if new is None:
            return
        ref = (new.get("spec") or {}).get("claimRef") or {}
        if ref.get("uid"):
            self.controller.enqueue(ObjectKey(cluster_of(new), ref.get("namespace") or "", ref.get("name") or ""))
            return
        for claim in self.sim.informer("persistentvolumeclaims").in_cluster(cluster_of(new)):
            if not (claim.get("spec") or {}).get("volumeName"):
                self.enqueue(claim)

    def _consumer_node(self, key: ObjectKey) -> str:
        """The node of a scheduled pod that uses the claim ("" while there is none)."""
        for pod in self.sim.informer("pods").by_index("namespace", index_value(key.cluster, key.namespace)):
            if node_name(pod) and key.name in _claims(pod):
                return node_name(pod)
        return ""

    async def reconcile(self, key: ObjectKey) -> Result | None:
        claim = self.sim.informer("persistentvolumeclaims").get(key)
        if claim is None or is_deleting(claim):
            return None
        volumes = self.sim.informer("persistentvolumes")
        named = (claim.get("spec") or {}).get("volumeName")
        if named:  # bound, or bound by its author to one volume: that volume or none
            pv = volumes.get(ObjectKey(key.cluster, "", named))
            if pv is not None and (reserved_for(pv, claim) or not (pv.get("spec") or {}).get("claimRef")):
                await self._bind(claim, pv)
            return None
        pv = best_volume(claim, volumes.in_cluster(key.cluster))
        if pv is None:
            pv = await self._provision(key, claim)
        if pv is not None:
            await self._bind(claim, pv)
        return None

    async def _provision(self, key: ObjectKey, claim: Obj) -> Obj | None:
        """A volume made for the claim, as its class's provisioner would; None while it must wait."""
        name = storage_class(claim)
        provisioner, policy, immediate = SIM_PROVISIONER, "Delete", False
        if name:
            classes = self.sim.informers.get("storageclasses")
            found = classes.get(ObjectKey(key.cluster, "", name)) if classes is not None else None
            if found is None:
                self.sim.recorder.record(claim, WARNING, "ProvisioningFailed",
                                         f'storageclass.storage.k8s.io "{name}" not found', component=COMPONENT)
                return None
            provisioner = str(found.get("provisioner") or SIM_PROVISIONER)
            policy = str(found.get("reclaimPolicy") or "Delete")
            immediate = (found.get("volumeBindingMode") or "Immediate") == "Immediate"
        node = "" if immediate else self._consumer_node(key)
        if not immediate and not node:
            self.sim.recorder.record(claim, NORMAL, "WaitForFirstConsumer",
                                     "waiting for first consumer to be created before binding", component=COMPONENT)
            return None
        pv = provisioned_volume(claim, provisioner=provisioner, reclaim_policy=policy, node=node)
        made = await self.sim.create(self.pv_res, key.cluster, "", pv)
        if made is None:  # made before (the informer is behind): bind to it when it arrives
            return self.sim.informer("persistentvolumes").get(ObjectKey(key.cluster, "", pv["metadata"]["name"]))
        self.sim.recorder.record(claim, NORMAL, "ProvisioningSucceeded",
                                 f"Successfully provisioned volume {pv['metadata']['name']}", component=COMPONENT)
        return made

    async def _bind(self, claim: Obj, pv: Obj) -> None:
        """The volume's claimRef, then the claim's volumeName and Bound status (the volume's phase is the
        volume controller's to set)."""
        meta = claim["metadata"]
        ref = (pv.get("spec") or {}).get("claimRef") or {}
        if ref.get("uid") != meta.get("uid"):
            def reserve(current: dict[str, Any]) -> None:
                if current["spec"].get("claimRef") and not reserved_for(current, claim):
                    raise VolumeTaken(f"volume {current['metadata']['name']} was bound to another claim")
                current["spec"]["claimRef"] = {"kind": "PersistentVolumeClaim", "namespace": meta.get("namespace"),
                                               "name": meta["name"], "uid": meta["uid"], "apiVersion": "v1",
                                               "resourceVersion": meta.get("resourceVersion", "")}
                if not ref:
                    current["metadata"].setdefault("annotations", {})[BOUND_BY_CONTROLLER] = "yes"

            if await self.sim.patch(self.pv_res, pv, reserve) is None:
                return
        spec = pv.get("spec") or {}
        node = _affinity_node(pv)
        by_controller = not (claim.get("spec") or {}).get("volumeName")
        provisioner = ((pv.get("metadata") or {}).get("annotations") or {}).get("pv.kubernetes.io/provisioned-by")

        def bind(current: dict[str, Any]) -> bool:
            status = current.setdefault("status", {})
            if status.get("phase") == BOUND and current["spec"].get("volumeName") == pv["metadata"]["name"]:
                return False
            current["spec"]["volumeName"] = pv["metadata"]["name"]
            notes = current["metadata"].setdefault("annotations", {})
            notes["pv.kubernetes.io/bind-completed"] = "yes"
            if by_controller:
                notes[BOUND_BY_CONTROLLER] = "yes"
            if provisioner:
                notes["volume.kubernetes.io/storage-provisioner"] = provisioner
            if node:
                notes["volume.kubernetes.io/selected-node"] = node
            status.update({"phase": BOUND, "accessModes": list(spec.get("accessModes") or []),
                           "capacity": dict(spec.get("capacity") or {})})
            return True

        await self.sim.write_status(self.pvc_res, claim, bind)


class VolumeTaken(Exception):
    """The volume chosen from a stale cache went to another claim meanwhile: the claim is retried."""


def provisioned_volume(claim: Obj, *, provisioner: str, reclaim_policy: str, node: str) -> dict[str, Any]:
    """The volume a host-path provisioner (kind's and k3s's local-path) makes for a claim."""
    meta, spec = claim["metadata"], claim.get("spec") or {}
    name = f"pvc-{meta['uid']}"
    storage = ((spec.get("resources") or {}).get("requests") or {}).get("storage")
    pv: dict[str, Any] = {
        "apiVersion": "v1", "kind": "PersistentVolume",
        "metadata": {"name": name, "annotations": {"pv.kubernetes.io/provisioned-by": provisioner}},
        "spec": {"capacity": {"storage": storage}, "accessModes": list(spec.get("accessModes") or []),
                 "persistentVolumeReclaimPolicy": reclaim_policy, "volumeMode": spec.get("volumeMode") or "Filesystem",
                 "claimRef": {"kind": "PersistentVolumeClaim", "namespace": meta.get("namespace"),
                              "name": meta["name"], "uid": meta["uid"], "apiVersion": "v1",
                              "resourceVersion": meta.get("resourceVersion", "")},
                 "hostPath": {"path": f"{HOST_PATH_ROOT}/{name}", "type": "DirectoryOrCreate"}},
    }
    if storage_class(claim):
        pv["spec"]["storageClassName"] = storage_class(claim)
    if node:
        pv["spec"]["nodeAffinity"] = {"required": {"nodeSelectorTerms": [{"matchExpressions": [
            {"key": "kubernetes.io/hostname", "operator": "In", "values": [node]}]}]}}
    return pv


def _affinity_node(pv: Obj) -> str:
    terms = ((((pv.get("spec") or {}).get("nodeAffinity") or {}).get("required") or {})
             .get("nodeSelectorTerms") or [])
    for term in terms:
        for expression in term.get("matchExpressions") or []:
            if expression.get("key") == "kubernetes.io/hostname" and expression.get("values"):
                return str(expression["values"][0])
    return ""


def _claims(pod: Obj) -> list[str]:
    return [str((v.get("persistentVolumeClaim") or {}).get("claimName"))
            for v in (pod.get("spec") or {}).get("volumes") or [] if v.get("persistentVolumeClaim")]


def claim_name(template: Obj, set_name: str, ordinal: int) -> str:
    """kube's name for a StatefulSet pod's claim: `<template>-<set>-<ordinal>`."""
    return f"{template['metadata']['name']}-{set_name}-{ordinal}"
