"""The informer's cache: objects by `ObjectKey`, with secondary indexes (client-go's Indexer).

Controllers read from here instead of the API ("all Deployments labelled for
this SyncTarget"), so the lookups they need are indexes kept up to date on
every write, not scans. Single-threaded by design: asyncio code mutates it only
from the informer's task, and readers never await in between.

Objects are stored frozen (see `frozen.py`): what `get`/`list`/`by_index`
return must never be mutated; use `get_copy` (or `thaw`) to get a mutable copy.
An owner that already holds each object in a compact form (the API server's watch
cache keeps etcd's bytes) stores that form instead, with a `load` that turns it
back into a frozen object on read: the cache then costs a reference per object.
"""

from __future__ import annotations

import builtins
from collections.abc import Callable, Iterable, Mapping
from typing import Any, Protocol

from .frozen import freeze, thaw
from .keys import ObjectKey

Obj = Mapping[str, Any]
IndexFunc = Callable[[Obj], Iterable[str]]
KeyFunc = Callable[[Obj], ObjectKey]

NAMESPACE_INDEX = "namespace"
CLUSTER_INDEX = "cluster"
CLUSTER_NAMESPACE_INDEX = "cluster-namespace"
LABELS_INDEX = "labels"


def label_value(key: str, value: str) -> str:
    """The `labels` index value for one label: `label:<key>=<value>`."""
    return f"label:{key}={value}"


def cluster_namespace_value(cluster: str, namespace: str) -> str:
    """The `cluster-namespace` index value: `<cluster>|<namespace>`."""
    return f"{cluster}|{namespace}"


def default_indexers(key_func: KeyFunc) -> dict[str, IndexFunc]:
    """namespace, logical cluster, cluster+namespace, and one `label:<k>=<v>` entry per label."""

    def namespace(obj: Obj) -> list[str]:
        return [key_func(obj).namespace]

    def cluster(obj: Obj) -> list[str]:
        return [key_func(obj).cluster]

    def cluster_namespace(obj: Obj) -> list[str]:
        key = key_func(obj)
        return [cluster_namespace_value(key.cluster, key.namespace)]

    def labels(obj: Obj) -> list[str]:
        return [label_value(k, str(v)) for k, v in ((obj.get("metadata") or {}).get("labels") or {}).items()]

    return {NAMESPACE_INDEX: namespace, CLUSTER_INDEX: cluster, CLUSTER_NAMESPACE_INDEX: cluster_namespace,
            LABELS_INDEX: labels}


class IndexReader(Protocol):
    """What readers use of an `Indexer`: an `Indexer`, or a read-only view over several (identities.py)."""

    def __len__(self) -> int: ...

    def __contains__(self, key: object) -> bool: ...

    def get(self, key: ObjectKey) -> Obj | None: ...

    def get_copy(self, key: ObjectKey) -> dict[str, Any] | None: ...

    def list(self) -> list[Obj]: ...

    def keys(self) -> builtins.list[ObjectKey]: ...

    def by_index(self, name: str, value: str) -> builtins.list[Obj]: ...

    def index_keys(self, name: str, value: str) -> set[ObjectKey]: ...

    def index_values(self, name: str) -> builtins.list[str]: ...


class Indexer:
    """Frozen objects by key, plus named indexes `name -> value -> {keys}`.

    `load`: how a stored form other than the frozen object (see `upsert`) is read back.
    """

    def __init__(self, key_func: KeyFunc, indexers: Mapping[str, IndexFunc] | None = None, *,
                 with_defaults: bool = True, load: Callable[[Any], Obj] | None = None) -> None:
        self.key_func = key_func
        self._load_stored = load
        self._items: dict[ObjectKey, Any] = {}  # the frozen object, or the owner's stored form of it
        self._index_funcs: dict[str, IndexFunc] = default_indexers(key_func) if with_defaults else {}
        self._indexes: dict[str, dict[str, set[ObjectKey]]] = {name: {} for name in self._index_funcs}
        self.add_indexers(indexers or {})

    def __len__(self) -> int:
        return len(self._items)

    def __contains__(self, key: object) -> bool:
        return key in self._items

    def add_indexers(self, indexers: Mapping[str, IndexFunc], *, skip_existing: bool = False) -> None:
        """Add index functions; existing objects are indexed at once.

        A name already taken is an error, unless `skip_existing` (then the existing index is kept).
        """
        taken = [name for name in indexers if name in self._index_funcs]
        if taken and not skip_existing:
            raise ValueError(f"indexes already exist: {', '.join(taken)}")
        for name, func in indexers.items():
            if name in taken:
                continue
            index: dict[str, set[ObjectKey]] = {}
            for key, stored in self._items.items():
                for value in func(self._load(stored)):
                    index.setdefault(value, set()).add(key)
            self._index_funcs[name] = func
            self._indexes[name] = index

    def upsert(self, obj: Obj, *, key: ObjectKey | None = None, stored: Any = None,
               read_old: bool = True) -> tuple[Obj | None, Obj]:
        """Store (a frozen copy of) obj, or `stored` standing for it; returns (previous, frozen obj).

        `key` defaults to `key_func(obj)` (an owner that knows the key better says so). `read_old=False`:
        the caller has no use for the previous state, so a stored form of it is not read back (decoded)
        unless an index needs it; previous is then None (ask `key in indexer` beforehand whether there was one).
        """
        frozen: Obj = freeze(obj)
        key = self.key_func(frozen) if key is None else key
        new_values = self._index_values(frozen)  # before any change: a failing index func leaves us intact
        old_stored = self._items.get(key)
        old = None
        if old_stored is not None and (read_old or self._index_funcs or self._load_stored is None):
            old = self._load(old_stored)
        if old is not None:
            self._unindex(key, old)
        self._items[key] = frozen if stored is None else stored
        for name, values in new_values.items():
            index = self._indexes[name]
            for value in values:
                index.setdefault(value, set()).add(key)
        return old, frozen

    def keep_loaded(self) -> None:
        """Hold every object as its loaded (frozen) form from now on, for an owner whose consumers read
        far more often than the objects change: reads stop paying `load`, at the memory of a decoded copy.
        The owner stops passing `stored` to `upsert`; what it passed before is loaded here once."""
        for key, stored in self._items.items():
            self._items[key] = self._load(stored)
        self._load_stored = None

    def remove(self, key: ObjectKey) -> Obj | None:
        """Drop an object; returns what was stored, if anything."""
        stored = self._items.pop(key, None)
        if stored is None:
            return None
        old = self._load(stored)
        self._unindex(key, old)
        return old

    def discard(self, key: ObjectKey) -> None:
        """Drop an object without reading it back (when the caller has its final state already)."""
        stored = self._items.pop(key, None)
        if stored is not None and self._index_funcs:
            self._unindex(key, self._load(stored))

    def get(self, key: ObjectKey) -> Obj | None:
        """The cached object (read-only), or None."""
        stored = self._items.get(key)
        return None if stored is None else self._load(stored)

    def get_copy(self, key: ObjectKey) -> dict[str, Any] | None:
        """A mutable deep copy of the cached object, or None."""
        obj = self.get(key)
        return None if obj is None else thaw(obj)

    # `list` names this method in the class body from here on: later annotations say `builtins.list`
    def list(self) -> list[Obj]:
        return [self._load(stored) for stored in self._items.values()]

    def keys(self) -> builtins.list[ObjectKey]:
        return list(self._items)

    def by_index(self, name: str, value: str) -> builtins.list[Obj]:
        """Objects whose index function `name` produced `value`."""
        return [self._load(self._items[key]) for key in sorted(self.index_keys(name, value))]

    def index_keys(self, name: str, value: str) -> set[ObjectKey]:
        if name not in self._indexes:
            raise KeyError(f"no index named {name!r}")
        return set(self._indexes[name].get(value, ()))

    def index_values(self, name: str) -> builtins.list[str]:
        """Every value index `name` currently holds."""
        if name not in self._indexes:
            raise KeyError(f"no index named {name!r}")
        return sorted(self._indexes[name])

    def _load(self, stored: Any) -> Obj:
        return stored if self._load_stored is None else self._load_stored(stored)

    def _index_values(self, obj: Obj) -> dict[str, set[str]]:
        return {name: set(func(obj)) for name, func in self._index_funcs.items()}

    def _unindex(self, key: ObjectKey, obj: Obj) -> None:
        for name, values in self._index_values(obj).items():
            index = self._indexes[name]
            for value in values:
                keys = index.get(value)
                if keys is not None:
                    keys.discard(key)
                    if not keys:
                        del index[value]
