"""The cluster-scoped classes applications ship and workloads name: storage.k8s.io/v1 StorageClasses,
networking.k8s.io/v1 IngressClasses and node.k8s.io/v1 RuntimeClasses (PriorityClasses are priority.py's).

A simulated cluster provisions no volumes, runs no ingress controller and no runtime handlers, so these are
plain storage with kube's defaults and columns: enough for a manifest that ships one to apply and delete, and
for kcp's syncer to place a tenant's class where the workloads that name it run.
"""

from __future__ import annotations

from typing import Any

from kcp_apiserver.embedding import AGE, NAME, Column, Obj, Resource, Strategy, kube_resource


def _str(value: Any, default: str = "") -> str:
    return str(value) if value is not None else default


class StorageClassStrategy(Strategy):
    """kube's defaults of a StorageClass (pkg/apis/storage/v1/defaults.go)."""

    def prepare_for_create(self, obj: Obj) -> None:
        obj.setdefault("reclaimPolicy", "Delete")
        obj.setdefault("volumeBindingMode", "Immediate")

    def prepare_for_update(self, obj: Obj, old: Obj) -> None:
        self.prepare_for_create(obj)


STORAGE_CLASS_COLUMNS = (
    NAME,
    Column("Provisioner", "string", lambda o: _str(o.get("provisioner")), "Provisioner indicates the type of the "
           "provisioner."),
    Column("ReclaimPolicy", "string", lambda o: _str(o.get("reclaimPolicy"), "Delete"), "Dynamically provisioned "
           "PersistentVolumes of this storage class are created with this reclaimPolicy."),
    Column("VolumeBindingMode", "string", lambda o: _str(o.get("volumeBindingMode"), "Immediate"),
           "VolumeBindingMode indicates how PersistentVolumeClaims should be provisioned and bound."),
    Column("AllowVolumeExpansion", "string", lambda o: str(bool(o.get("allowVolumeExpansion"))).lower(),
           "AllowVolumeExpansion shows whether the storage class allows volume expand."),
    AGE,
)
INGRESS_CLASS_COLUMNS = (
    NAME,
    Column("Controller", "string", lambda o: _str((o.get("spec") or {}).get("controller")), "Controller that is "
           "in charge of handling this class."),
    Column("Parameters", "string", lambda o: _parameters((o.get("spec") or {}).get("parameters")),
           "A reference to a resource with additional parameters."),
    AGE,
)
RUNTIME_CLASS_COLUMNS = (
    NAME,
    Column("Handler", "string", lambda o: _str(o.get("handler")), "Handler specifies the underlying runtime and "
           "configuration that the CRI implementation will use to handle pods of this class."),
    AGE,
)


def _parameters(ref: Any) -> str:
    """kube's `<kind>.<group>/<name>` of an IngressClass's parameters, `<none>` without."""
    if not isinstance(ref, dict) or not ref.get("name"):
        return "<none>"
    group = f".{ref['apiGroup']}" if ref.get("apiGroup") else ""
    return f"{ref.get('kind', '')}{group}/{ref['name']}"


def resources(release: str) -> tuple[Resource, ...]:
    return (
        kube_resource("storage.k8s.io", "v1", "StorageClass", "storageclasses", namespaced=False, release=release,
                      short_names=("sc",), columns=STORAGE_CLASS_COLUMNS, strategy=StorageClassStrategy()),
        kube_resource("networking.k8s.io", "v1", "IngressClass", "ingressclasses", namespaced=False,
                      release=release, columns=INGRESS_CLASS_COLUMNS),
        kube_resource("node.k8s.io", "v1", "RuntimeClass", "runtimeclasses", namespaced=False, release=release,
                      columns=RUNTIME_CLASS_COLUMNS),
    )
