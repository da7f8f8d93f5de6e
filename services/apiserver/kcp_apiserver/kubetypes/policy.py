"""policy/v1 PodDisruptionBudget validation, as kube's strategy runs it."""

from __future__ import annotations

from kcp_apiserver.apimachinery.status import Cause
from kcp_apiserver.kubetypes import validation as v
from kcp_apiserver.kubetypes.fields import spec
from kcp_apiserver.registry.resource import Obj


def validate_budget(pdb: Obj) -> list[Cause]:
    s = spec(pdb)
    if s.get("minAvailable") is not None and s.get("maxUnavailable") is not None:
        return [Cause("FieldValueInvalid", "Invalid value: policy.PodDisruptionBudgetSpec: minAvailable and "
                                           "maxUnavailable cannot be both set", "spec")]
    return (v.int_or_percent("spec.minAvailable", s.get("minAvailable"), at_most_100=True)
            + v.int_or_percent("spec.maxUnavailable", s.get("maxUnavailable"), at_most_100=True))
