"""Small helpers over API objects as plain dicts: copies, conditions, times, owner references."""

from __future__ import annotations

import datetime as dt
from collections.abc import Mapping
from typing import Any

from kcp_apiserver.embedding import json_copy
from kcp_sim_cluster.conditions import get_condition as get_condition  # the controllers import them from here
from kcp_sim_cluster.conditions import set_condition as set_condition

Obj = Mapping[str, Any]


def copy_obj(obj: Obj) -> dict[str, Any]:
    """A deep copy of an API object (the apiserver's JSON round trip)."""
    return json_copy(obj)  # type: ignore[no-any-return]


def now() -> dt.datetime:
    return dt.datetime.now(dt.UTC)


def annotations_of(obj: Obj) -> Mapping[str, str]:
    return (obj.get("metadata") or {}).get("annotations") or {}


def labels(obj: Obj) -> Mapping[str, str]:
    return (obj.get("metadata") or {}).get("labels") or {}


def owner_reference(owner: Obj, *, controller: bool = True) -> dict[str, Any]:
    """A controller reference to `owner`, blocking its foreground deletion as kube's controllers set it."""
    return {"apiVersion": owner.get("apiVersion", ""), "kind": owner.get("kind", ""),
            "name": owner["metadata"]["name"], "uid": owner["metadata"]["uid"],
            "controller": controller, "blockOwnerDeletion": True}


def is_deleting(obj: Obj) -> bool:
    return bool((obj.get("metadata") or {}).get("deletionTimestamp"))
