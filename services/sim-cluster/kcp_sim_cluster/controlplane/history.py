"""ControllerRevisions of the sim's StatefulSets and DaemonSets: kcpcommon.controllerhistory's plan, written.

The rules (names, the restoring patch, renumbering a template that returns, the history limit, the
change-cause the set's annotations give a revision) are kube's controller history, shared with kcp's
deployment splitter, which keeps the same history for the sets in kcp.
"""

from __future__ import annotations

from typing import Any

from kcp_apiserver.embedding import Resource
from kcp_sim_cluster.controlplane.informer import key_of
from kcp_sim_cluster.controlplane.objects import Obj
from kcp_sim_cluster.controlplane.runtime import Sim
from kcpcommon.controllerhistory import plan_history


async def sync_history(sim: Sim, res: Resource, owner: Obj, template: Obj, hash_: str,
                       in_use: set[str]) -> None:
    """Make the current template's revision exist and be the newest; trim the history."""
    owned = sim.informer("controllerrevisions").by_index("owner", owner["metadata"]["uid"])
    plan = plan_history(owner, template, hash_, owned, in_use)
    if plan.create is not None:
        key = key_of(owner)
        await sim.create(res, key.cluster, key.namespace, plan.create)
    elif plan.renumber is not None:
        def bump(obj: dict[str, Any], number: int = plan.number) -> None:
            obj["revision"] = number

        await sim.patch(res, plan.renumber, bump)
    for rev in plan.delete:
        await sim.delete(res, rev)
