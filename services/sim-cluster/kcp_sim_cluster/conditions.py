"""Status conditions of API objects as plain dicts: read one, set one as kube's helpers do."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from kcpcommon.kubetime import format_time as rfc3339

Obj = Mapping[str, Any]


def get_condition(status: Obj | None, type_: str) -> Obj | None:
    for cond in (status or {}).get("conditions") or []:
        if cond.get("type") == type_:
            return cond  # type: ignore[no-any-return]
    return None


def set_condition(status: dict[str, Any], type_: str, value: str, reason: str = "", message: str = "", *,
                  when: str | None = None, update_time: bool = False) -> bool:
    """Set a condition; its lastTransitionTime moves only when its status does. True when anything changed."""
    when = when or rfc3339()
    conditions: list[dict[str, Any]] = status.setdefault("conditions", [])
    for cond in conditions:
        if cond.get("type") != type_:
            continue
        changed = cond.get("status") != value or cond.get("reason", "") != reason or cond.get("message", "") != message
        if cond.get("status") != value:
            cond["lastTransitionTime"] = when
            if "lastUpdateTime" in cond or update_time:
                cond["lastUpdateTime"] = when
        elif changed and update_time:
            cond["lastUpdateTime"] = when
        cond["status"] = value
        _set_text(cond, reason, message)
        return changed
    cond = {"type": type_, "status": value}
    if update_time:
        cond["lastUpdateTime"] = when
    cond["lastTransitionTime"] = when
    _set_text(cond, reason, message)
    conditions.append(cond)
    return True


def _set_text(cond: dict[str, Any], reason: str, message: str) -> None:
    for name, text in (("reason", reason), ("message", message)):
        if text:
            cond[name] = text
        else:
            cond.pop(name, None)
