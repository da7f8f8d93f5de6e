"""The DaemonSet rule: a DaemonSet in kcp runs on every cluster its namespace may use.

Seed 004's "virtual per-cluster DaemonSets": a DaemonSet means a pod on every node, so through kcp it means one
copy on every physical cluster of the workspace (or of its namespace's Placement), each copy on every node of its
cluster. Its placement is written as a split's (shares.py), so its `.status` is the splitter's to sum:
- the label `state.workload.kcp.io/<T>: Sync` per target T: T's syncer syncs it down;
- the annotation `experimental.spec-diff.workload.kcp.io/<T>: []`: nothing differs on T, but the object is split
  there, so T's syncer reports its copy's status in `experimental.status.workload.kcp.io/<T>` and leaves
  `.status` to the splitter, which sums the clusters' counts (kcpcommon.daemonsetstatus).

It follows targets as they come and go: a target that becomes Ready gets a copy; an evicted or deleted one, or one
its namespace's Placement moves off, loses it. A target that stops being Ready keeps its copy (there is nothing
to move elsewhere, and its nodes still run their pods): its counts stay desired, none of its pods counts as
ready. A DaemonSet a person pinned with `workloads.kcp.io/cluster`, or placed with state labels of their own
(a `Sync` label without a diff), is theirs; one the namespace rule labelled before is taken over.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from typing import Any

from kcpcommon.keys import SPEC_DIFF_ANNOTATION_PREFIX

from .names import ASSIGNMENT_LABEL, NAMESPACE_PLACED_ANNOTATION, STATE_LABEL_PREFIX, STATE_SYNC, state_label
from .shares import leave, metadata_patch, spec_diff_annotation

DAEMON_SETS = ("apps/v1", "daemonsets")
NO_DIFF = "[]"  # a spec diff that changes nothing: the copy is the DaemonSet, its status the splitter's to sum

Obj = Mapping[str, Any]


def _meta(obj: Obj) -> Mapping[str, Any]:
    return obj.get("metadata") or {}


def spread_by_rule(ds: Obj) -> bool:
    """Is this DaemonSet the rule's to place (not a person's pin or hand placement)?"""
    meta = _meta(ds)
    labels = meta.get("labels") or {}
    annotations = meta.get("annotations") or {}
    if ASSIGNMENT_LABEL in labels and NAMESPACE_PLACED_ANNOTATION not in annotations:
        return False
    return all(spec_diff_annotation(str(k)[len(STATE_LABEL_PREFIX):]) in annotations
               for k, v in labels.items() if str(k).startswith(STATE_LABEL_PREFIX) and v == STATE_SYNC)


def spread_targets(ds: Obj) -> set[str]:
    """The targets this DaemonSet is spread on (a `Sync` label and a diff that is no replicas share)."""
    meta = _meta(ds)
    labels = meta.get("labels") or {}
    annotations = meta.get("annotations") or {}
    return {str(k)[len(SPEC_DIFF_ANNOTATION_PREFIX):] for k, v in annotations.items()
            if str(k).startswith(SPEC_DIFF_ANNOTATION_PREFIX) and v == NO_DIFF
            and labels.get(state_label(str(k)[len(SPEC_DIFF_ANNOTATION_PREFIX):])) == STATE_SYNC}


def spread_patch(ds: Obj, targets: Iterable[str]) -> dict[str, Any] | None:
    """The merge patch that puts the DaemonSet on exactly `targets`; None when it already is. A target left loses
    its label, diff and status; the namespace rule's label, if it had it, goes (it is spread now)."""
    meta = _meta(ds)
    labels = meta.get("labels") or {}
    annotations = meta.get("annotations") or {}
    wanted = set(targets)
    label_changes: dict[str, Any] = {}
    annotation_changes: dict[str, Any] = {}
    for target in sorted(wanted):
        if labels.get(state_label(target)) != STATE_SYNC:
            label_changes[state_label(target)] = STATE_SYNC
        if annotations.get(spec_diff_annotation(target)) != NO_DIFF:
            annotation_changes[spec_diff_annotation(target)] = NO_DIFF
    leave(labels, annotations, wanted, label_changes, annotation_changes)
    if NAMESPACE_PLACED_ANNOTATION in annotations:
        # labelled by the namespace rule before: spread now (the target keeps its copy, under its state label)
        label_changes[ASSIGNMENT_LABEL] = None
        annotation_changes[NAMESPACE_PLACED_ANNOTATION] = None
    return metadata_patch(label_changes, annotation_changes)
