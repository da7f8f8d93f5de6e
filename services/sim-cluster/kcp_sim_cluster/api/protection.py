"""kube's StorageObjectInUseProtection admission: a new claim gets `kubernetes.io/pvc-protection` and a new
volume `kubernetes.io/pv-protection`, so that neither is removed while in use; the control plane's storage
protection controller (controlplane/protection.py) lifts them once nothing uses the object."""

from __future__ import annotations

from kcp_apiserver.embedding import CREATE, Attributes

PVC_PROTECTION = "kubernetes.io/pvc-protection"
PV_PROTECTION = "kubernetes.io/pv-protection"
FINALIZERS = {"persistentvolumeclaims": PVC_PROTECTION, "persistentvolumes": PV_PROTECTION}


class StorageProtection:
    async def admit(self, attrs: Attributes) -> None:
        if attrs.operation != CREATE or attrs.subresource or attrs.obj is None or attrs.resource.group:
            return
        finalizer = FINALIZERS.get(attrs.resource.plural)
        if finalizer is None:
            return
        finalizers = attrs.obj.setdefault("metadata", {}).setdefault("finalizers", [])
        if finalizer not in finalizers:
            finalizers.append(finalizer)
