"""Spec diffs: one object in kcp, a different spec on each SyncTarget it is split across.

As kcp's transparent multi-cluster did, a controller that spreads one object over several clusters (the
deployment splitter: 5 replicas as 2 on one cluster and 3 on another) keeps the object whole in kcp and
says what differs per cluster in the annotation `experimental.spec-diff.workload.kcp.io/<target>`: a JSON
patch (RFC 6902, `kcpcommon.jsonpatch`) of the object's `spec`, its paths relative to `spec`
(`[{"op":"replace","path":"/replicas","value":2}]`). Target T's syncer applies T's diff, and only T's,
before anything else it does to the spec (`transform.downstream_object`); every diff annotation stays out of
the downstream copy, so another target's diff is no change on T, and T's spec hash covers the diffed spec.

An object with a diff for T (an empty list `[]` counts) is *split* on T: the controller that wrote the
diffs owns its `.status`, so T's syncer writes T's status into its own annotation only (`summary.py`), and
does not mirror the ReplicaSets its copy makes downstream: the splitter keeps the root's revisions in kcp,
and the pods point at those (`upsync.py`).

A diff that cannot be read or applied is the user's (or the splitter's) to fix: nothing is applied or
deleted downstream, a Warning Event `InvalidSpecDiff` says why on the upstream object (`down.py`), and the
object is looked at again on its next change.
"""

from __future__ import annotations

import json
from typing import Any

from kcpcommon.jsonpatch import JSONPatchError, apply_json_patch

from .names import SPEC_DIFF_ANNOTATION_PREFIX
from .objects import Obj, meta

INVALID_SPEC_DIFF = "InvalidSpecDiff"  # the Event's reason


class InvalidSpecDiff(ValueError):
    """T's spec diff annotation does not decode to a JSON patch, or does not apply to the spec."""

    def __init__(self, annotation: str, error: str) -> None:
        super().__init__(f"annotation {annotation}: {error}")
        self.annotation = annotation


def spec_diff_annotation(sync_target: str) -> str:
    return SPEC_DIFF_ANNOTATION_PREFIX + sync_target


def is_split(obj: Obj, sync_target: str) -> bool:
    """`obj` carries a spec diff for `sync_target` (whether or not it is valid)."""
    return spec_diff_annotation(sync_target) in (meta(obj).get("annotations") or {})


def diffed_spec(obj: Obj, sync_target: str, spec: Any) -> Any:
    """`spec` (the object's, as the syncer copied it) with `sync_target`'s diff applied; `spec` itself when
    the object has none. Raises InvalidSpecDiff."""
    annotation = spec_diff_annotation(sync_target)
    text = (meta(obj).get("annotations") or {}).get(annotation)
    if text is None:
        return spec
    try:
        operations = json.loads(text)
    except (TypeError, ValueError) as exc:
        raise InvalidSpecDiff(annotation, f"not JSON: {exc}") from None
    if not isinstance(operations, list):
        raise InvalidSpecDiff(annotation, "not a JSON patch: a JSON list of operations is expected")
    try:
        result = apply_json_patch({} if spec is None else spec, operations)
    except JSONPatchError as exc:
        where = f" (at {exc.path})" if exc.path else ""
        raise InvalidSpecDiff(annotation, f"the JSON patch does not apply to the spec{where}: {exc}") from None
    if not isinstance(result, dict):
        raise InvalidSpecDiff(annotation, "the JSON patch leaves a spec that is not an object")
    return result
