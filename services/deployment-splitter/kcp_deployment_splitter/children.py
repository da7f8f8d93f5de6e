"""A child Deployment as the root wants it, and whether an existing one still matches.

Children follow the root: template, strategy, selector, minReadySeconds, paused and every other
spec field are the root's, only replicas differ. Labels are the root's plus the assignment label
and the root label; the ownerReference makes the garbage collector delete children with the root.
Anything else a person edits on a child is put back.
"""

from __future__ import annotations

import copy
from collections.abc import Mapping
from typing import Any

from .names import ASSIGNMENT_LABEL, CAPACITY_ANNOTATION, ROOT_GENERATION_ANNOTATION, ROOT_LABEL, child_name


def is_root(obj: Mapping[str, Any]) -> bool:
    """A root carries no assignment label (a labelled Deployment is a child, or pinned by its author)."""
    return ASSIGNMENT_LABEL not in ((obj.get("metadata") or {}).get("labels") or {})


def owner_reference(root: Mapping[str, Any]) -> dict[str, Any]:
    meta = root.get("metadata") or {}
    return {"apiVersion": "apps/v1", "kind": "Deployment", "name": meta.get("name"), "uid": meta.get("uid"),
            "controller": True, "blockOwnerDeletion": True}


def desired_child(root: Mapping[str, Any], target: str, replicas: int, *,
                  capacity_note: str | None = None) -> dict[str, Any]:
    """`capacity_note`: what was learned of the target's capacity (kept on the child for the next leader)."""
    meta = root.get("metadata") or {}
    spec = copy.deepcopy(dict(root.get("spec") or {}))
    spec["replicas"] = replicas
    labels = {**(meta.get("labels") or {}), ASSIGNMENT_LABEL: target, ROOT_LABEL: meta["name"]}
    annotations = {ROOT_GENERATION_ANNOTATION: str(meta.get("generation") or 0)}
    if capacity_note is not None:
        annotations[CAPACITY_ANNOTATION] = capacity_note
    return {"apiVersion": "apps/v1", "kind": "Deployment",
            "metadata": {"name": child_name(meta["name"], target), "namespace": meta.get("namespace"),
                         "labels": labels,
                         "annotations": annotations,
                         "ownerReferences": [owner_reference(root)]},
            "spec": spec}


def matches(existing: Mapping[str, Any], wanted: Mapping[str, Any]) -> bool:
    """True when `existing` needs no write: same spec, labels, our annotations and our ownerReference."""
    have, want = existing.get("metadata") or {}, wanted["metadata"]
    annotations = have.get("annotations") or {}
    owner = want["ownerReferences"][0]
    return (existing.get("spec") == wanted["spec"] and (have.get("labels") or {}) == want["labels"]
            and all(annotations.get(k) == v for k, v in want["annotations"].items())
            and any(ref.get("uid") == owner["uid"] and ref.get("controller") for ref in have.get("ownerReferences")
                    or []))


def repaired(existing: Mapping[str, Any], wanted: Mapping[str, Any]) -> dict[str, Any]:
    """`existing` brought to `wanted` (kept: its finalizers, other owners, others' annotations, status)."""
    body = copy.deepcopy(dict(existing))
    meta = body.setdefault("metadata", {})
    want = wanted["metadata"]
    meta["labels"] = dict(want["labels"])
    meta["annotations"] = {**(meta.get("annotations") or {}), **want["annotations"]}
    owner = want["ownerReferences"][0]
    others = [ref for ref in meta.get("ownerReferences") or []
              if ref.get("uid") != owner["uid"] and not ref.get("controller")]
    meta["ownerReferences"] = [owner, *others]
    body["spec"] = copy.deepcopy(wanted["spec"])
    return body
