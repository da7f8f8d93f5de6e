"""ClusterRole aggregation, as kube's controller: a stored ClusterRole with an aggregationRule gets, in
its `rules`, the rules of the ClusterRoles of its logical cluster that its selectors match.

The authorizer already computes aggregated rules from the policy index (an aggregating role's grants
never wait for this controller); writing them makes `kubectl get clusterrole -o yaml` show them, as on
kube. The shared default roles (admin, edit, view) are never written: reads show their aggregation
per logical cluster (rbac/policy.py).
"""

from __future__ import annotations

import asyncio

import structlog
from prometheus_client import CollectorRegistry

from kcp_apiserver.apimachinery import status as st
from kcp_apiserver.rbac.policy import PolicyIndex
from kcp_apiserver.rbac.rules import Rule
from kcp_apiserver.registry.builtin.rbac import RESOURCES
from kcp_apiserver.registry.store import Registry
from kcpcommon.controller import Controller, Result
from kcpcommon.keys import ObjectKey
from kcpcommon.tasks import cancel_and_wait, spawn

log = structlog.get_logger("rbac-aggregation")

CLUSTER_ROLE = next(r for r in RESOURCES if r.kind == "ClusterRole")


class AggregationController:
    """Told by the policy index which logical cluster's ClusterRoles changed; reconciles its aggregators."""

    def __init__(self, index: PolicyIndex, registry: Registry, *, metrics: CollectorRegistry | None = None) -> None:
        self.index = index
        self.registry = registry
        self.controller: Controller[ObjectKey] = Controller("clusterrole-aggregation", self.reconcile,
                                                            registry=metrics, component="kcp_apiserver")
        self._task: asyncio.Task[None] | None = None

    async def start(self) -> None:
        self.index.on_cluster_roles_changed = self._changed
        for cluster in list(self.index.clusters):
            self._changed(cluster)
        self._task = spawn(self.controller.start(), name="controller:clusterrole-aggregation")

    async def stop(self) -> None:
        self.index.on_cluster_roles_changed = None
        if self._task is not None:
            await cancel_and_wait(self._task)

    def _changed(self, cluster: str) -> None:
        policy = self.index.clusters.get(cluster)
        for name, entry in (policy.cluster_roles.items() if policy is not None else ()):
            if entry.selectors is not None:
                self.controller.enqueue(ObjectKey(cluster, "", name))

    async def reconcile(self, key: ObjectKey) -> Result | None:
        cluster, name = key.cluster, key.name
        policy = self.index.clusters.get(cluster)
        entry = policy.cluster_roles.get(name) if policy is not None else None
        if entry is None or entry.selectors is None:
            return None
        wanted = [rule.to_dict() for rule in self.index.cluster_role_rules(cluster, name)]
        try:
            current = await self.registry.get(CLUSTER_ROLE, cluster, "", name)
        except st.APIError as exc:
            if exc.code == 404:
                return None
            raise
        if [Rule.from_dict(r).to_dict() for r in current.get("rules") or ()] == wanted:
            return None
        await self.registry.update(CLUSTER_ROLE, cluster, "", name, {**current, "rules": wanted})
        log.info("aggregated cluster role", cluster=cluster, name=name, rules=len(wanted))
        return None
