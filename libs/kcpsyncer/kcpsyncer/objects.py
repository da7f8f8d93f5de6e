"""Reading objects as the API returns them: plain mappings, any of whose fields may be missing."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

Obj = Mapping[str, Any]


def meta(obj: Obj) -> Mapping[str, Any]:
    found = obj.get("metadata")
    return found if isinstance(found, Mapping) else {}


def finalizers(obj: Obj) -> list[str]:
    return [str(f) for f in meta(obj).get("finalizers") or []]


def deleting(obj: Obj) -> bool:
    return bool(meta(obj).get("deletionTimestamp"))

