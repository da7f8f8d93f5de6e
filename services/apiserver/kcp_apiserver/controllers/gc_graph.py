"""The garbage collector's view of ownership: every object by uid, and owner -> dependents.

One graph per logical cluster: an ownerReference names a uid, and that uid
is only ever looked up in the dependent's own logical cluster, so two
clusters can never reach into each other even if they held the same uid.

The graph is fed with every object the collector follows and answers which
objects need another look (`observe` returns their keys); it never talks to
storage, and it decides nothing: the reconciler does, from current state.
"""

from __future__ import annotations

import sys
from collections.abc import Iterable
from dataclasses import dataclass
from typing import Any, NamedTuple

from kcp_apiserver.apimachinery.validation import FINALIZER_FOREGROUND, FINALIZER_ORPHAN
from kcpcommon.keys import cluster_of


@dataclass(frozen=True, slots=True)
class ObjectRef:
    """One object in one logical cluster, as the collector queues it (the uid tells a re-created one apart)."""

    cluster: str
    prefix: str  # its resource's storage prefix
    namespace: str
    name: str
    uid: str

    def __str__(self) -> str:
        where = f"{self.namespace}/{self.name}" if self.namespace else self.name
        return f"{self.cluster}|{self.prefix}{where}"


class OwnerRef(NamedTuple):
    """The parts of an ownerReference the collector uses."""

    uid: str
    api_version: str
    kind: str
    name: str
    block: bool

    @property
    def group(self) -> str:
        return self.api_version.rpartition("/")[0]

    @property
    def version(self) -> str:
        return self.api_version.rpartition("/")[2]


class Node(NamedTuple):
    """What the graph remembers of one object.

    A tuple of strings, flags and tuples: CPython stops tracking such tuples in its cycle collector,
    so a graph of a million objects adds nothing to the interpreter's full collections.
    """

    cluster: str
    prefix: str
    namespace: str
    name: str
    uid: str
    group: str
    kind: str
    owners: tuple[OwnerRef, ...]
    deleting: bool
    gc_finalizer: str  # "orphan", "foregroundDeletion" or ""

    @property
    def ref(self) -> ObjectRef:
        return ObjectRef(self.cluster, self.prefix, self.namespace, self.name, self.uid)

    @property
    def deleting_dependents(self) -> bool:
        """Foreground deletion under way: the object waits for its blocking dependents."""
        return self.deleting and self.gc_finalizer == FINALIZER_FOREGROUND

    def owner(self, uid: str) -> OwnerRef | None:
        return next((o for o in self.owners if o.uid == uid), None)


def owner_refs(meta: dict[str, Any]) -> tuple[OwnerRef, ...]:
    refs = []
    for ref in meta.get("ownerReferences") or ():
        if isinstance(ref, dict) and ref.get("uid"):
            refs.append(OwnerRef(str(ref["uid"]), str(ref.get("apiVersion", "")), str(ref.get("kind", "")),
                                 str(ref.get("name", "")), ref.get("blockOwnerDeletion") is True))
    return tuple(refs)


def _gc_finalizer(meta: dict[str, Any]) -> str:
    finalizers = meta.get("finalizers") or ()
    if FINALIZER_ORPHAN in finalizers:
        return FINALIZER_ORPHAN
    if FINALIZER_FOREGROUND in finalizers:
        return FINALIZER_FOREGROUND
    return ""


class _ClusterGraph:
    """One logical cluster's nodes, kept as plain tuples: CPython's cycle collector stops tracking a tuple
    that holds only strings, flags and empty tuples, so an ownerless object costs full collections nothing."""

    __slots__ = ("_nodes", "dependents")

    def __init__(self) -> None:
        self._nodes: dict[str, tuple[Any, ...]] = {}  # uid -> the fields of its Node
        self.dependents: dict[str, set[str]] = {}  # owner uid -> uids of the objects that name it

    def get(self, uid: str) -> Node | None:
        fields = self._nodes.get(uid)
        return Node._make(fields) if fields is not None else None

    def put(self, node: Node) -> None:
        self._nodes[node.uid] = tuple(node)

    def pop(self, uid: str) -> Node | None:
        fields = self._nodes.pop(uid, None)
        return Node._make(fields) if fields is not None else None

    def nodes(self) -> Iterable[Node]:
        return map(Node._make, self._nodes.values())

    def __len__(self) -> int:
        return len(self._nodes)


class Graph:
    """Ownership per logical cluster, fed by `observe`; tells which objects to look at again."""

    def __init__(self) -> None:
        self._clusters: dict[str, _ClusterGraph] = {}

    # -- reads -------------------------------------------------------------------------------

    def node(self, cluster: str, uid: str) -> Node | None:
        graph = self._clusters.get(cluster)
        return graph.get(uid) if graph else None

    def dependents(self, cluster: str, uid: str) -> list[Node]:
        graph = self._clusters.get(cluster)
        if graph is None:
            return []
        return self._dependent_nodes(graph, uid)

    def blocking_dependents(self, cluster: str, uid: str) -> list[Node]:
        """Dependents whose reference to `uid` says blockOwnerDeletion: a foreground owner waits for them."""
        return [d for d in self.dependents(cluster, uid) if (ref := d.owner(uid)) is not None and ref.block]

    def __len__(self) -> int:
        return sum(len(g) for g in self._clusters.values())

    # -- writes ------------------------------------------------------------------------------

    def observe(self, prefix: str, obj: dict[str, Any], deleted: bool) -> set[ObjectRef]:
        """Record a new state (or the deletion) of an object; returns what must be reconciled again."""
        meta = obj.get("metadata") or {}
        cluster = cluster_of(obj) or ""
        uid = meta.get("uid")
        if not cluster or not uid:
            return set()
        if deleted:
            return self._remove(cluster, uid)
        graph = self._clusters.setdefault(cluster, _ClusterGraph())
        old = graph.get(uid)
        api_version = str(obj.get("apiVersion", ""))
        node = Node(sys.intern(cluster), prefix, sys.intern(meta.get("namespace") or ""), str(meta.get("name", "")), uid,
                    sys.intern(api_version.rpartition("/")[0]), sys.intern(str(obj.get("kind", ""))),
                    owner_refs(meta), bool(meta.get("deletionTimestamp")), _gc_finalizer(meta))
        graph.put(node)
        return self._changed(graph, old, node)

    # -- internals ---------------------------------------------------------------------------

    def _changed(self, graph: _ClusterGraph, old: Node | None, new: Node) -> set[ObjectRef]:
        todo: set[ObjectRef] = set()
        old_owners = old.owners if old is not None else ()
        if old_owners != new.owners:
            for owner in old_owners:
                if new.owner(owner.uid) is None:
                    self._unlink(graph, owner.uid, new.uid)
            for owner in new.owners:
                graph.dependents.setdefault(owner.uid, set()).add(new.uid)
            # an owner waiting in the foreground may have lost a blocking dependent
            todo |= self._waiting_owners(graph, {o.uid for o in (*old_owners, *new.owners)})
            if self.needs_owner_check(new):
                todo.add(new.ref)
        deletion = (new.deleting, new.gc_finalizer)
        if old is None or (old.deleting, old.gc_finalizer) != deletion:
            if new.deleting and new.gc_finalizer:
                todo.add(new.ref)  # orphan its dependents, or wait for them
            if new.deleting_dependents:
                todo |= {d.ref for d in self._dependent_nodes(graph, new.uid)}
        return todo

    def needs_owner_check(self, node: Node) -> bool:
        """True unless every owner is known here, in the place the reference names, and not going away."""
        for owner in node.owners:
            found = self.node(node.cluster, owner.uid)
            if (found is None or found.deleting_dependents or found.kind != owner.kind or found.group != owner.group
                    or found.name != owner.name or (found.namespace and found.namespace != node.namespace)):
                return True
        return False

    def _remove(self, cluster: str, uid: str) -> set[ObjectRef]:
        graph = self._clusters.get(cluster)
        if graph is None:
            return set()
        node = graph.pop(uid)
        todo = {d.ref for d in self._dependent_nodes(graph, uid)}  # their owner is gone: collect or unlink
        if node is not None:
            for owner in node.owners:
                self._unlink(graph, owner.uid, uid)
            todo |= self._waiting_owners(graph, {o.uid for o in node.owners})
        if not len(graph) and not graph.dependents:
            del self._clusters[cluster]
        return todo

    @staticmethod
    def _dependent_nodes(graph: _ClusterGraph, uid: str) -> list[Node]:
        return [n for d in graph.dependents.get(uid, ()) if (n := graph.get(d)) is not None]

    @staticmethod
    def _unlink(graph: _ClusterGraph, owner_uid: str, dependent_uid: str) -> None:
        dependents = graph.dependents.get(owner_uid)
        if dependents is not None:
            dependents.discard(dependent_uid)
            if not dependents:
                del graph.dependents[owner_uid]

    @staticmethod
    def _waiting_owners(graph: _ClusterGraph, uids: set[str]) -> set[ObjectRef]:
        return {n.ref for u in uids if (n := graph.get(u)) is not None and n.deleting and n.gc_finalizer}
