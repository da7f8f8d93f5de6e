"""A pod's eviction subresource (a delete that respects PodDisruptionBudgets). Binding is the API server's
(`kcp_apiserver.embedding.BINDING`); the streams (log, exec, attach, portforward) have their own modules."""

from __future__ import annotations

from typing import Any

from kcp_apiserver.embedding import (
    Action,
    ActionCall,
    ActionResult,
    LabelSelector,
    Obj,
    Resource,
    action_created,
    member,
)
from kcp_apiserver.embedding import status as st

# -- eviction -----------------------------------------------------------------------------------


def _ready(pod: Obj) -> bool:
    return any(c.get("type") == "Ready" and c.get("status") == "True"
               for c in (pod.get("status") or {}).get("conditions") or [])


def _scaled(value: Any, total: int, *, round_up: bool) -> int:
    """An IntOrString against a total (`25%` of 10 is 3 rounded up), as kube's GetScaledValueFromIntOrPercent."""
    if isinstance(value, str) and value.endswith("%"):
        percent = int(value[:-1] or 0)
        scaled = percent * total
        return -(-scaled // 100) if round_up else scaled // 100
    return int(value or 0)


def _too_many_requests(budget: str, message: str) -> st.APIError:
    return st.APIError(429, "TooManyRequests", "Cannot evict pod as it would violate the pod's disruption budget.",
                       {"causes": [{"reason": "DisruptionBudget", "message": message}]})


def eviction(pdbs: Resource) -> Action:
    """POST pods/NAME/eviction (policy/v1 Eviction): deletes the pod unless a PodDisruptionBudget that
    selects it would fall below its healthy minimum, which is kube's 429 TooManyRequests."""

    async def evict(call: ActionCall) -> ActionResult:
        body = call.body or {}
        meta = member(body, "metadata")
        if meta.get("name") and meta["name"] != call.name:
            raise st.bad_request(f"name in URL does not match name in Eviction object ({meta['name']})")
        pod = await call.registry.get(call.resource, call.cluster, call.namespace, call.name)
        labels = pod["metadata"].get("labels") or {}
        terminal = (pod.get("status") or {}).get("phase") in ("Succeeded", "Failed")
        if not terminal and not pod["metadata"].get("deletionTimestamp"):
            budgets = await call.registry.list(pdbs, call.cluster, call.namespace)
            matching = [b for b in budgets.items
                        if LabelSelector.from_dict((b.get("spec") or {}).get("selector") or {}).matches(labels)
                        and (b.get("spec") or {}).get("selector") is not None]
            if len(matching) > 1:
                raise st.internal("This pod has more than one PodDisruptionBudget, which the eviction subresource "
                                  "does not support.")
            if matching:
                await _check_budget(call, matching[0], pod)
        options = member(body, "deleteOptions")
        preconditions = member(options, "preconditions") or None
        grace = options.get("gracePeriodSeconds")
        await call.registry.delete(call.resource, call.cluster, call.namespace, call.name,
                                   preconditions=preconditions, dry_run=call.dry_run, ctx=call.ctx,
                                   grace_period=grace if isinstance(grace, int) and not isinstance(grace, bool)
                                   else None)
        return action_created()

    return Action("eviction", ("create",), evict, ("policy", "v1", "Eviction"))


async def _check_budget(call: ActionCall, budget: Obj, pod: Obj) -> None:
    """The disruption controller's arithmetic, done at the moment of eviction: pods the budget selects,
    how many of them are Ready, and how many must stay Ready."""
    spec = budget.get("spec") or {}
    selector = LabelSelector.from_dict(spec.get("selector") or {})
    pods = await call.registry.list(call.resource, call.cluster, call.namespace)
    selected = [p for p in pods.items if selector.matches(p["metadata"].get("labels") or {})
                and not p["metadata"].get("deletionTimestamp")
                and (p.get("status") or {}).get("phase") not in ("Succeeded", "Failed")]
    expected = len(selected)
    healthy = sum(1 for p in selected if _ready(p))
    if spec.get("minAvailable") is not None:
        desired = _scaled(spec["minAvailable"], expected, round_up=True)
    elif spec.get("maxUnavailable") is not None:
        desired = max(0, expected - _scaled(spec["maxUnavailable"], expected, round_up=True))
    else:
        desired = expected
    name = budget["metadata"]["name"]
    if not _ready(pod):
        if healthy >= desired or spec.get("unhealthyPodEvictionPolicy") == "AlwaysAllow":
            return  # an unhealthy pod may go while the budget is met, as kube's IfHealthyBudget
    if healthy - desired <= 0:
        raise _too_many_requests(name, f"The disruption budget {name} needs {desired} healthy pods and has "
                                       f"{healthy} currently")
