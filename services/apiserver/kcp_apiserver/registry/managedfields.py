"""metadata.managedFields: who owns which fields, recorded on every write as kube's field manager does.

An entry per manager identity (manager, operation, subresource, and the apiVersion of an Update).
An Update owns what it changed and takes it from everyone else; a field an Update removed belongs
to no one. An Apply owns exactly the fields of its configuration; changing a field another manager
owns is a conflict unless forced, and forcing takes the field from them. See `Tracker`.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from kcp_apiserver.apimachinery import status as st
from kcp_apiserver.apimachinery.validation import invalid
from kcp_apiserver.registry import fieldpath as fp
from kcp_apiserver.registry.fieldsets import compare
from kcp_apiserver.registry.typeschema import SchemaNode
from kcpcommon.keys import CLUSTER_ANNOTATION

Obj = dict[str, Any]
APPLY, UPDATE = "Apply", "Update"
FIELDS_V1 = "FieldsV1"
BEFORE_FIRST_APPLY = "before-first-apply"
LAST_APPLIED = "kubectl.kubernetes.io/last-applied-configuration"
MAX_MANAGER_LENGTH = 128
# metadata kube never tracks (its stripMeta), besides the logical cluster annotation the server sets
UNTRACKED_META = frozenset(("name", "namespace", "creationTimestamp", "selfLink", "uid", "clusterName",
                            "generation", "managedFields", "resourceVersion"))

Ident = tuple[str, str, str, str]
_ENTRY_KEYS = frozenset(("manager", "operation", "apiVersion", "time", "fieldsType", "fieldsV1", "subresource"))


@dataclass(slots=True)
class Entry:
    """One managedFields entry; `raw` is the stored dict, reused as is while the entry is unchanged."""

    manager: str
    operation: str
    api_version: str
    subresource: str
    fields: fp.Set
    time: str | None = None
    raw: Obj | None = None

    @property
    def ident(self) -> Ident:
        """kube's manager identifier: an applier is one manager whatever version it applied."""
        version = "" if self.operation == APPLY else self.api_version
        return (self.manager, self.operation, self.subresource, version)

    def encoded(self) -> Obj:
        if self.raw is not None:
            return self.raw
        out: Obj = {"manager": self.manager, "operation": self.operation, "apiVersion": self.api_version}
        if self.time is not None:
            out["time"] = self.time
        out["fieldsType"] = FIELDS_V1
        out["fieldsV1"] = fp.encode(self.fields)
        if self.subresource:
            out["subresource"] = self.subresource
        return out

    def describe(self) -> str:
        """How kube names the manager in a conflict."""
        text = f'"{self.manager}"'
        if self.subresource:
            text += f' with subresource "{self.subresource}"'
        if self.operation == UPDATE:
            text += f" using {self.api_version}"
        return text


Managers = dict[Ident, Entry]


def decode(raw: Any) -> Managers | None:
    """The entries of a managedFields list; None if it is not one kube would decode."""
    if raw is None:
        return {}
    if not isinstance(raw, list):
        return None
    out: Managers = {}
    for item in raw:
        if not isinstance(item, dict):
            return None
        operation, fields = item.get("operation"), item.get("fieldsV1")
        if operation not in (APPLY, UPDATE) or item.get("fieldsType") != FIELDS_V1:
            return None
        strings = [item.get(k, "") for k in ("manager", "apiVersion", "subresource")]
        if not all(isinstance(s, str) for s in strings) or not isinstance(fields, dict) or not fp.valid(fields):
            return None
        time = item.get("time")
        entry = Entry(strings[0], operation, strings[1], strings[2], fields, time if isinstance(time, str) else None,
                      item if item.keys() <= _ENTRY_KEYS and (time is None or isinstance(time, str)) else None)
        if entry.ident in out:
            return None
        out[entry.ident] = entry
    return out


def encode(managers: Managers) -> list[Obj]:
    """Entries in kube's order: by operation (Apply first), time, manager, apiVersion, subresource."""
    entries = sorted(managers.values(), key=lambda e: (e.operation, e.time or "", e.manager, e.api_version,
                                                       e.subresource))
    return [e.encoded() for e in entries]


def is_reset(raw: Any) -> bool:
    """`managedFields: [{}]` asks for the entries to be cleared."""
    return isinstance(raw, list) and len(raw) == 1 and raw[0] == {}


def manager_name(field_manager: str, user_agent: str) -> str:
    """The fieldManager, else the user agent's product as kube derives it (`kubectl/v1.32 (...)` → `kubectl`)."""
    if field_manager:
        return field_manager
    return user_agent.split("/", 1)[0][:MAX_MANAGER_LENGTH]


def check_manager(field_manager: str, kind: str) -> None:
    """kube's ValidateFieldManager: at most 128 bytes, printable characters only (422 on the options)."""
    causes = []
    if len(field_manager.encode()) > MAX_MANAGER_LENGTH:
        causes.append(st.Cause("FieldValueTooLong", f"Too long: may not be more than {MAX_MANAGER_LENGTH} bytes",
                               "fieldManager"))
    for i, ch in enumerate(field_manager):
        if not ch.isprintable():
            causes.append(invalid("fieldManager", field_manager, f"invalid character U+{ord(ch):04X} (at position {i})"))
            break
    if causes:
        raise st.invalid(kind, "", causes, "meta.k8s.io")


# -- what a write is compared on -------------------------------------------------------------

def tracked_view(obj: Obj, subresource: str, has_status: bool) -> Obj:
    """The part of an object whose fields are owned through this endpoint (shallow: nothing is copied deep).

    The status subresource owns status only; the main resource everything else when status is a
    subresource. apiVersion, kind and server-set metadata are never owned."""
    if subresource == "status":
        return {"status": obj["status"]} if "status" in obj else {}
    out = {k: v for k, v in obj.items() if k not in ("apiVersion", "kind") and not (has_status and k == "status")}
    meta = obj.get("metadata")
    if isinstance(meta, dict):
        view = {k: v for k, v in meta.items() if k not in UNTRACKED_META}
        annotations = view.get("annotations")
        if isinstance(annotations, dict) and CLUSTER_ANNOTATION in annotations:
            rest = {k: v for k, v in annotations.items() if k != CLUSTER_ANNOTATION}
            if rest:
                view["annotations"] = rest
            else:
                del view["annotations"]
        out["metadata"] = view
    return out


def drop_meta_self(s: fp.Set) -> fp.Set:
    """`metadata` itself is never owned, only what is under it."""
    meta = s.get("f:metadata")
    if meta is None or not fp.is_member(meta):
        return s
    out = dict(s)
    rest = fp.children(meta)
    if rest:
        out["f:metadata"] = rest
    else:
        del out["f:metadata"]
    return out


def changes(old: Obj, new: Obj, schema: SchemaNode | None, subresource: str, has_status: bool
            ) -> tuple[fp.Set, fp.Set]:
    """(changed, removed) between two objects, through the view this endpoint owns."""
    changed, removed = compare(tracked_view(old, subresource, has_status), tracked_view(new, subresource, has_status),
                               schema)
    return drop_meta_self(changed), drop_meta_self(removed)


def conflict_error(conflicts: list[tuple[Entry, tuple[str, ...]]]) -> st.APIError:
    """kube's 409 for an apply that would change fields other managers own: one cause per field."""
    causes = [{"reason": "FieldManagerConflict", "message": f"conflict with {entry.describe()}",
               "field": fp.render(path)} for entry, path in conflicts]
    if len(conflicts) == 1:
        entry, path = conflicts[0]
        message = f"Apply failed with 1 conflict: conflict with {entry.describe()}: {fp.render(path)}"
    else:
        by_manager: dict[str, list[str]] = {}
        for entry, path in conflicts:
            by_manager.setdefault(entry.describe(), []).append(fp.render(path))
        lines = []
        for manager in sorted(by_manager):
            lines.append(f"conflicts with {manager}:")
            lines.extend(f"- {p}" for p in by_manager[manager])
        message = f"Apply failed with {len(conflicts)} conflicts: " + "\n".join(lines)
    return st.APIError(409, "Conflict", message, {"causes": causes})
