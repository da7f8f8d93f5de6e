"""kube's root-CA publisher: every namespace holds the ConfigMap `kube-root-ca.crt` with the CA that signs
the API server's serving certificate, so a pod can verify `kubernetes.default.svc` (service-account
token volumes project it). Created with the namespace, recreated when deleted and restored when changed,
as kube-controller-manager's root-ca-cert-publisher does.
"""

from __future__ import annotations

from typing import Any

from kcp_apiserver.embedding import Resource
from kcp_sim_cluster.controlplane.base import SimController
from kcp_sim_cluster.controlplane.informer import cluster_of
from kcp_sim_cluster.controlplane.objects import Obj, is_deleting
from kcp_sim_cluster.controlplane.runtime import Sim
from kcpcommon.controller import Result
from kcpcommon.keys import ObjectKey

NAME = "kube-root-ca.crt"
DESCRIPTION_ANNOTATION = "kubernetes.io/description"
DESCRIPTION = ("Contains a CA bundle that can be used to verify the kube-apiserver when using internal endpoints "
               "such as the internal service IP or kubernetes.default.svc. No other usage is guaranteed across "
               "distributions of Kubernetes clusters.")


class RootCAPublisher(SimController):
    """Keys are namespaces: ObjectKey(cluster, "", namespace)."""

    name = "sim-root-ca-cert-publisher"
    needs = ("namespaces", "configmaps")

    def __init__(self, sim: Sim) -> None:
        super().__init__(sim)
        self.cm_res: Resource = sim.resource("configmaps")  # type: ignore[assignment]
        self.data = {"ca.crt": sim.options.root_ca}

    def wire(self) -> None:
        self.sim.informer("namespaces").add_handler(lambda old, new: self.enqueue(new))

        def on_configmap(old: Obj | None, new: Obj | None) -> None:
            obj = new if new is not None else old
            assert obj is not None
            if obj["metadata"]["name"] == NAME:
                self.controller.enqueue(ObjectKey(cluster_of(obj), "", obj["metadata"].get("namespace", "")))

        self.sim.informer("configmaps").add_handler(on_configmap)

    async def reconcile(self, key: ObjectKey) -> Result | None:
        namespace = self.sim.informer("namespaces").get(key)
        if namespace is None or is_deleting(namespace) or not self.sim.options.root_ca:
            return None
        current = self.sim.informer("configmaps").get(ObjectKey(key.cluster, key.name, NAME))
        if current is None:
            await self.sim.create(self.cm_res, key.cluster, key.name, {
                "apiVersion": "v1", "kind": "ConfigMap", "data": dict(self.data),
                "metadata": {"name": NAME, "annotations": {DESCRIPTION_ANNOTATION: DESCRIPTION}}})
            return None
        if current.get("data") == self.data and DESCRIPTION_ANNOTATION in (current["metadata"].get("annotations") or {}):
            return None

        def restore(cm: dict[str, Any]) -> None:
            cm["data"] = dict(self.data)
            cm.pop("binaryData", None)
            cm["metadata"].setdefault("annotations", {})[DESCRIPTION_ANNOTATION] = DESCRIPTION

        await self.sim.patch(self.cm_res, current, restore)
        return None
