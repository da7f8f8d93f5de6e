"""Place a logical cluster's classes (classes.py) on the union of the targets of the placed objects naming them.

Keyed by logical cluster (`ObjectKey(cluster, "", "")`): a cluster holds few classes. A class loses a target
when the last object there naming it goes (or the class itself goes: its syncer deletes the downstream copy
then). As for other dependencies, the splitter moves only the state labels it set (`splitter.kcp.io/placed-on`);
a class a person assigned with `workloads.kcp.io/cluster` is left alone. A referrer kind kcp does not serve
(yet) has an unlisted cache and contributes no users.
"""

from __future__ import annotations

from collections.abc import Mapping

import structlog

from kcpcommon.clients import ClientFactory
from kcpcommon.controller import Result
from kcpcommon.informer import InformerView
from kcpcommon.keys import ObjectKey
from kcpcommon.store import CLUSTER_INDEX

from .classes import CLASS_KINDS, CLASSES_INDEX, class_use, placed_on
from .names import ASSIGNMENT_LABEL, COMPONENT
from .reconcile_dependencies import label_patch

log = structlog.get_logger(COMPONENT)


class ClassPlacer:
    """`reconcile(ObjectKey(cluster, "", ""))` places one logical cluster's classes."""

    def __init__(self, kcp: ClientFactory, *, classes: Mapping[str, InformerView],
                 referrers: Mapping[str, InformerView]) -> None:
        self.kcp = kcp
        self.classes = classes
        self.referrers = referrers

    def users(self, cluster: str, kind: str, name: str) -> set[str]:
        """The targets of the placed objects that name this class."""
        targets: set[str] = set()
        for informer in self.referrers.values():
            if not informer.has_synced:
                continue
            for key in informer.indexer.index_keys(CLASSES_INDEX, class_use(cluster, kind, name)):
                obj = informer.indexer.get(key)
                if obj is not None:
                    targets |= placed_on(obj)
        return targets

    async def reconcile(self, key: ObjectKey) -> Result | None:
        cluster = key.cluster
        for kind, informer in self.classes.items():
            if not informer.has_synced:  # the type is not imported (yet): nothing to place
                continue
            api_version, plural = CLASS_KINDS[kind]
            resource = self.kcp.dynamic(cluster).resource(api_version, plural, namespaced=False)
            for obj in informer.indexer.by_index(CLUSTER_INDEX, cluster):
                meta = obj.get("metadata") or {}
                if ASSIGNMENT_LABEL in (meta.get("labels") or {}) or meta.get("deletionTimestamp"):
                    continue  # a person's assignment, or on its way out
                users = self.users(cluster, kind, meta["name"])
                patch = label_patch(obj, users)
                if patch is None:
                    continue
                await resource.patch(meta["name"], patch)
                log.info("class placed", kind=kind, name=meta["name"], cluster=cluster, targets=sorted(users))
        return None
