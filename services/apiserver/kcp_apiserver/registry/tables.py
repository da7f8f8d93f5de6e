"""Server-side printing: meta.k8s.io/v1 Table, which is what `kubectl get` shows."""

from __future__ import annotations

from datetime import UTC, datetime
from typing import Any

from kcp_apiserver.apimachinery import metatime
from kcp_apiserver.registry.resource import Column, Obj, Resource


def parse_time(value: str | None) -> datetime | None:
    """A timestamp as Go's time.Parse(RFC3339) reads it (fractions and offsets too), or None."""
    if not value:
        return None
    try:
        seconds, _ = metatime.parse(value, micro=False)
        return datetime.fromtimestamp(seconds, UTC)
    except (metatime.TimeParseError, ValueError, OverflowError, OSError):
        return None


def human_duration(seconds: float) -> str:
    """kube's HumanDuration: coarse and short, like `5m2s`, `3h`, `12d`."""
    if seconds < -1:
        return "<invalid>"
    s = max(int(seconds), 0)
    if s < 120:
        return f"{s}s"
    minutes = s // 60
    if minutes < 10:
        return f"{minutes}m{s % 60}s" if s % 60 else f"{minutes}m"
    if minutes < 180:
        return f"{minutes}m"
    hours = minutes // 60
    if hours < 8:
        return f"{hours}h{minutes % 60}m" if minutes % 60 else f"{hours}h"
    if hours < 48:
        return f"{hours}h"
    if hours < 24 * 8:
        return f"{hours // 24}d{hours % 24}h" if hours % 24 else f"{hours // 24}d"
    if hours < 24 * 365 * 2:
        return f"{hours // 24}d"
    years = hours // (24 * 365)
    if years < 8:
        days = (hours // 24) % 365
        return f"{years}y{days}d" if days else f"{years}y"
    return f"{years}y"


def field_at(obj: Any, *path: str) -> Any:
    """The value at `path` in an object, or None where a part is missing (a cell's input may lack any field)."""
    for part in path:
        if not isinstance(obj, dict):
            return None
        obj = obj.get(part)
    return obj


def wide_column(name: str, cell: Any, description: str, type_: str = "string") -> Column:
    """A column `kubectl get -o wide` shows (priority 1)."""
    return Column(name, type_, cell, description, priority=1)


def age(obj: Obj) -> str:
    created = parse_time((obj.get("metadata") or {}).get("creationTimestamp"))
    if created is None:
        return "<unknown>"
    return human_duration((datetime.now(UTC) - created).total_seconds())


NAME = Column("Name", "string", lambda o: o["metadata"].get("name", ""),
              "Name must be unique within a namespace.", format="name")
AGE = Column("Age", "string", age, "CreationTimestamp is a timestamp representing the server time "
             "when this object was created.")
CREATED_AT = Column("Created At", "date", lambda o: o["metadata"].get("creationTimestamp", ""),
                    "CreationTimestamp is a timestamp representing the server time when this object was created.")


def _definition(col: Column) -> dict[str, Any]:
    out: dict[str, Any] = {"name": col.name, "type": col.type, "format": col.format,
                           "description": col.description, "priority": col.priority}
    return out


def to_table(resource: Resource, items: list[Obj], list_meta: dict[str, Any], include_object: str) -> dict[str, Any]:
    """Build a Table; include_object is kube's includeObject (None, Metadata or Object)."""
    columns = resource.columns or (NAME, AGE)
    rows = []
    for obj in items:
        row: dict[str, Any] = {"cells": [_cell(col, obj) for col in columns]}
        if include_object == "Object":
            row["object"] = obj
        elif include_object != "None":
            row["object"] = {"kind": "PartialObjectMetadata", "apiVersion": "meta.k8s.io/v1",
                             "metadata": obj.get("metadata", {})}
        rows.append(row)
    return {"kind": "Table", "apiVersion": "meta.k8s.io/v1", "metadata": list_meta,
            "columnDefinitions": [_definition(c) for c in columns], "rows": rows}


def _cell(col: Column, obj: Obj) -> Any:
    try:
        value = col.cell(obj)
    except (KeyError, TypeError, IndexError, AttributeError):
        value = None
    return "<none>" if value is None and col.type == "string" else value
