"""The namespace rule: objects the splitter does not split follow their namespace to one cluster.

kcp's namespace scheduler is the anchor. A Namespace of a logical cluster with SyncTargets is
assigned one usable target (Ready, schedulable, not evicted; a NotReady one keeps it for the grace
period), chosen by a hash of the namespace's name so namespaces spread and the choice is stable; it
moves only when its target is lost. Objects of the workload kinds in it (StatefulSets, Jobs, ReplicaSets of
their own, ..., and ConfigMaps, Secrets, Services that no split workload uses) that carry no assignment of their own
get the namespace's `workloads.kcp.io/cluster`. DaemonSets are not the rule's: they run on every target
(daemonsets.py). With no usable target the Namespace gets the
condition `NamespaceScheduled=False` and its objects stay where they are. A Namespace labelled
`scheduling.kcp.io/disabled` is left alone. Deployments are never labelled by this rule: a
Deployment without the label is a root, split by the splitter.
"""

from __future__ import annotations

import hashlib
from collections.abc import Mapping
from typing import Any

from .dependencies import EVERYWHERE
from .names import (
    ASSIGNMENT_LABEL,
    NAMESPACE_PLACED_ANNOTATION,
    PLACED_ANNOTATION,
    SCHEDULING_DISABLED_LABEL,
    STATE_LABEL_PREFIX,
)

KUBERNETES_SERVICE = ("Service", "default", "kubernetes")  # the API server's: kcp-apiserver makes its own
DEPLOYMENT_REVISION = "deployment.kubernetes.io/revision"  # on a ReplicaSet a Deployment's controller made

# kind -> (api version, plural): what follows its namespace (besides the dependency kinds), and what a namespace
# may hold on a target (DaemonSets: spread, never labelled by the rule)
WORKLOAD_KINDS: dict[str, tuple[str, str]] = {
    "StatefulSet": ("apps/v1", "statefulsets"),
    "DaemonSet": ("apps/v1", "daemonsets"),
    "Job": ("batch/v1", "jobs"),
    "CronJob": ("batch/v1", "cronjobs"),
    "Ingress": ("networking.k8s.io/v1", "ingresses"),
    # a person's own ReplicaSet or ReplicationController (one a Deployment controls or made is never labelled)
    "ReplicaSet": ("apps/v1", "replicasets"),
    "ReplicationController": ("v1", "replicationcontrollers"),
}


def choose(namespace: str, current: str | None, usable: tuple[str, ...]) -> str | None:
    """The namespace's target: its current one while usable, else one picked by the name's hash."""
    if current in usable:
        return current
    if not usable:
        return None
    digest = int(hashlib.sha256(namespace.encode()).hexdigest(), 16)
    return sorted(usable)[digest % len(usable)]


def opted_out(namespace: Mapping[str, Any]) -> bool:
    """Labelled `scheduling.kcp.io/disabled`, or one of the system's own (`kube-system`, `kube-public`, ...)."""
    meta = namespace.get("metadata") or {}
    return SCHEDULING_DISABLED_LABEL in (meta.get("labels") or {}) or str(meta.get("name") or "").startswith("kube-")


def follows_namespace(kind: str, obj: Mapping[str, Any]) -> bool:
    """Is this object the rule's to label (not a person's assignment, not a placed dependency)?"""
    meta = obj.get("metadata") or {}
    labels = meta.get("labels") or {}
    annotations = meta.get("annotations") or {}
    if (kind, meta.get("name")) in EVERYWHERE or meta.get("deletionTimestamp") or meta.get("ownerReferences"):
        return False
    if kind == "DaemonSet":
        return False  # on every target: daemonsets.py
    if (kind, meta.get("namespace"), meta.get("name")) == KUBERNETES_SERVICE:
        return False  # kcp's own, as each cluster has its own
    if obj.get("type") == "kubernetes.io/service-account-token":
        return False
    if kind == "ReplicaSet" and DEPLOYMENT_REVISION in annotations:
        return False  # a Deployment's revision in kcp (orphaned too, `--cascade=orphan`): its pods run under its copies

    if annotations.get(PLACED_ANNOTATION) or any(k.startswith(STATE_LABEL_PREFIX) for k in labels):
        return False  # a dependency of split workloads: placed where they run
    return ASSIGNMENT_LABEL not in labels or NAMESPACE_PLACED_ANNOTATION in annotations


def object_patch(obj: Mapping[str, Any], target: str) -> dict[str, Any] | None:
    labels = (obj.get("metadata") or {}).get("labels") or {}
    if labels.get(ASSIGNMENT_LABEL) == target:
        return None
    return {"metadata": {"labels": {ASSIGNMENT_LABEL: target}, "annotations": {NAMESPACE_PLACED_ANNOTATION: "true"}}}
