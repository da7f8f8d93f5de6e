"""The revisions of a root Deployment as kcp sees them: ReplicaSets in kcp, as kube's deployment
controller keeps them for history (pure rules; `reconcile_revisions.py` writes them).

`kubectl rollout history|undo` and `kubectl describe deployment` find a Deployment's ReplicaSets by
its selector and controller ownerReference and read `deployment.kubernetes.io/revision` on them. The
pods run in the physical clusters under the root's copies, whose ReplicaSets live there and are not
mirrored into kcp; in kcp the splitter keeps one ReplicaSet per distinct pod template of the root, as
kube would, and the syncers mirror the pods with the one of their template as their controller:

- named `<root>-<pod-template-hash>`, the hash label on its labels, selector and template; a name taken by a
  ReplicaSet that is not the root's (or holds another template) bumps the root's `status.collisionCount`,
  which goes into the hash, as kube's controller does;
- the current one (its template is the root's) carries the root's annotations (but kube's own),
  `revision` one above every older one's, `desired-replicas` and `max-replicas`; a template that
  returns to an older revision moves that ReplicaSet to the top, its old number kept in
  `revision-history`; the root carries the current revision;
- a paused root gets no new ReplicaSet until it resumes;
- old ones have 0 replicas, and the oldest beyond `revisionHistoryLimit` go;
- the current one's replicas and status summarize the root's status (its updated replicas).

They carry no assignment label, so no syncer copies them down and the splitter never splits them.
"""

from __future__ import annotations

import copy
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

from kcpcommon.intorstring import scaled_value
from kcpcommon.keys import CLUSTER_ANNOTATION
from kcpcommon.podtemplatehash import HASH_LABEL, pod_template_hash, templates_equal_ignoring_hash

from .shares import owner_reference, share_annotation

REVISION = "deployment.kubernetes.io/revision"
REVISION_HISTORY = "deployment.kubernetes.io/revision-history"
DESIRED_REPLICAS = "deployment.kubernetes.io/desired-replicas"
MAX_REPLICAS = "deployment.kubernetes.io/max-replicas"
CHANGE_CAUSE = "kubernetes.io/change-cause"  # copied with the root's other annotations
# the root's annotations a ReplicaSet does not take (kube's list, and the server's own stamp)
NOT_COPIED = frozenset({"kubectl.kubernetes.io/last-applied-configuration", REVISION, REVISION_HISTORY,
                        DESIRED_REPLICAS, MAX_REPLICAS, "deprecated.deployment.rollback.to", CLUSTER_ANNOTATION})
MAX_HISTORY_CHARS = 2000  # kube's default cap on the revision-history annotation
DEFAULT_MAX_SURGE = "25%"

Obj = Mapping[str, Any]


@dataclass
class RevisionPlan:
    """What the root's ReplicaSets should become; `statuses` by name, without observedGeneration."""

    current: str | None  # the current ReplicaSet's name (None: paused before its first revision)
    create: dict[str, Any] | None = None
    update: list[dict[str, Any]] = field(default_factory=list)
    delete: list[Obj] = field(default_factory=list)
    statuses: dict[str, dict[str, Any]] = field(default_factory=dict)
    revision: str | None = None  # the root's own revision annotation


def revision(obj: Obj) -> int:
    try:
        return int(((obj.get("metadata") or {}).get("annotations") or {}).get(REVISION, "0"))
    except ValueError:
        return 0


def collision_count(root: Obj) -> int:
    """How many times the root's first choice of name was taken (kube's status.collisionCount, in the hash)."""
    return int((root.get("status") or {}).get("collisionCount") or 0)


def max_replicas(root: Obj) -> int:
    """replicas + maxSurge, as kube's max-replicas annotation (Recreate surges by nothing)."""
    spec = root.get("spec") or {}
    replicas = int(spec.get("replicas", 1) or 0)
    strategy = spec.get("strategy") or {}
    if strategy.get("type") == "Recreate":
        return replicas
    surge = (strategy.get("rollingUpdate") or {}).get("maxSurge")
    return replicas + scaled_value(DEFAULT_MAX_SURGE if surge is None else surge, replicas, round_up=True)


def with_history(history: str, old: str) -> str:
    """`revision-history` with `old` appended, oldest entries dropped to stay within kube's cap."""
    entries = [e for e in history.split(",") if e]
    while entries and len(",".join([*entries, old])) > MAX_HISTORY_CHARS:
        entries.pop(0)
    return ",".join([*entries, old])


def _created(rs: Obj) -> tuple[str, str]:
    meta = rs.get("metadata") or {}
    return str(meta.get("creationTimestamp") or ""), str(meta.get("name") or "")


def current_of(root: Obj, owned: Sequence[Obj]) -> Obj | None:
    """kube's FindNewReplicaSet: the oldest whose template is the root's (ignoring the hash label)."""
    template = (root.get("spec") or {}).get("template") or {}
    matching = [rs for rs in owned if templates_equal_ignoring_hash(
        (rs.get("spec") or {}).get("template") or {}, template)]
    return min(matching, key=_created) if matching else None


def _annotations(root: Obj) -> dict[str, str]:
    return {k: v for k, v in (((root.get("metadata") or {}).get("annotations")) or {}).items() if k not in NOT_COPIED
            and not share_annotation(k)}


def new_replica_set(root: Obj, number: int) -> dict[str, Any]:
    """The ReplicaSet of the root's current template, at revision `number`."""
    meta = root.get("metadata") or {}
    spec = root.get("spec") or {}
    template = copy.deepcopy(dict(spec.get("template") or {}))
    digest = pod_template_hash(template, collision_count(root))
    template_meta = template.setdefault("metadata", {})
    template_meta["labels"] = {**(template_meta.get("labels") or {}), HASH_LABEL: digest}
    selector = copy.deepcopy(dict(spec.get("selector") or {}))
    selector["matchLabels"] = {**(selector.get("matchLabels") or {}), HASH_LABEL: digest}
    annotations = {**_annotations(root), REVISION: str(number),
                   DESIRED_REPLICAS: str(int(spec.get("replicas", 1) or 0)),
                   MAX_REPLICAS: str(max_replicas(root))}
    rs_spec: dict[str, Any] = {"replicas": int(spec.get("replicas", 1) or 0), "selector": selector,
                               "template": template}
    if spec.get("minReadySeconds"):
        rs_spec["minReadySeconds"] = spec["minReadySeconds"]
    return {"apiVersion": "apps/v1", "kind": "ReplicaSet",
            "metadata": {"name": f"{meta['name']}-{digest}", "namespace": meta.get("namespace"),
                         "labels": dict(template_meta["labels"]), "annotations": annotations,
                         "ownerReferences": [owner_reference(root)]},
            "spec": rs_spec}


def _as_current(root: Obj, rs: Obj, number: int) -> dict[str, Any]:
    """The existing ReplicaSet of the root's template brought up to date (kube never changes its template)."""
    body = copy.deepcopy(dict(rs))
    meta = body.setdefault("metadata", {})
    annotations = {**(meta.get("annotations") or {}), **_annotations(root)}
    old = annotations.get(REVISION)
    if revision(rs) < number:
        annotations[REVISION] = str(number)
        if old:
            annotations[REVISION_HISTORY] = with_history(annotations.get(REVISION_HISTORY, ""), old)
    replicas = int((root.get("spec") or {}).get("replicas", 1) or 0)
    annotations[DESIRED_REPLICAS] = str(replicas)
    annotations[MAX_REPLICAS] = str(max_replicas(root))
    meta["annotations"] = annotations
    body.setdefault("spec", {})["replicas"] = replicas
    return body


def summary(root: Obj) -> dict[str, Any]:
    """The current ReplicaSet's status: the root's updated replicas, and how many of them are ready."""
    status = root.get("status") or {}
    updated = int(status.get("updatedReplicas") or 0)
    counts = {"replicas": updated, "fullyLabeledReplicas": updated,
              "readyReplicas": min(int(status.get("readyReplicas") or 0), updated),
              "availableReplicas": min(int(status.get("availableReplicas") or 0), updated)}
    return {k: v for k, v in counts.items() if v or k == "replicas"}


def plan_revisions(root: Obj, owned: Sequence[Obj]) -> RevisionPlan:
    """The root's ReplicaSets as kube's deployment controller would keep them (`owned`: those it controls)."""
    live = [rs for rs in owned if not (rs.get("metadata") or {}).get("deletionTimestamp")]
    current = current_of(root, live)
    olds = [rs for rs in live if rs is not current]
    number = max((revision(rs) for rs in olds), default=0) + 1
    spec = root.get("spec") or {}
    plan = RevisionPlan(current=None)
    if current is not None:
        wanted = _as_current(root, current, number)
        if wanted != current:
            plan.update.append(wanted)
        plan.current = wanted["metadata"]["name"]
        plan.revision = wanted["metadata"]["annotations"][REVISION]
    elif not spec.get("paused"):
        plan.create = new_replica_set(root, number)
        plan.current = plan.create["metadata"]["name"]
        plan.revision = str(number)
    if plan.current is not None:
        plan.statuses[plan.current] = summary(root)
    for rs in olds:
        if int((rs.get("spec") or {}).get("replicas") or 0):
            scaled = copy.deepcopy(dict(rs))
            scaled["spec"]["replicas"] = 0
            plan.update.append(scaled)
        plan.statuses[rs["metadata"]["name"]] = {"replicas": 0}
    limit = spec.get("revisionHistoryLimit")
    if limit is not None and len(olds) > int(limit):
        plan.delete = sorted(olds, key=_created)[:len(olds) - int(limit)]
        gone = {rs["metadata"]["name"] for rs in plan.delete}
        plan.update = [rs for rs in plan.update if rs["metadata"]["name"] not in gone]
        plan.statuses = {n: s for n, s in plan.statuses.items() if n not in gone}
    return plan
