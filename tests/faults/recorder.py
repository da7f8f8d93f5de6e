"""A reflector sink that remembers every version of every object it was handed, for the checks in ledger.py.

kcpcommon's Reflector (client-go's: list, watch from the list's resourceVersion with bookmarks, resume from
the last one seen, relist on 410) feeds it, as it would feed an informer's store.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from ledger import LIST, Key, Observation, seq_of

CLUSTER_ANNOTATION = "kcp.io/cluster"


class Recorder:
    """Histories per object of one watcher (one logical cluster, or `*`)."""

    def __init__(self, name: str, cluster: str) -> None:
        self.name = name
        self.cluster = cluster
        self.seen: dict[Key, list[Observation]] = {}
        self.lists = 0  # the initial list and every relist
        self.problems: list[str] = []  # what the sink itself can tell is wrong (a deletion nobody made)

    def _key(self, obj: Mapping[str, Any]) -> Key:
        meta = obj.get("metadata") or {}
        cluster = (meta.get("annotations") or {}).get(CLUSTER_ANNOTATION) or self.cluster
        return cluster, meta.get("namespace", ""), meta.get("name", "")

    def _observe(self, obj: Mapping[str, Any], source: str) -> Key:
        key = self._key(obj)
        rv = int(obj["metadata"]["resourceVersion"])
        history = self.seen.setdefault(key, [])
        if source == LIST and history and history[-1].resource_version == rv:
            return key  # a relist restating what the watch already delivered is no new observation
        history.append(Observation(rv, seq_of(dict(obj)), source))
        return key

    def replace(self, items: list[dict[str, Any]], resource_version: str) -> None:
        self.lists += 1
        listed = {self._observe(item, LIST) for item in items}
        for key in sorted(set(self.seen) - listed):
            self.problems.append(f"{self.name}: {key} vanished from the list at {resource_version}")

    def apply(self, event_type: str, obj: Mapping[str, Any]) -> None:
        key = self._observe(obj, event_type)
        if event_type == "DELETED":
            self.problems.append(f"{self.name}: {key} deleted at {obj['metadata']['resourceVersion']}")

    def current(self) -> dict[Key, int]:
        """The latest resourceVersion of every object this watcher knows."""
        return {k: h[-1].resource_version for k, h in self.seen.items() if h}
