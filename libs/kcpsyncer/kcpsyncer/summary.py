"""Status of an object placed on several clusters: one status per cluster, kept apart, and their summary.

An object assigned to several SyncTargets (`state.workload.kcp.io/<target>: Sync`, as the deployment
splitter places the Services and ConfigMaps its Deployments use) has one status per physical cluster,
and one `.status` in kcp. Were each syncer to patch its own cluster's status into `.status`, the last
writer would win and the others' would flap in and out. So, as kcp's transparent multi-cluster did,
each syncer writes its cluster's status into the annotation `experimental.status.workload.kcp.io/
<target>` (a merge patch of its own key only: syncers never overwrite each other) and `.status` is the
summary of the annotations of the targets the object is placed on now. Every syncer of the object
computes the same summary from the same annotations, so whichever writes last writes the same
thing; an annotation change is an upstream event for all of them, so they converge on the latest.
A target the object leaves loses its annotation (pruned by any remaining syncer) and its part of the
summary. Placed on one target only, the status goes straight into `.status` and no annotation is kept.

An object *split* on a target (it carries that target's spec diff, `specdiff.py`) is another matter: the
controller that wrote the diffs (the deployment splitter) owns its `.status` and sums the clusters' statuses
itself (2 ready here and 3 there are 5 ready, not the first cluster's 2). So that target's syncer writes its
cluster's status into its own annotation only (`own_status_patch`), even on a single target, never into
`.status`, and prunes nothing: removing the annotations of targets the object left is that controller's job.

The summary of a Service is the union of every cluster's load-balancer ingress points (sorted, so
it is stable), which is what `helm --wait`, kstatus and `kubectl get svc` read; the rest of its
status, and the status of any other type, is the one of the first cluster by name that reported. A DaemonSet's
is the sum of its clusters' counts (`kcpcommon.daemonsetstatus`).
"""

from __future__ import annotations

import json
from collections.abc import Callable, Mapping
from typing import Any

from kcpcommon.daemonsetstatus import sum_statuses

from .names import ASSIGNMENT_LABEL, STATE_LABEL_PREFIX, STATE_SYNC, STATUS_ANNOTATION_PREFIX
from .objects import Obj, meta

Status = Mapping[str, Any]
# (each placed target's reported status, the object, the targets it is placed on) -> its `.status`
Summarizer = Callable[[dict[str, Status], Obj, set[str]], dict[str, Any]]


def status_annotation(sync_target: str) -> str:
    return STATUS_ANNOTATION_PREFIX + sync_target


def placed_targets(obj: Obj) -> set[str]:
    """The SyncTargets the object is assigned to: its assignment label and its `Sync` state labels."""
    labels = meta(obj).get("labels") or {}
    targets = {str(k).removeprefix(STATE_LABEL_PREFIX) for k, v in labels.items()
               if str(k).startswith(STATE_LABEL_PREFIX) and v == STATE_SYNC}
    if labels.get(ASSIGNMENT_LABEL):
        targets.add(str(labels[ASSIGNMENT_LABEL]))
    return targets


def reported_statuses(obj: Obj) -> dict[str, Status]:
    """Each target's status as its annotation on `obj` holds it (unreadable ones left out)."""
    found: dict[str, Status] = {}
    for key, value in (meta(obj).get("annotations") or {}).items():
        if not str(key).startswith(STATUS_ANNOTATION_PREFIX):
            continue
        try:
            status = json.loads(value)
        except (TypeError, ValueError):
            continue
        if isinstance(status, Mapping):
            found[str(key).removeprefix(STATUS_ANNOTATION_PREFIX)] = status
    return found


def encode(status: Status) -> str:
    return json.dumps(status, sort_keys=True, separators=(",", ":"))


def annotations_patch(obj: Obj, sync_target: str, status: Status | None) -> dict[str, str | None]:
    """The annotation changes `sync_target`'s syncer makes: its own status (while the object is on several
    targets), and removal of the annotations of targets the object left (all of them once it is on one)."""
    placed = placed_targets(obj)
    several = len(placed) > 1
    annotations = meta(obj).get("annotations") or {}
    patch: dict[str, str | None] = {}
    for key in annotations:
        target = str(key).removeprefix(STATUS_ANNOTATION_PREFIX)
        if str(key).startswith(STATUS_ANNOTATION_PREFIX) and not (several and target in placed):
            patch[str(key)] = None
    if several and status is not None and annotations.get(status_annotation(sync_target)) != encode(status):
        patch[status_annotation(sync_target)] = encode(status)
    return patch


def own_status_patch(obj: Obj, sync_target: str, status: Status | None) -> dict[str, str]:
    """The annotation change of a split object's syncer: its own status annotation, when it changed."""
    if status is None or (meta(obj).get("annotations") or {}).get(status_annotation(sync_target)) == encode(status):
        return {}
    return {status_annotation(sync_target): encode(status)}


def summary(resource: str, obj: Obj, sync_target: str, status: Status | None) -> Any:
    """The `.status` kcp shows: `status` (this target's) alone when the object is on one target, else the
    summary of every placed target's reported status with this target's current one."""
    placed = placed_targets(obj)
    if len(placed) <= 1:
        return status
    statuses = {t: s for t, s in reported_statuses(obj).items() if t in placed and t != sync_target}
    if status is not None:
        statuses[sync_target] = status
    if not statuses:
        return None
    return SUMMARIZERS.get(resource, first_by_target)(statuses, obj, placed)


def first_by_target(statuses: dict[str, Status], obj: Obj | None = None, placed: set[str] | None = None
                    ) -> dict[str, Any]:
    """Any type: the status of the first target by name (stable, whichever syncer computes it)."""
    return dict(statuses[min(statuses)])


def _point_order(point: Mapping[str, Any]) -> tuple[str, str, str]:
    return str(point.get("ip") or ""), str(point.get("hostname") or ""), encode(point)


def service_summary(statuses: dict[str, Status], obj: Obj, placed: set[str]) -> dict[str, Any]:
    """A Service: the union of every cluster's load-balancer ingress points, sorted, each once."""
    result = first_by_target(statuses)
    points: dict[str, Mapping[str, Any]] = {}
    for status in statuses.values():
        for point in (status.get("loadBalancer") or {}).get("ingress") or ():
            if isinstance(point, Mapping):
                points.setdefault(encode(point), point)
    result["loadBalancer"] = {"ingress": sorted(points.values(), key=_point_order)} if points else {}
    return result


def daemonset_summary(statuses: dict[str, Status], obj: Obj, placed: set[str]) -> dict[str, Any]:
    """A DaemonSet: every cluster's counts summed, observed at the oldest generation any placed one reported
    (kcpcommon.daemonsetstatus)."""
    return sum_statuses(statuses, placed=placed, generation=int(meta(obj).get("generation") or 0))


SUMMARIZERS: dict[str, Summarizer] = {"services": service_summary, "daemonsets.apps": daemonset_summary}
