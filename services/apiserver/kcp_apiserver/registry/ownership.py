"""What one write does to managedFields: an Update's or an Apply's ownership step.

The registry calls `record(old, new, now)` once the new object is final (after the update strategy,
before validation and admission), so a refused write stores nothing and a write that changes
nothing changes no entry. An Apply also shapes the new object: `merged` applies the configuration
over the live object and removes what this manager applied before and dropped, unless another
manager owns it.
"""

from __future__ import annotations

import abc
import copy
from typing import Any

import orjson

from kcp_apiserver.registry import fieldpath as fp
from kcp_apiserver.registry.applymerge import fill_key_defaults, merge, prune
from kcp_apiserver.registry.fieldsets import DuplicateItem, object_set
from kcp_apiserver.registry.managedfields import (
    APPLY,
    BEFORE_FIRST_APPLY,
    LAST_APPLIED,
    UPDATE,
    Entry,
    Managers,
    changes,
    conflict_error,
    decode,
    drop_meta_self,
    encode,
    is_reset,
    tracked_view,
)
from kcp_apiserver.registry.typeschema import SchemaNode

Obj = dict[str, Any]


SYSTEM_MANAGER = "kcp-apiserver"  # the manager of the server's own writes (controllers), as kube-apiserver's


class Ownership(abc.ABC):
    """Common to both operations: whose write this is, through which endpoint, on what type."""

    operation = UPDATE

    def __init__(self, manager: str, api_version: str, schema: SchemaNode | None, *, subresource: str = "",
                 has_status: bool = False) -> None:
        self.manager = manager
        self.api_version = api_version
        self.schema = schema
        self.subresource = subresource
        self.has_status = has_status

    @property
    def ident(self) -> tuple[str, str, str, str]:
        return (self.manager, self.operation, self.subresource, "" if self.operation == APPLY else self.api_version)

    def changes(self, old: Obj, new: Obj) -> tuple[fp.Set, fp.Set]:
        return changes(old, new, self.schema, self.subresource, self.has_status)

    def live_managers(self, old: Obj | None) -> Managers:
        if old is None:
            return {}
        return decode((old.get("metadata") or {}).get("managedFields")) or {}

    @abc.abstractmethod
    def record(self, old: Obj | None, new: Obj, now: str) -> None:
        """Write this operation's entry into `new`'s managedFields, taking fields from other managers."""


MAX_UPDATE_MANAGERS = 10  # kube's cap on Update entries; older ones merge into one per apiVersion
ANCIENT_CHANGES = "ancient-changes"


def cap_updates(managers: Managers, limit: int = MAX_UPDATE_MANAGERS) -> None:
    """Past `limit` Update entries, the oldest are merged into `ancient-changes` (one per apiVersion), as kube's."""
    updates = [e for e in managers.values() if e.operation == UPDATE and e.fields]
    count = len(updates)
    if count <= limit:
        return
    first_of_version: dict[str, Entry] = {}
    for entry in sorted(updates, key=lambda e: (e.time or "", e.manager)):
        if count <= limit:
            break
        bucket_entry = Entry(ANCIENT_CHANGES, UPDATE, entry.api_version, "", {})
        bucket = managers.get(bucket_entry.ident)
        first = first_of_version.get(entry.api_version)
        if entry.ident == bucket_entry.ident or (bucket is None and first is None):
            first_of_version[entry.api_version] = entry
            continue
        if bucket is None and first is not None:
            del managers[first.ident]
            bucket = Entry(ANCIENT_CHANGES, UPDATE, entry.api_version, "", first.fields, first.time)
        assert bucket is not None
        del managers[entry.ident]
        managers[bucket.ident] = Entry(ANCIENT_CHANGES, UPDATE, entry.api_version, "",
                                       fp.union(bucket.fields, entry.fields), entry.time)
        count -= 1


def _store(new: Obj, managers: Managers) -> None:
    meta = new.setdefault("metadata", {})
    cap_updates(managers)
    entries = [e for e in managers.values() if e.fields]
    if entries:
        meta["managedFields"] = encode({e.ident: e for e in entries})
    else:
        meta.pop("managedFields", None)


def _disown(managers: Managers, skip: tuple[str, str, str, str] | None, *taken: fp.Set) -> None:
    """Take fields from every manager but `skip`; entries left empty go."""
    for ident, entry in list(managers.items()):
        if ident == skip:
            continue
        fields = entry.fields
        for s in taken:
            fields = fp.difference(fields, s)
        if fields != entry.fields:
            if fields:
                managers[ident] = Entry(entry.manager, entry.operation, entry.api_version, entry.subresource,
                                        fields, entry.time)
            else:
                del managers[ident]


class UpdateOwnership(Ownership):
    """create, update, patch, status and scale writes: the writer owns what it changed."""

    def starting_managers(self, old: Obj | None, new: Obj) -> Managers:
        """The request's entries when it sets valid ones (through the main resource), else the live ones."""
        requested = (new.get("metadata") or {}).get("managedFields")
        if not self.subresource:
            if is_reset(requested):
                return {}
            decoded = decode(requested) if requested else None
            if decoded:
                return decoded
        return self.live_managers(old)

    def record(self, old: Obj | None, new: Obj, now: str) -> None:
        managers = self.starting_managers(old, new)
        changed, removed = self.changes(old or {}, new)
        if changed or removed:
            _disown(managers, None, changed, removed)
        if changed:
            previous = managers.get(self.ident)
            fields = fp.union(previous.fields, changed) if previous is not None else changed
            managers[self.ident] = Entry(self.manager, UPDATE, self.api_version, self.subresource, fields, now)
        _store(new, managers)


class ApplyOwnership(Ownership):
    """A server-side apply: the applier owns its configuration's fields; changing others' is a conflict."""

    operation = APPLY

    def __init__(self, manager: str, api_version: str, schema: SchemaNode | None, config: Obj, *,
                 force: bool = False, subresource: str = "", has_status: bool = False) -> None:
        super().__init__(manager, api_version, schema, subresource=subresource, has_status=has_status)
        self.config = config
        self.force = force
        view = tracked_view(config, subresource, has_status)
        self.applied = drop_meta_self(object_set(view, schema, strict=True))  # or DuplicateItem

    def live_managers(self, old: Obj | None) -> Managers:
        """The live entries; an object nobody owns yet is first owned whole by `before-first-apply`."""
        managers = super().live_managers(old)
        if old is not None and not managers:
            owned, _ = self.changes({}, old)
            if owned:
                entry = Entry(BEFORE_FIRST_APPLY, UPDATE, self.api_version, self.subresource, owned)
                managers[entry.ident] = entry
        return managers

    def merged(self, live: Obj) -> Obj:
        """The configuration over live (a private copy), without what this manager stopped applying."""
        out = merge(live, copy.deepcopy(self.config), self.schema)
        managers = self.live_managers(live)
        last = managers.get(self.ident)
        if last is not None:
            dropped = fp.difference(last.fields, self.applied)
            if dropped:
                keep = self.applied
                for ident, entry in managers.items():
                    if ident != self.ident:
                        keep = fp.union(keep, entry.fields)
                prune(out, dropped, keep, self.schema)
        fill_key_defaults(out, self.schema)
        return out

    def record(self, old: Obj | None, new: Obj, now: str) -> None:
        managers = self.live_managers(old)
        changed, removed = self.changes(old or {}, new)
        conflicts: list[tuple[Entry, tuple[str, ...]]] = []
        for ident, entry in managers.items():
            if ident != self.ident:
                conflicts.extend((entry, path) for path in fp.members(fp.intersection(entry.fields, changed)))
        if conflicts and not self.force and not self._allowed_by_last_applied(old, conflicts):
            raise conflict_error(conflicts)
        _disown(managers, self.ident, changed, removed)
        previous = managers.get(self.ident)
        if previous is None or previous.fields != self.applied or changed or removed:
            managers[self.ident] = Entry(self.manager, APPLY, self.api_version, self.subresource, self.applied,
                                         now if (changed or removed or previous is None) else previous.time)
        _store(new, managers)
        if self.manager == "kubectl" and old is not None and _last_applied(old) is not None:
            _set_last_applied(new, self.config)

    def _allowed_by_last_applied(self, old: Obj | None, conflicts: list[tuple[Entry, tuple[str, ...]]]) -> bool:
        """kubectl's own apply may take fields whose live value is still what its client-side apply last set."""
        if self.manager != "kubectl" or old is None:
            return False
        text = _last_applied(old)
        if text is None:
            return False
        try:
            last = orjson.loads(text)
        except orjson.JSONDecodeError:
            return False
        if not isinstance(last, dict):
            return False
        try:
            owned = drop_meta_self(object_set(tracked_view(last, self.subresource, self.has_status), self.schema))
        except DuplicateItem:
            return False
        differing, _ = self.changes(last, old)
        allowed = fp.difference(owned, differing)
        conflicting: fp.Set = {}
        for _, path in conflicts:
            conflicting = fp.union(conflicting, _path_set(path))
        return not fp.difference(conflicting, allowed)


def _path_set(path: tuple[str, ...]) -> fp.Set:
    node: fp.Node = {}
    for element in reversed(path):
        node = {element: node}
    return node


def _last_applied(obj: Obj) -> str | None:
    annotations = (obj.get("metadata") or {}).get("annotations") or {}
    text = annotations.get(LAST_APPLIED)
    return text if isinstance(text, str) and text else None


def _set_last_applied(new: Obj, config: Obj) -> None:
    """kubectl's apply keeps the client-side annotation in step, so a later client-side apply agrees."""
    last = dict(config)
    meta = dict(last.get("metadata") or {})
    if isinstance(meta.get("annotations"), dict):
        meta["annotations"] = {k: v for k, v in meta["annotations"].items() if k != LAST_APPLIED}
    last["metadata"] = meta
    text = orjson.dumps(last, option=orjson.OPT_SORT_KEYS).decode()
    new.setdefault("metadata", {}).setdefault("annotations", {})[LAST_APPLIED] = text


def record_system_update(old: Obj, new: Obj, now: str, *, schema: SchemaNode | None, subresource: str = "",
                         has_status: bool = False) -> Obj:
    """A controller's write straight to storage, recorded as the server's own Update (new's metadata is copied)."""
    new = {**new, "metadata": dict(new.get("metadata") or {})}
    UpdateOwnership(SYSTEM_MANAGER, str(old.get("apiVersion", "")), schema, subresource=subresource,
                    has_status=has_status).record(old, new, now)
    return new
