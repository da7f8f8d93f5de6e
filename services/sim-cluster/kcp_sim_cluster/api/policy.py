"""policy/v1 PodDisruptionBudgets, which the pods' eviction subresource honours."""

from __future__ import annotations

import functools

from kcp_apiserver.embedding import Resource, kube_resource
from kcp_sim_cluster.api import columns
from kcp_sim_cluster.api.strategy import kube_strategy

EMPTY_STATUS = {"disruptionsAllowed": 0, "currentHealthy": 0, "desiredHealthy": 0, "expectedPods": 0}


@functools.cache
def pod_disruption_budgets(release: str) -> Resource:
    return kube_resource("policy", "v1", "PodDisruptionBudget", "poddisruptionbudgets", namespaced=True,
                         release=release, short_names=("pdb",), has_status=True, tracks_generation=True,
                         columns=columns.POD_DISRUPTION_BUDGET,
                         strategy=kube_strategy("policy", "v1", "PodDisruptionBudget", release,
                                                on_create=lambda o: o.__setitem__("status", dict(EMPTY_STATUS))))


def resources(release: str) -> tuple[Resource, ...]:
    return (pod_disruption_budgets(release),)
