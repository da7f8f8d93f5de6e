"""Adoption and release (kube's ControllerRefManager): a controller owns what its selector matches.

An object without a controlling owner whose labels match a controller's selector is adopted (a
controller reference is added); an owned object whose labels stop matching is released (the
reference removed), and its controller replaces it. Nothing is adopted by, or released from, an
owner being deleted.
"""

from __future__ import annotations

from typing import Any

from kcp_apiserver.embedding import LabelSelector, Resource
from kcp_sim_cluster.controlplane.informer import controller_uid
from kcp_sim_cluster.controlplane.objects import Obj, is_deleting, labels, owner_reference
from kcp_sim_cluster.controlplane.runtime import Sim


def selector_of(owner: Obj) -> LabelSelector | None:
    """The owner's selector; None when it has none or an empty one (that would claim everything)."""
    selector = (owner.get("spec") or {}).get("selector")
    if owner.get("kind") == "ReplicationController" and selector:
        selector = {"matchLabels": selector}  # a plain label map, as kube's replication manager reads it
    if not selector or not (selector.get("matchLabels") or selector.get("matchExpressions")):
        return None
    try:
        return LabelSelector.from_dict(selector)
    except Exception:  # an invalid selector claims nothing (the API refuses them anyway)
        return None


async def claim(sim: Sim, res: Resource, owner: Obj, owned: list[Obj], orphans: list[Obj]) -> list[Obj]:
    """The objects `owner` controls after adopting matching orphans and releasing what no longer matches."""
    selector = selector_of(owner)
    if selector is None:
        return owned
    uid = owner["metadata"]["uid"]
    result = []
    for obj in owned:
        if selector.matches(labels(obj)):
            result.append(obj)
        elif not is_deleting(owner) and not is_deleting(obj):
            await sim.patch(res, obj, lambda current: _release(current, uid))
    if is_deleting(owner):
        return result
    for obj in orphans:
        if is_deleting(obj) or controller_uid(obj) or not selector.matches(labels(obj)):
            continue
        adopted = await sim.patch(res, obj, lambda current: _adopt(current, owner))
        if adopted is not None and controller_uid(adopted) == uid:
            result.append(adopted)
    return result


def _release(obj: dict[str, Any], uid: str) -> None:
    refs = [r for r in obj["metadata"].get("ownerReferences") or [] if r.get("uid") != uid]
    if refs:
        obj["metadata"]["ownerReferences"] = refs
    else:
        obj["metadata"].pop("ownerReferences", None)


def _adopt(obj: dict[str, Any], owner: Obj) -> None:
    if controller_uid(obj):
        return  # someone else adopted it meanwhile
    refs = list(obj["metadata"].get("ownerReferences") or [])
    refs.append(owner_reference(owner))
    obj["metadata"]["ownerReferences"] = refs
