"""The kcp ReplicaSet a pod of a split Deployment belongs to.

The copy of a Deployment split across targets (`specdiff.py`) makes its own ReplicaSets on each cluster; they
are not mirrored (two clusters' `web-<hash>` beside the splitter's would be three ReplicaSets of one root in
kcp). The splitter keeps the root's revisions in kcp instead, one ReplicaSet per pod template, controlled by
the root (services/deployment-splitter: reconcile_revisions.py), and the copy of a pod the cluster's
ReplicaSet controls is controlled by the revision of that ReplicaSet's template: the kcp ReplicaSet controlled
by the root (by uid) whose `spec.template` is the cluster's ReplicaSet's, ignoring `pod-template-hash` and the
syncer's own marks (`transform.mark_pod_template`), as kube tells a Deployment's current ReplicaSet. None yet:
the pod's copy waits (a uid is never made up).
"""

from __future__ import annotations

import copy
from collections.abc import Iterable
from typing import Any

from kcpcommon.podtemplatehash import templates_equal_ignoring_hash

from .objects import Obj, meta
from .transform import unmark_pod_template

CONTROLLER_UID_INDEX = "syncer-controller-uid"  # kcp's ReplicaSets by their controller's uid


def controller_uid(obj: Obj) -> str | None:
    for ref in meta(obj).get("ownerReferences") or ():
        if isinstance(ref, dict) and ref.get("controller") and ref.get("uid"):
            return str(ref["uid"])
    return None


def controller_uid_index(obj: Obj) -> list[str]:
    uid = controller_uid(obj)
    return [uid] if uid else []


def cluster_template(down_rs: Obj) -> dict[str, Any]:
    """A cluster's ReplicaSet's pod template as kcp would hold it: without the syncer's marks."""
    body: dict[str, Any] = {"kind": "ReplicaSet", "spec": {"template": copy.deepcopy((down_rs.get("spec") or {})
                                                                                      .get("template") or {})}}
    unmark_pod_template(body)
    return dict(body["spec"]["template"])


def revision_of(down_rs: Obj, root: Obj, candidates: Iterable[Obj]) -> Obj | None:
    """The kcp ReplicaSet controlled by `root` whose template is `down_rs`'s (the oldest, should there be two)."""
    uid = meta(root).get("uid")
    template = cluster_template(down_rs)
    found = [rs for rs in candidates if uid and controller_uid(rs) == uid
             and meta(rs).get("namespace") == meta(root).get("namespace")
             and templates_equal_ignoring_hash(dict((rs.get("spec") or {}).get("template") or {}), template)]
    return min(found, key=lambda rs: (str(meta(rs).get("creationTimestamp") or ""), str(meta(rs).get("name"))),
               default=None)


def faces_of(down_rs: Obj, namespace: str, candidates: Iterable[Obj]) -> list[Obj]:
    """kcp's ReplicaSets in upstream `namespace` holding `down_rs`'s template, whatever controls them (a split
    Deployment's revisions, orphaned too once the Deployment went with `--cascade=orphan`)."""
    template = cluster_template(down_rs)
    return [rs for rs in candidates if meta(rs).get("namespace") == namespace
            and templates_equal_ignoring_hash(dict((rs.get("spec") or {}).get("template") or {}), template)]
