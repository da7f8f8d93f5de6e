"""How many of a root's replicas must stay available while the splitter moves them: its PodDisruptionBudgets.

Moving replicas between clusters is a voluntary disruption, the kind a PodDisruptionBudget bounds: as `kubectl
drain` stops evicting a pod once that would leave fewer healthy pods than a budget wants, the splitter stops
shrinking old shares once that would leave fewer available replicas than the floor computed here.

kube's rules (policy/v1, the disruption controller): a budget applies when its selector matches the root's pod
template labels (an empty selector `{}` selects every pod of the namespace, a null one none); `maxUnavailable`
wins over `minAvailable` when both are set; an integer `minAvailable` is the floor itself; a percentage, or
`maxUnavailable`, is taken of the expected count (here the root's `spec.replicas`, what its pods' controller
wants), both rounded up, so `maxUnavailable: 25%` of 10 allows 3 unavailable and keeps 7. The strictest budget
wins. The floor never exceeds the replicas: scaling down is not a disruption a budget bounds (kube's
ReplicaSet deletes pods without asking the eviction API). A budget kube's API would refuse (an intstr that is
not an integer or a percentage, a negative one, a percentage above 100%, an unknown selector operator) is
ignored and reported, as the disruption controller leaves such a budget out.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from typing import Any

from kcpcommon.intorstring import scaled_value
from kcpcommon.labelselector import selector_matches

__all__ = ["PDBS", "Budgets", "floor"]

PDBS = ("policy/v1", "poddisruptionbudgets")


class MalformedBudget(ValueError):
    """A budget kube's validation would refuse; the splitter leaves it out."""


@dataclass(frozen=True)
class Budgets:
    """What the budgets selecting a root's pods ask: `floor` is None when none selects them."""

    floor: int | None = None
    budget: str = ""  # the name of the strictest budget
    rule: str = ""  # its rule as written ("minAvailable: 80%")
    ignored: dict[str, str] = field(default_factory=dict)  # malformed budget name -> why


def floor(budgets: Iterable[Mapping[str, Any]], labels: Mapping[str, str] | None, replicas: int) -> Budgets:
    """The available replicas the splitter must keep for pods labelled `labels` of a root wanting `replicas`."""
    best: Budgets | None = None
    ignored: dict[str, str] = {}
    for budget in sorted(budgets, key=lambda b: str((b.get("metadata") or {}).get("name", ""))):
        name = str((budget.get("metadata") or {}).get("name", ""))
        try:
            found = _floor_of(budget.get("spec") or {}, labels or {}, replicas)
        except MalformedBudget as exc:
            ignored[name] = str(exc)
            continue
        if found is not None and (best is None or found[0] > (best.floor or 0)):
            best = Budgets(found[0], name, found[1])
    if best is None:
        return Budgets(ignored=ignored)
    return Budgets(best.floor, best.budget, best.rule, ignored)


def _floor_of(spec: Mapping[str, Any], labels: Mapping[str, str], replicas: int) -> tuple[int, str] | None:
    selector = spec.get("selector")
    if selector is None:
        return None  # policy/v1: a null selector selects no pod
    try:
        if not selector_matches(selector, labels):
            return None
    except ValueError as exc:
        raise MalformedBudget(f"spec.selector: {exc}") from None
    if spec.get("maxUnavailable") is not None:
        value = spec["maxUnavailable"]
        unavailable = scaled_value(_checked("maxUnavailable", value), replicas, round_up=True)
        wanted = replicas - unavailable
        rule = f"maxUnavailable: {value}"
    elif spec.get("minAvailable") is not None:
        value = spec["minAvailable"]
        wanted = scaled_value(_checked("minAvailable", value), replicas, round_up=True)
        rule = f"minAvailable: {value}"
    else:
        return None  # neither: the disruption controller wants no healthy pod
    return max(0, min(wanted, replicas)), rule


def _checked(name: str, value: Any) -> int | str:
    """`value` if kube's validation (ValidatePositiveIntOrPercent, at most 100%) accepts it."""
    if isinstance(value, bool) or not isinstance(value, int | str):
        raise MalformedBudget(f"spec.{name}: {value!r} is not an integer or a percentage")
    if isinstance(value, int):
        if value < 0:
            raise MalformedBudget(f"spec.{name}: {value} must be greater than or equal to 0")
        return value
    digits = value[:-1]
    if not value.endswith("%") or not digits.isdigit():
        raise MalformedBudget(f"spec.{name}: {value!r} must be an integer or a percentage (e.g. '5%')")
    if int(digits) > 100:
        raise MalformedBudget(f"spec.{name}: {value!r} must not be greater than 100%")
    return value
