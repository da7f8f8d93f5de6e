"""The cluster-scoped classes workloads name (StorageClass, PriorityClass, RuntimeClass, IngressClass).

A class a tenant ships must exist on every physical cluster that runs something naming it: a claim's or a
volumeClaimTemplate's `storageClassName`, a pod template's `priorityClassName`/`runtimeClassName`, an
Ingress's `ingressClassName`. Its users are the placed objects (assignment or state label) that name it;
the syncer gives it a per-tenant name downstream and rewrites those fields (kcpsyncer/classes.py).
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from typing import Any

from kcpcommon.keys import key_for

from .names import ASSIGNMENT_LABEL, STATE_LABEL_PREFIX, STATE_SYNC

# kind -> (api version, plural) of the classes placed
CLASS_KINDS: dict[str, tuple[str, str]] = {
    "StorageClass": ("storage.k8s.io/v1", "storageclasses"),
    "PriorityClass": ("scheduling.k8s.io/v1", "priorityclasses"),
    "RuntimeClass": ("node.k8s.io/v1", "runtimeclasses"),
    "IngressClass": ("networking.k8s.io/v1", "ingressclasses"),
}
# kind -> (api version, plural) of the objects that name classes
REFERRER_KINDS: dict[str, tuple[str, str]] = {
    "Deployment": ("apps/v1", "deployments"),
    "StatefulSet": ("apps/v1", "statefulsets"),
    "DaemonSet": ("apps/v1", "daemonsets"),
    "Job": ("batch/v1", "jobs"),
    "CronJob": ("batch/v1", "cronjobs"),
    "PersistentVolumeClaim": ("v1", "persistentvolumeclaims"),
    "Ingress": ("networking.k8s.io/v1", "ingresses"),
}
POD_SPECS: dict[str, tuple[str, ...]] = {
    "Deployment": ("spec", "template", "spec"), "StatefulSet": ("spec", "template", "spec"),
    "DaemonSet": ("spec", "template", "spec"), "Job": ("spec", "template", "spec"),
    "CronJob": ("spec", "jobTemplate", "spec", "template", "spec")}
CLASSES_INDEX = "splitter-classes"  # placed objects by the classes they name


def _at(obj: Any, *path: str) -> Any:
    for part in path:
        obj = obj.get(part) if isinstance(obj, Mapping) else None
    return obj


def class_references(kind: str, obj: Mapping[str, Any]) -> set[tuple[str, str]]:
    """(class kind, name) of every class `obj` (of `kind`) names."""
    found: list[tuple[str, Any]] = []
    if kind in POD_SPECS:
        pod_spec = _at(obj, *POD_SPECS[kind])
        found += [("PriorityClass", _at(pod_spec, "priorityClassName")),
                  ("RuntimeClass", _at(pod_spec, "runtimeClassName"))]
    if kind == "StatefulSet":
        found += [("StorageClass", _at(t, "spec", "storageClassName"))
                  for t in _at(obj, "spec", "volumeClaimTemplates") or ()]
    if kind == "PersistentVolumeClaim":
        found.append(("StorageClass", _at(obj, "spec", "storageClassName")))
    if kind == "Ingress":
        found.append(("IngressClass", _at(obj, "spec", "ingressClassName")))
    return {(k, name) for k, name in found if isinstance(name, str) and name}


def placed_on(obj: Mapping[str, Any]) -> set[str]:
    """The targets an object is assigned to, by the single label or by state labels."""
    labels = _at(obj, "metadata", "labels") or {}
    targets = {k.removeprefix(STATE_LABEL_PREFIX) for k, v in labels.items()
               if k.startswith(STATE_LABEL_PREFIX) and v == STATE_SYNC}
    if labels.get(ASSIGNMENT_LABEL):
        targets.add(labels[ASSIGNMENT_LABEL])
    return targets


def class_use(cluster: str, kind: str, name: str) -> str:
    return f"{cluster}|{kind}|{name}"


def classes_index(kind: str) -> Callable[[Mapping[str, Any]], list[str]]:
    """The index of a referrer kind: a placed object's classes (a Deployment's only while it has replicas)."""
    def index(obj: Mapping[str, Any]) -> list[str]:
        if not placed_on(obj) or _at(obj, "metadata", "deletionTimestamp"):
            return []
        if kind == "Deployment" and int(_at(obj, "spec", "replicas") if _at(obj, "spec", "replicas") is not None
                                        else 1) <= 0:
            return []
        cluster = key_for(obj).cluster
        return [class_use(cluster, k, name) for k, name in sorted(class_references(kind, obj))]
    return index
