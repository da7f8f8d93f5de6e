"""ControllerRevisions: the template history of StatefulSets and DaemonSets, as kube's controller history
keeps it (pure rules: kcp-sim-cluster's controllers and kcp's deployment splitter write what they plan).

Each distinct template a set has had is kept as a ControllerRevision `<set>-<hash>` (the set's template
labels plus `controller-revision-hash`, controlled by the set), holding the patch that restores it
(`{"spec": {"template": {..., "$patch": "replace"}}}`) and a revision number. `kubectl rollout history`
lists a set's revisions (by its selector and controller reference) with the change-cause of the set's
annotations when the revision was made; `kubectl rollout undo` applies one's patch. A set whose template
returns to an older one gets that revision back with the next number, as kube does; beyond
`revisionHistoryLimit` (default 10) the oldest revisions not in use are deleted.
"""

from __future__ import annotations

import copy
from collections.abc import Collection, Iterable, Mapping
from dataclasses import dataclass, field
from typing import Any

from .keys import CLUSTER_ANNOTATION

REVISION_LABEL = "controller-revision-hash"
DEFAULT_HISTORY_LIMIT = 10

Obj = Mapping[str, Any]


def revision_number(rev: Obj) -> int:
    return int(rev.get("revision") or 0)


def revision_name(owner: Obj, hash_: str) -> str:
    return f"{owner['metadata']['name']}-{hash_}"


def controller_reference(owner: Obj) -> dict[str, Any]:
    """The set as its revisions' controller, blocking its foreground deletion as kube's controllers set it."""
    meta = owner["metadata"]
    return {"apiVersion": owner.get("apiVersion", ""), "kind": owner.get("kind", ""), "name": meta["name"],
            "uid": meta["uid"], "controller": True, "blockOwnerDeletion": True}


def controlled_by(rev: Obj, owner: Obj) -> bool:
    uid = owner["metadata"].get("uid")
    return any(ref.get("controller") and ref.get("uid") == uid
               for ref in (rev.get("metadata") or {}).get("ownerReferences") or ())


def revision_body(owner: Obj, template: Obj, hash_: str, number: int) -> dict[str, Any]:
    """A new revision of `template`, carrying the set's annotations as they are now (its change-cause)."""
    meta = owner["metadata"]
    notes = {k: v for k, v in (meta.get("annotations") or {}).items() if k != CLUSTER_ANNOTATION}
    labels = {**((template.get("metadata") or {}).get("labels") or {}), REVISION_LABEL: hash_}
    metadata: dict[str, Any] = {"name": revision_name(owner, hash_), "namespace": meta.get("namespace"),
                                "labels": labels, "ownerReferences": [controller_reference(owner)]}
    if notes:
        metadata["annotations"] = notes
    data_template = {**copy.deepcopy(dict(template)), "$patch": "replace"}
    return {"apiVersion": "apps/v1", "kind": "ControllerRevision", "metadata": metadata,
            "data": {"spec": {"template": data_template}}, "revision": number}


@dataclass
class HistoryPlan:
    """What a set's history needs: a revision to create, or one to renumber as the newest; old ones to delete."""

    create: dict[str, Any] | None = None
    renumber: Obj | None = None
    number: int = 0  # the newest number, for `create` or `renumber`
    delete: list[Obj] = field(default_factory=list)


def plan_history(owner: Obj, template: Obj, hash_: str, owned: Iterable[Obj],
                 in_use: Collection[str] = ()) -> HistoryPlan:
    """The writes that make the current template's revision exist and be the newest, and trim the history.

    `owned`: the revisions the set controls; `in_use`: hashes or names still running somewhere (kept).
    """
    owned = list(owned)
    name = revision_name(owner, hash_)
    newest = max((revision_number(r) for r in owned), default=0)
    current = next((r for r in owned if r["metadata"]["name"] == name), None)
    plan = HistoryPlan()
    if current is None:
        plan.number = newest + 1
        plan.create = revision_body(owner, template, hash_, plan.number)
    elif revision_number(current) < newest:
        plan.number = newest + 1
        plan.renumber = current
    limit = (owner.get("spec") or {}).get("revisionHistoryLimit")
    limit = DEFAULT_HISTORY_LIMIT if limit is None else int(limit)
    old = sorted((r for r in owned if r["metadata"]["name"] != name
                  and ((r["metadata"].get("labels") or {}).get(REVISION_LABEL) not in in_use)
                  and r["metadata"]["name"] not in in_use), key=revision_number)
    plan.delete = old[:max(len(old) - limit, 0)]
    return plan
