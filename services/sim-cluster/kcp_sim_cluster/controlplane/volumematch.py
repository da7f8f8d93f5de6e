"""Which PersistentVolume a claim binds to, and which phase a volume is in: kube's PV controller's rules
(pkg/controller/volume/persistentvolume), as pure functions over the objects.

A volume fits a claim when it is free (or reserved for that claim by its `claimRef`), of the claim's
storage class (none for none) and volume mode, offers every access mode the claim asks for, holds at
least the storage requested and carries labels the claim's selector matches. Of the volumes that fit, a
volume reserved for the claim wins, then the smallest (kube does not waste a large volume on a small
claim).
"""

from __future__ import annotations

from collections.abc import Iterable
from fractions import Fraction
from typing import Any

from kcp_apiserver.embedding import LabelSelector
from kcp_sim_cluster.controlplane.objects import Obj, is_deleting, labels
from kcpcommon.quantity import try_parse_quantity

AVAILABLE, BOUND, RELEASED, PENDING, LOST = "Available", "Bound", "Released", "Pending", "Lost"


def _spec(obj: Obj) -> Obj:
    return obj.get("spec") or {}


def storage_class(obj: Obj) -> str:
    """A claim's or volume's class; "" for none (kube's `storageClassName: ""` and unset alike, once the
    DefaultStorageClass admission found no default class to give it)."""
    return str(_spec(obj).get("storageClassName") or "")


def requested_storage(claim: Obj) -> Fraction:
    value = ((_spec(claim).get("resources") or {}).get("requests") or {}).get("storage")
    return try_parse_quantity(value) or Fraction(0)


def volume_storage(pv: Obj) -> Fraction:
    return try_parse_quantity((_spec(pv).get("capacity") or {}).get("storage")) or Fraction(0)


def reserved_for(pv: Obj, claim: Obj) -> bool:
    """Whether the volume's claimRef names this claim (a ref without uid reserves it for any claim of that name)."""
    ref = _spec(pv).get("claimRef") or {}
    meta = claim["metadata"]
    return (bool(ref) and ref.get("name") == meta["name"] and ref.get("namespace") == meta.get("namespace")
            and ref.get("uid") in (None, "", meta.get("uid")))


def fits(claim: Obj, pv: Obj) -> bool:
    if is_deleting(pv) or (_spec(pv).get("claimRef") and not reserved_for(pv, claim)):
        return False
    if storage_class(pv) != storage_class(claim):
        return False
    if (_spec(pv).get("volumeMode") or "Filesystem") != (_spec(claim).get("volumeMode") or "Filesystem"):
        return False
    if not set(_spec(claim).get("accessModes") or []) <= set(_spec(pv).get("accessModes") or []):
        return False
    if volume_storage(pv) < requested_storage(claim):
        return False
    selector: Any = _spec(claim).get("selector")
    if selector and (selector.get("matchLabels") or selector.get("matchExpressions")):
        try:
            return LabelSelector.from_dict(selector).matches(labels(pv))
        except Exception:  # a selector kube's validation would refuse matches nothing
            return False
    return True


def best_volume(claim: Obj, volumes: Iterable[Obj]) -> Obj | None:
    """The volume the claim binds to, or None when none fits."""
    fitting = [pv for pv in volumes if fits(claim, pv)]
    if not fitting:
        return None
    return min(fitting, key=lambda pv: (not reserved_for(pv, claim), volume_storage(pv), pv["metadata"]["name"]))


def volume_phase(pv: Obj, claim: Obj | None) -> str:
    """Available without a claim (or reserved for one not made yet), Bound to a claim that names it,
    Released once the claim it was bound to is gone."""
    ref = _spec(pv).get("claimRef") or {}
    if not ref:
        return AVAILABLE
    if claim is None or (ref.get("uid") and ref.get("uid") != claim["metadata"].get("uid")):
        return RELEASED if ref.get("uid") else AVAILABLE
    return BOUND if _spec(claim).get("volumeName") == pv["metadata"]["name"] else AVAILABLE
