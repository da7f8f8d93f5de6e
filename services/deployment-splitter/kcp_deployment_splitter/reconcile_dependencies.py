"""Place what workloads depend on: per namespace, every dependency on the union of its users' clusters.

A user is a child or a pinned Deployment with replicas, running on the target its assignment label
names. An object's clusters are the union over all its users, so when one workload leaves a cluster
its ConfigMap stays there as long as another workload there still uses it, and goes when none does.
The splitter marks only what it placed (`splitter.kcp.io/placed-on`); objects a person assigned with
the single assignment label are theirs and left alone.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

import structlog

from kcpcommon.clients import ClientFactory
from kcpcommon.controller import Result
from kcpcommon.informer import SharedInformer
from kcpcommon.keys import ObjectKey
from kcpcommon.store import CLUSTER_NAMESPACE_INDEX, Indexer, cluster_namespace_value

from .dependencies import KINDS, references, selects
from .names import (
    ASSIGNMENT_LABEL,
    COMPONENT,
    NAMESPACE_PLACED_ANNOTATION,
    PLACED_ANNOTATION,
    STATE_LABEL_PREFIX,
    STATE_SYNC,
    state_label,
)

log = structlog.get_logger(COMPONENT)


def users_by_target(deployments: list[Mapping[str, Any]],
                    services: list[Mapping[str, Any]]) -> dict[tuple[str, str], set[str]]:
    """(kind, name) -> the targets where a running workload uses it."""
    wanted: dict[tuple[str, str], set[str]] = {}
    for deployment in deployments:
        target = ((deployment.get("metadata") or {}).get("labels") or {}).get(ASSIGNMENT_LABEL)
        spec = deployment.get("spec") or {}
        if not target or int(spec.get("replicas", 1) or 0) <= 0:
            continue
        template = spec.get("template") or {}
        for ref in references(template):
            wanted.setdefault(ref, set()).add(target)
        for service in services:
            if selects(service, template):
                wanted.setdefault(("Service", service["metadata"]["name"]), set()).add(target)
    return wanted


def label_patch(obj: Mapping[str, Any], targets: set[str]) -> dict[str, Any] | None:
    """The merge patch that makes `obj` placed exactly on `targets` (None: it already is)."""
    meta = obj.get("metadata") or {}
    labels = meta.get("labels") or {}
    placed = {t for t in ((meta.get("annotations") or {}).get(PLACED_ANNOTATION) or "").split(",") if t}
    changes: dict[str, Any] = {state_label(t): STATE_SYNC for t in targets if labels.get(state_label(t)) != STATE_SYNC}
    changes.update({state_label(t): None for t in placed - targets if state_label(t) in labels})
    annotations: dict[str, Any] = {PLACED_ANNOTATION: ",".join(sorted(targets)) or None}
    if targets and NAMESPACE_PLACED_ANNOTATION in (meta.get("annotations") or {}):
        # it followed its namespace until a split workload started using it: now it follows them
        changes[ASSIGNMENT_LABEL] = None
        annotations[NAMESPACE_PLACED_ANNOTATION] = None
    if not changes and placed == targets:
        return None
    return {"metadata": {"labels": changes, "annotations": annotations}}


class DependencyPlacer:
    """`reconcile(ObjectKey(cluster, "", namespace))` places one namespace's dependencies."""

    def __init__(self, kcp: ClientFactory, *, deployments: Indexer, objects: Mapping[str, SharedInformer]) -> None:
        self.kcp = kcp
        self.deployments = deployments
        self.objects = objects

    async def reconcile(self, key: ObjectKey) -> Result | None:
        cluster, namespace = key.cluster, key.name
        index = cluster_namespace_value(cluster, namespace)
        # Services and PVCs reach kcp as types imported from physical clusters: until then, nothing to place
        synced = {kind: informer.indexer for kind, informer in self.objects.items() if informer.has_synced}
        services = list(synced["Service"].by_index(CLUSTER_NAMESPACE_INDEX, index)) if "Service" in synced else []
        wanted = users_by_target(list(self.deployments.by_index(CLUSTER_NAMESPACE_INDEX, index)), services)
        for kind, indexer in synced.items():
            api_version, plural = KINDS[kind]
            resource = self.kcp.dynamic(cluster).resource(api_version, plural, namespaced=True)
            for obj in indexer.by_index(CLUSTER_NAMESPACE_INDEX, index):
                meta = obj.get("metadata") or {}
                assigned = ASSIGNMENT_LABEL in (meta.get("labels") or {})
                if (assigned and NAMESPACE_PLACED_ANNOTATION not in (meta.get("annotations") or {})) or meta.get(
                        "deletionTimestamp"):
                    continue  # a person's assignment
                patch = label_patch(obj, wanted.get((kind, meta["name"]), set()))
                if patch is None:
                    continue
                await resource.patch(meta["name"], patch, namespace=namespace)
                log.info("dependency placed", kind=kind, name=meta["name"], cluster=cluster, namespace=namespace,
                         targets=sorted(wanted.get((kind, meta["name"]), set())))
        return None


def placed_targets(obj: Mapping[str, Any]) -> set[str]:
    """The targets an object's state labels assign it to (what a syncer honouring them reads)."""
    labels = (obj.get("metadata") or {}).get("labels") or {}
    return {k.removeprefix(STATE_LABEL_PREFIX) for k, v in labels.items()
            if k.startswith(STATE_LABEL_PREFIX) and v == STATE_SYNC}
