"""A root's shares: how many replicas each SyncTarget runs of it, written on the root itself.

One Deployment in kcp, one copy per physical cluster (kcp's transparent multi-cluster design): kcp
shows the user exactly the Deployments they made, and nothing else in their namespace. A root placed
on targets A and B carries, per target T:
- the label `state.workload.kcp.io/<T>: Sync`: T's syncer syncs the root down;
- the annotation `experimental.spec-diff.workload.kcp.io/<T>`, a JSON Patch of the spec applied on T
  only: `[{"op":"replace","path":"/replicas","value":N}]`, T's share;
- the annotation `experimental.status.workload.kcp.io/<T>`, written by T's syncer: T's copy's status,
  its observedGeneration in the root's terms (the splitter sums these into the root's `.status`);
- optionally `splitter.kcp.io/capacity.<T>`: what the splitter learned T can run of it (capacity.py).

A share leaves a target by removing all four at once; T's syncer then deletes its copy there. A
Deployment a person pinned with `workloads.kcp.io/cluster` is not split: its one share is its replicas.
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from typing import Any

from kcpcommon.keys import SPEC_DIFF_ANNOTATION_PREFIX, STATUS_ANNOTATION_PREFIX

from .names import ASSIGNMENT_LABEL, CAPACITY_ANNOTATION, STATE_LABEL_PREFIX, STATE_SYNC, state_label

CAPACITY_PREFIX = "splitter.kcp.io/capacity."
# the root's annotations that belong to its shares, never copied to its ReplicaSets
SHARE_ANNOTATION_PREFIXES = (SPEC_DIFF_ANNOTATION_PREFIX, STATUS_ANNOTATION_PREFIX, CAPACITY_PREFIX)

Obj = Mapping[str, Any]


def spec_diff_annotation(target: str) -> str:
    return SPEC_DIFF_ANNOTATION_PREFIX + target


def status_annotation(target: str) -> str:
    return STATUS_ANNOTATION_PREFIX + target


def capacity_annotation(target: str) -> str:
    return CAPACITY_PREFIX + target


def is_root(obj: Obj) -> bool:
    """A root carries no assignment label (a labelled Deployment is pinned by its author)."""
    return ASSIGNMENT_LABEL not in ((obj.get("metadata") or {}).get("labels") or {})


def owner_reference(root: Obj) -> dict[str, Any]:
    meta = root.get("metadata") or {}
    return {"apiVersion": "apps/v1", "kind": "Deployment", "name": meta.get("name"), "uid": meta.get("uid"),
            "controller": True, "blockOwnerDeletion": True}


def diff_for(replicas: int) -> str:
    """The spec diff that gives a target `replicas` of the root."""
    return json.dumps([{"op": "replace", "path": "/replicas", "value": replicas}], separators=(",", ":"))


def replicas_of_diff(text: Any) -> int | None:
    """The replicas a spec diff sets (None: not a diff the splitter wrote)."""
    try:
        ops = json.loads(text)
    except (TypeError, ValueError):
        return None
    if not isinstance(ops, list):
        return None
    for op in ops:
        if isinstance(op, Mapping) and op.get("op") in ("replace", "add") and op.get("path") == "/replicas" \
                and isinstance(op.get("value"), int) and not isinstance(op.get("value"), bool):
            return int(op["value"])
    return None


def shares_of(obj: Obj) -> dict[str, int]:
    """Replicas per SyncTarget this Deployment runs: a pinned one its replicas on its target; a root those
    of its shares (a target with a `Sync` label and a diff of ours)."""
    meta = obj.get("metadata") or {}
    labels = meta.get("labels") or {}
    pinned = labels.get(ASSIGNMENT_LABEL)
    if pinned:
        spec = obj.get("spec") or {}
        return {str(pinned): int(spec.get("replicas", 1) if spec.get("replicas") is not None else 1)}
    annotations = meta.get("annotations") or {}
    found: dict[str, int] = {}
    for key, value in annotations.items():
        if not str(key).startswith(SPEC_DIFF_ANNOTATION_PREFIX):
            continue
        target = str(key)[len(SPEC_DIFF_ANNOTATION_PREFIX):]
        replicas = replicas_of_diff(value)
        if replicas is not None and labels.get(state_label(target)) == STATE_SYNC:
            found[target] = replicas
    return found


def reported_status(root: Obj, target: str) -> dict[str, Any]:
    """What `target`'s syncer last reported of its copy ({} before it has, or if unreadable)."""
    text = (((root.get("metadata") or {}).get("annotations")) or {}).get(status_annotation(target))
    try:
        status = json.loads(text) if text else {}
    except (TypeError, ValueError):
        return {}
    return dict(status) if isinstance(status, Mapping) else {}


def share_view(root: Obj, target: str, replicas: int) -> dict[str, Any]:
    """The root's share on `target` shaped as that cluster's Deployment: its replicas, the status its syncer
    reported, the root's generation (a reported observedGeneration is in the root's terms), and the capacity
    note kept for it."""
    meta = root.get("metadata") or {}
    note = (meta.get("annotations") or {}).get(capacity_annotation(target))
    return {"metadata": {"name": meta.get("name"), "generation": int(meta.get("generation") or 0),
                         "annotations": {} if note is None else {CAPACITY_ANNOTATION: note}},
            "spec": {"replicas": replicas}, "status": reported_status(root, target)}


def shares_patch(root: Obj, shares: Mapping[str, int], notes: Mapping[str, str | None]) -> dict[str, Any] | None:
    """The merge patch that puts the root on exactly the targets of `shares` (each > 0) with those replicas,
    and its capacity notes; None when it already is. A target left loses its label and its annotations; a target
    new to the root loses any status reported of an earlier share there."""
    meta = root.get("metadata") or {}
    labels = meta.get("labels") or {}
    annotations = meta.get("annotations") or {}
    label_changes: dict[str, Any] = {}
    annotation_changes: dict[str, Any] = {}
    current = shares_of(root)
    for target, replicas in shares.items():
        if target not in current and status_annotation(target) in annotations:
            # a new share starts unreported: a status left from an earlier share there (a syncer's late write)
            # would read as replicas already available, and the old share would go before the new one runs
            annotation_changes[status_annotation(target)] = None
        if labels.get(state_label(target)) != STATE_SYNC:
            label_changes[state_label(target)] = STATE_SYNC
        if annotations.get(spec_diff_annotation(target)) != diff_for(replicas):
            annotation_changes[spec_diff_annotation(target)] = diff_for(replicas)
        note = notes.get(target)
        if annotations.get(capacity_annotation(target)) != note:
            annotation_changes[capacity_annotation(target)] = note
    leave(labels, annotations, set(shares), label_changes, annotation_changes)
    return metadata_patch(label_changes, annotation_changes)


def leave(labels: Mapping[str, Any], annotations: Mapping[str, Any], kept: set[str], label_changes: dict[str, Any],
          annotation_changes: dict[str, Any]) -> None:
    """Add to the changes the removal of every trace (state label, diff, status, capacity note) of each target the
    object shows one of but is not to stay on (`kept`)."""
    for target in _split_targets(labels, annotations) - kept:
        if state_label(target) in labels:
            label_changes[state_label(target)] = None
        for key in (spec_diff_annotation(target), status_annotation(target), capacity_annotation(target)):
            if key in annotations:
                annotation_changes[key] = None


def metadata_patch(label_changes: dict[str, Any], annotation_changes: dict[str, Any]) -> dict[str, Any] | None:
    """The merge patch of an object's metadata making these changes (None: no change)."""
    changes: dict[str, Any] = {}
    if label_changes:
        changes["labels"] = label_changes
    if annotation_changes:
        changes["annotations"] = annotation_changes
    return {"metadata": changes} if changes else None


def _split_targets(labels: Mapping[str, Any], annotations: Mapping[str, Any]) -> set[str]:
    """Every target the root shows a trace of: a state label, a diff, a status or a note."""
    found = {str(k)[len(STATE_LABEL_PREFIX):] for k in labels if str(k).startswith(STATE_LABEL_PREFIX)}
    for key in annotations:
        for prefix in SHARE_ANNOTATION_PREFIXES:
            if str(key).startswith(prefix):
                found.add(str(key)[len(prefix):])
    return found


def share_annotation(key: str) -> bool:
    return any(key.startswith(prefix) for prefix in SHARE_ANNOTATION_PREFIXES)
