"""policy/v1 PodDisruptionBudgets, which the pods' eviction subresource honours."""

from __future__ import annotations

import functools

from kcp_apiserver.apimachinery.status import Cause
from kcp_apiserver.registry.builtin.declare import kube_resource
from kcp_apiserver.registry.resource import Obj, Resource
from kcp_sim_cluster.api import columns
from kcp_sim_cluster.api import validation as v
from kcp_sim_cluster.api.strategy import KubeStrategy, spec

EMPTY_STATUS = {"disruptionsAllowed": 0, "currentHealthy": 0, "desiredHealthy": 0, "expectedPods": 0}


def validate_budget(pdb: Obj) -> list[Cause]:
    s = spec(pdb)
    if s.get("minAvailable") is not None and s.get("maxUnavailable") is not None:
        return [Cause("FieldValueInvalid", "Invalid value: policy.PodDisruptionBudgetSpec: minAvailable and "
                                           "maxUnavailable cannot be both set", "spec")]
    return (v.int_or_percent("spec.minAvailable", s.get("minAvailable"), at_most_100=True)
            + v.int_or_percent("spec.maxUnavailable", s.get("maxUnavailable"), at_most_100=True))


@functools.cache
def pod_disruption_budgets(release: str) -> Resource:
    return kube_resource("policy", "v1", "PodDisruptionBudget", "poddisruptionbudgets", namespaced=True,
                         release=release, short_names=("pdb",), has_status=True, tracks_generation=True,
                         columns=columns.POD_DISRUPTION_BUDGET,
                         strategy=KubeStrategy(validate=validate_budget,
                                               on_create=lambda o: o.__setitem__("status", dict(EMPTY_STATUS))))


def resources(release: str) -> tuple[Resource, ...]:
    return (pod_disruption_budgets(release),)
