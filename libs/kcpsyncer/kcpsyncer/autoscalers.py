"""Which downstream workloads an autoscaler synced with them scales: their replicas are the cluster's.

A HorizontalPodAutoscaler placed with its workload scales the downstream copy through `/scale`. kube 1.22
and later record that write in managedFields (`subresource: scale`), which `transform.scaled_downstream`
reads. Older clusters (kube 1.20, 1.21) leave no trace of it: the syncer's apply still owns `spec.replicas`
and would take every scaling back. So the syncer also asks its own downstream cache of autoscalers: a
workload that an HPA in the same namespace targets (`spec.scaleTargetRef`) keeps its live replicas, on any
release.
"""

from __future__ import annotations

from collections.abc import Iterator, Mapping

from kcpcommon.store import NAMESPACE_INDEX

from .discovery import APIType
from .objects import Obj, meta
from .synced import SyncedType

AUTOSCALERS = "horizontalpodautoscalers.autoscaling"


def _group(api_version: str) -> str:
    return api_version.rpartition("/")[0]


def target_of(hpa: Obj) -> tuple[str, str, str]:
    """(group, kind, name) of the workload `hpa` scales."""
    ref = ((hpa.get("spec") or {}).get("scaleTargetRef")) or {}
    return _group(str(ref.get("apiVersion") or "")), str(ref.get("kind") or ""), str(ref.get("name") or "")


class Autoscalers:
    """Answers from the downstream cache of the synced autoscaler type (none synced: nothing is autoscaled)."""

    def __init__(self, types: Mapping[str, SyncedType]) -> None:
        self._types = types

    def _in(self, namespace: str) -> Iterator[Obj]:
        typ = self._types.get(AUTOSCALERS)
        if typ is None or not namespace:
            return iter(())
        return iter(typ.down_informer.indexer.by_index(NAMESPACE_INDEX, namespace))

    def scale(self, down: APIType, namespace: str | None, name: str) -> bool:
        """Whether an autoscaler in downstream `namespace` targets the object `name` of type `down`."""
        wanted = (_group(down.api_version), down.kind, name)
        return any(target_of(hpa) == wanted for hpa in self._in(namespace or ""))

    def target_key(self, hpa: Obj) -> tuple[str, str] | None:
        """(synced resource, downstream name) of the workload `hpa` targets, if that kind is synced."""
        group, kind, name = target_of(hpa)
        if not name or not meta(hpa).get("namespace"):
            return None
        for resource, typ in self._types.items():
            if typ.down.kind == kind and _group(typ.down.api_version) == group and typ.down.namespaced:
                return resource, name
        return None
