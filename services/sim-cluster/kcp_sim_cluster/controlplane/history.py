"""ControllerRevisions: the template history of StatefulSets and DaemonSets (kube's controller history).

Each distinct template a set has had is kept as a ControllerRevision named `<set>-<hash>`, holding
the patch that restores it (`{"spec": {"template": {..., "$patch": "replace"}}}`) and a revision
number. `kubectl rollout history` lists them and `kubectl rollout undo` applies one's patch; a set
whose template returns to an older one gets that revision back with the next number, as kube does.
Beyond revisionHistoryLimit, the oldest unused revisions are deleted. A revision keeps the set's
annotations of when it was made (the change-cause that `rollout history` shows).
"""

from __future__ import annotations

from typing import Any

from kcp_apiserver.embedding import Resource
from kcp_sim_cluster.controlplane.informer import key_of
from kcp_sim_cluster.controlplane.objects import Obj, copy_obj, labels, owner_reference
from kcp_sim_cluster.controlplane.runtime import Sim
from kcpcommon.keys import CLUSTER_ANNOTATION

REVISION_LABEL = "controller-revision-hash"


def revision_number(rev: Obj) -> int:
    return int(rev.get("revision") or 0)


async def sync_history(sim: Sim, res: Resource, owner: Obj, template: Obj, hash_: str,
                       in_use: set[str]) -> None:
    """Make the current template's revision exist and be the newest; trim the history."""
    name = f"{owner['metadata']['name']}-{hash_}"
    owned = sim.informer("controllerrevisions").by_index("owner", owner["metadata"]["uid"])
    newest = max((revision_number(r) for r in owned), default=0)
    current = next((r for r in owned if r["metadata"]["name"] == name), None)
    if current is None:
        key = key_of(owner)
        data_template = {**copy_obj(template), "$patch": "replace"}
        # kube's revision carries the set's annotations as they were: `rollout history` shows its change-cause
        notes = {k: v for k, v in (owner["metadata"].get("annotations") or {}).items() if k != CLUSTER_ANNOTATION}
        meta: dict[str, Any] = {"name": name, "namespace": key.namespace,
                                "labels": {**labels(template), REVISION_LABEL: hash_},
                                "ownerReferences": [owner_reference(owner)]}
        if notes:
            meta["annotations"] = notes
        body = {"apiVersion": "apps/v1", "kind": "ControllerRevision", "metadata": meta,
                "data": {"spec": {"template": data_template}}, "revision": newest + 1}
        await sim.create(res, key.cluster, key.namespace, body)
    elif revision_number(current) < newest:
        def bump(obj: dict[str, Any]) -> None:
            obj["revision"] = newest + 1

        await sim.patch(res, current, bump)
    limit = (owner.get("spec") or {}).get("revisionHistoryLimit")
    limit = 10 if limit is None else int(limit)
    old = sorted((r for r in owned if r["metadata"]["name"] != name
                  and (r["metadata"].get("labels") or {}).get(REVISION_LABEL) not in in_use
                  and r["metadata"]["name"] not in in_use), key=revision_number)
    for rev in old[:max(len(old) - limit, 0)]:
        await sim.delete(res, rev)
