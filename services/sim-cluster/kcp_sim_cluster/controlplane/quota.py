"""The resource quota controller: each ResourceQuota's `status.hard` follows its `spec.hard`, and `status.used`
is recounted from storage for every resource it limits (0 for what nothing uses yet).

kube recounts when a quota changes, when a tracked object goes (its replenishment: here a pod deleted or
finished) and on a periodic resync (`RESYNC_SECONDS`, kube's --resource-quota-sync-period is 5 min; shorter
here because only pods replenish at once). Admission (api/quota.py) charges creates in between.
"""

from __future__ import annotations

from fractions import Fraction
from typing import Any

from kcp_apiserver.embedding import Resource, scope_prefix
from kcp_sim_cluster.api.quota import LEGACY_COUNTS, matches_scopes, spec_of, terminal, usage
from kcp_sim_cluster.controlplane.base import SimController
from kcp_sim_cluster.controlplane.informer import cluster_of, index_value
from kcp_sim_cluster.controlplane.objects import Obj
from kcp_sim_cluster.controlplane.runtime import Sim
from kcpcommon.controller import Result
from kcpcommon.keys import ObjectKey
from kcpcommon.quantity import format_quantity

RESYNC_SECONDS = 30.0


def counted_by(name: str) -> tuple[str, str]:
    """The (group, plural) whose objects a quota's resource name counts."""
    if name.startswith("count/"):
        plural, _, group = name.removeprefix("count/").partition(".")
        return group, plural
    if name in LEGACY_COUNTS:
        return "", name
    if name.startswith("services."):
        return "", "services"
    if name == "requests.storage" or name.endswith(".storageclass.storage.k8s.io/requests.storage"):
        return "", "persistentvolumeclaims"
    return "", "pods"  # compute resources: requests.*, limits.*, cpu, memory, extended resources


class ResourceQuotaController(SimController):
    name = "sim-resourcequota"
    needs = ("resourcequotas",)
    optional = ("pods",)

    def __init__(self, sim: Sim) -> None:
        super().__init__(sim)
        self.quota_res: Resource = sim.resource("resourcequotas")  # type: ignore[assignment]

    def wire(self) -> None:
        self.sim.informer("resourcequotas").add_handler(self._on_quota)
        if "pods" in self.sim.informers:
            self.sim.informer("pods").add_handler(self._on_pod)

    def _on_quota(self, old: Obj | None, new: Obj | None) -> None:
        if new is not None and (old is None or spec_of(old) != spec_of(new)
                                or (new.get("status") or {}).get("hard") != spec_of(new).get("hard")):
            self.enqueue(new)

    def _on_pod(self, old: Obj | None, new: Obj | None) -> None:
        """kube's replenishment: a pod gone or finished frees what it used."""
        if old is None or (new is not None and (terminal(old) or not terminal(new))):
            return
        for key in self.sim.informer("resourcequotas").keys_by_index("namespace", index_value(cluster_of(old),
                                                                                          old["metadata"]["namespace"])):
            self.controller.queue.add(key)

    async def reconcile(self, key: ObjectKey) -> Result | None:
        quota = self.sim.informer("resourcequotas").get(key)
        if quota is None:
            return None
        hard: dict[str, Any] = dict(spec_of(quota).get("hard") or {})
        used = await self._count(key, quota, hard)

        def fill(current: dict[str, Any]) -> bool:
            status = {"hard": hard, "used": used} if hard else {}
            if (current.get("status") or {}) == status:
                return False
            current["status"] = status
            return True

        await self.sim.write_status(self.quota_res, quota, fill)
        return Result(requeue_after=RESYNC_SECONDS)

    async def _count(self, key: ObjectKey, quota: Obj, hard: dict[str, Any]) -> dict[str, str]:
        totals = {name: Fraction(0) for name in hard}
        for group, plural in sorted({counted_by(name) for name in hard}):
            res = next((r for r in self.sim.catalog.builtins if r.group == group and r.plural == plural), None)
            if res is None:
                continue
            for obj in await self._objects(res, key):
                if matches_scopes(quota, group, plural, obj):
                    for name, value in usage(group, plural, obj).items():
                        if name in totals:
                            totals[name] += value
        return {name: format_quantity(value, name.rsplit(".", 1)[-1]) for name, value in totals.items()}

    async def _objects(self, res: Resource, key: ObjectKey) -> list[dict[str, Any]]:
        """Every object of `res` in the quota's namespace, page by page."""
        prefix = scope_prefix(res.prefix, key.cluster, key.namespace)
        found: list[dict[str, Any]] = []
        start: str | None = None
        revision = 0
        while True:
            items, revision, more = await self.sim.storage.list(prefix, revision=revision, start_key=start)
            found.extend(item.obj for item in items if not item.obj["metadata"].get("deletionTimestamp")
                         or res.plural != "pods")
            if not more or not items:
                return found
            start = items[-1].key + "\x00"
