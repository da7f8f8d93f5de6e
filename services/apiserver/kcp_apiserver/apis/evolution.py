"""Whether a new APIResourceSchema may replace the one a consumer binds (schema evolution of an export).

An export evolves by naming a new schema in `latestResourceSchemas`; every binding then moves to it, unless
the move would break what the consumer already has: its clients (a served version gone, the kind or scope
changed) or its stored objects (a field they may hold removed or retyped, a field they lack made required).
Adding versions, fields and looser rules is always fine. The rules are kube's for a CRD's stored versions,
extended to what a shared API owes consumers it does not know."""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

from kcp_apiserver.registry.resource import Obj


def incompatibilities(old: Obj, new: Obj) -> list[str]:
    """Why `new` cannot replace `old` for a consumer that binds `old` ([] when it can)."""
    was, now = old.get("spec") or {}, new.get("spec") or {}
    problems: list[str] = []
    if was.get("scope") != now.get("scope"):
        problems.append(f"scope changes from {was.get('scope')} to {now.get('scope')}")
    old_kind, new_kind = (was.get("names") or {}).get("kind"), (now.get("names") or {}).get("kind")
    if old_kind != new_kind:
        problems.append(f"kind changes from {old_kind} to {new_kind}")
    new_versions = {v.get("name"): v for v in now.get("versions") or [] if isinstance(v, dict)}
    for version in was.get("versions") or []:
        if not isinstance(version, dict) or not version.get("served"):
            continue
        name = version.get("name")
        kept = new_versions.get(name)
        if kept is None or not kept.get("served"):
            problems.append(f"version {name} is no longer served")
            continue
        problems += [f"{name}: {p}" for p in _field_changes(version.get("schema") or {}, kept.get("schema") or {}, "")]
    return problems


def _field_changes(old: Any, new: Any, path: str) -> Iterator[str]:
    """Fields of `old` that `new` drops or retypes, and fields `new` requires that `old` did not."""
    if not isinstance(old, dict) or not isinstance(new, dict) or new.get("x-kubernetes-preserve-unknown-fields"):
        return
    if old.get("type") and new.get("type") and old["type"] != new["type"]:
        yield f"field {path or '.'} changes type from {old['type']} to {new['type']}"
        return
    old_props, new_props = old.get("properties") or {}, new.get("properties") or {}
    for name, prop in old_props.items():
        if name not in new_props:
            yield f"field {path}.{name} is removed"
        else:
            yield from _field_changes(prop, new_props[name], f"{path}.{name}")
    required_before = set(old.get("required") or [])
    for name in new.get("required") or []:
        if name not in required_before:
            yield f"field {path}.{name} becomes required"
    if "items" in old and "items" in new:
        yield from _field_changes(old["items"], new["items"], f"{path}[*]")
