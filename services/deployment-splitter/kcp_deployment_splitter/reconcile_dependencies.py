"""Place what workloads depend on: per namespace, every dependency on the union of its users' clusters.

A user is a workload running on a target: a Deployment with replicas there (a root's share, shares.py, or a
pinned Deployment on the target its assignment label names), or a DaemonSet spread there (daemonsets.py). An object's clusters are the union over all its users, so when one workload leaves a cluster
its ConfigMap stays there as long as another workload there still uses it, and goes when none does.
A Service with a selector also goes wherever any workload of its namespace runs (those that follow the namespace
too: a StatefulSet on the namespace's target): a pod calls a Service by name, wherever its endpoints are, so
every cluster that may hold a caller has the Service, and kcp gives it the other clusters' endpoints
(endpoints.py).
The splitter marks only what it placed (`splitter.kcp.io/placed-on`); objects a person assigned with
the single assignment label are theirs and left alone.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

import structlog

from kcpcommon.clients import ClientFactory
from kcpcommon.controller import Result
from kcpcommon.informer import InformerView
from kcpcommon.keys import ObjectKey, key_for
from kcpcommon.store import CLUSTER_NAMESPACE_INDEX, IndexReader, cluster_namespace_value

from .daemonsets import spread_targets
from .dependencies import KINDS, references
from .names import (
    ASSIGNMENT_LABEL,
    COMPONENT,
    NAMESPACE_PLACED_ANNOTATION,
    PLACED_ANNOTATION,
    STATE_LABEL_PREFIX,
    STATE_SYNC,
    state_label,
)
from .shares import shares_of

log = structlog.get_logger(COMPONENT)


USES_INDEX = "splitter-uses"  # running workloads by what their template names and by its labels


def running_targets(obj: Mapping[str, Any]) -> set[str]:
    """The targets a workload runs pods on: a Deployment's shares with replicas, a DaemonSet's spread targets, the
    target a pinned (or namespace-placed) workload's assignment label names while it has replicas."""
    return {t for t, n in shares_of(obj).items() if n > 0} | spread_targets(obj)


def _use(cluster: str, namespace: str, kind: str, name: str) -> str:
    return f"{cluster}|{namespace}|{kind}|{name}"


def _label_use(cluster: str, namespace: str, key: str, value: str) -> str:
    return f"{cluster}|{namespace}|label|{key}={value}"


def uses_index(obj: Mapping[str, Any]) -> list[str]:
    """Index values of a workload running on a target: each object it names, each of its pods' labels.

    A namespace's dependencies are then placed by looking up their users, not by scanning every
    Deployment of the namespace (thousands) each time one of them changes.
    """
    spec = obj.get("spec") or {}
    if not running_targets(obj):
        return []
    key = key_for(obj)
    template = spec.get("template") or {}
    values = [_use(key.cluster, key.namespace, kind, name) for kind, name in sorted(references(template))]
    labels = (template.get("metadata") or {}).get("labels") or {}
    values.extend(_label_use(key.cluster, key.namespace, k, str(v)) for k, v in sorted(labels.items()))
    return values


def users_of(workloads: Sequence[IndexReader], cluster: str, namespace: str, kind: str,
             obj: Mapping[str, Any]) -> set[str]:
    """The targets where a running workload (of any of `workloads`, each indexed by `uses_index`) uses `obj` (by
    name, or, for a Service, by selecting it)."""
    selector = (obj.get("spec") or {}).get("selector") or {} if kind == "Service" else {}
    if kind == "Service" and not selector:
        return set()  # no selector: endpoints are managed by hand
    targets: set[str] = set()
    for cache in workloads:
        keys: set[ObjectKey] | None = None
        if kind == "Service":
            for k, v in selector.items():
                found = cache.index_keys(USES_INDEX, _label_use(cluster, namespace, k, str(v)))
                keys = found if keys is None else keys & found
        else:
            keys = cache.index_keys(USES_INDEX, _use(cluster, namespace, kind, obj["metadata"]["name"]))
        for key in keys or ():
            workload = cache.get(key)
            if workload is not None:
                targets.update(running_targets(workload))
    return targets


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

    def __init__(self, kcp: ClientFactory, *, workloads: Sequence[IndexReader],
                 objects: Mapping[str, InformerView], others: Sequence[InformerView] = (),
                 namespaces: IndexReader | None = None) -> None:
        self.kcp = kcp
        self.workloads = workloads  # Deployments and DaemonSets, indexed by `uses_index`
        self.objects = objects
        self.others = others  # the workloads that follow their namespace (StatefulSets, Jobs, ...): callers too
        self.namespaces = namespaces  # a namespace's own target (its assignment label)

    def service_callers(self, cluster: str, namespace: str) -> set[str]:
        """Where a Service of the namespace must be for its callers: where its workloads run, unless that is only
        the namespace's own target (then the Service follows the namespace there like the rest)."""
        found = self.callers(cluster, namespace)
        labels = (((self.namespaces.get(ObjectKey(cluster, "", namespace)) if self.namespaces is not None else None)
                   or {}).get("metadata") or {}).get("labels") or {}
        return set() if found <= {labels.get(ASSIGNMENT_LABEL)} else found

    def callers(self, cluster: str, namespace: str) -> set[str]:
        """The targets a pod of the namespace may call a Service from: where any of its workloads runs."""
        index = cluster_namespace_value(cluster, namespace)
        found: set[str] = set()
        for cache in (*self.workloads, *(informer.indexer for informer in self.others)):
            for workload in cache.by_index(CLUSTER_NAMESPACE_INDEX, index):
                found |= running_targets(workload)
        return found

    async def reconcile(self, key: ObjectKey) -> Result | None:
        cluster, namespace = key.cluster, key.name
        index = cluster_namespace_value(cluster, namespace)
        # Services and PVCs reach kcp as types imported from physical clusters: until then, nothing to place
        synced = {kind: informer.indexer for kind, informer in self.objects.items() if informer.has_synced}
        if not all(informer.synced_or_unserved for informer in self.others):
            return Result(requeue_after=1.0)  # a Service's callers cannot be told yet: it would leave a cluster
        callers: set[str] | None = None
        for kind, indexer in synced.items():
            api_version, plural = KINDS[kind]
            resource = self.kcp.dynamic(cluster).resource(api_version, plural, namespaced=True)
            for obj in indexer.by_index(CLUSTER_NAMESPACE_INDEX, index):
                meta = obj.get("metadata") or {}
                assigned = ASSIGNMENT_LABEL in (meta.get("labels") or {})
                if (assigned and NAMESPACE_PLACED_ANNOTATION not in (meta.get("annotations") or {})) or meta.get(
                        "deletionTimestamp"):
                    continue  # a person's assignment
                users = users_of(self.workloads, cluster, namespace, kind, obj)
                if kind == "Service" and (obj.get("spec") or {}).get("selector"):
                    callers = self.service_callers(cluster, namespace) if callers is None else callers
                    users |= callers
                patch = label_patch(obj, users)
                if patch is None:
                    continue
                await resource.patch(meta["name"], patch, namespace=namespace)
                log.info("dependency placed", kind=kind, name=meta["name"], cluster=cluster, namespace=namespace,
                         targets=sorted(users))
        return None


def placed_targets(obj: Mapping[str, Any]) -> set[str]:
    """The targets an object's state labels assign it to (what a syncer honouring them reads)."""
    labels = (obj.get("metadata") or {}).get("labels") or {}
    return {k.removeprefix(STATE_LABEL_PREFIX) for k, v in labels.items()
            if k.startswith(STATE_LABEL_PREFIX) and v == STATE_SYNC}
