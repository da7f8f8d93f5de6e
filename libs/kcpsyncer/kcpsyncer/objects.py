"""Reading objects as the API returns them (plain mappings, any of whose fields may be missing), and kube's time."""

from __future__ import annotations

from collections.abc import Mapping
from datetime import UTC, datetime
from typing import Any

Obj = Mapping[str, Any]


def meta(obj: Obj) -> Mapping[str, Any]:
    found = obj.get("metadata")
    return found if isinstance(found, Mapping) else {}


def finalizers(obj: Obj) -> list[str]:
    return [str(f) for f in meta(obj).get("finalizers") or []]


def deleting(obj: Obj) -> bool:
    return bool(meta(obj).get("deletionTimestamp"))


def rfc3339_now() -> str:
    return datetime.now(UTC).strftime("%Y-%m-%dT%H:%M:%SZ")
