"""apps/v1 validation as kube's apps strategies run it: Deployments, ReplicaSets, StatefulSets,
DaemonSets and ControllerRevisions."""

from __future__ import annotations

from kcp_apiserver.apimachinery.status import Cause
from kcp_apiserver.kubetypes import validation as v
from kcp_apiserver.kubetypes.fields import dicts, member, spec
from kcp_apiserver.registry.resource import Obj

STATEFUL_SET_MUTABLE = ("replicas", "ordinals", "template", "updateStrategy", "persistentVolumeClaimRetentionPolicy",
                        "minReadySeconds")


def validate_deployment(obj: Obj) -> list[Cause]:
    s = spec(obj)
    causes = v.replicas(s) + v.selector_and_template(s, "deployment")
    for name in ("revisionHistoryLimit", "progressDeadlineSeconds", "minReadySeconds"):
        causes += v.non_negative(f"spec.{name}", s.get(name))
    strategy = member(s, "strategy")
    if strategy.get("type") not in ("RollingUpdate", "Recreate"):
        causes.append(v.unsupported("spec.strategy.type", strategy.get("type"), ("Recreate", "RollingUpdate")))
    elif strategy.get("type") == "Recreate" and strategy.get("rollingUpdate"):
        causes.append(Cause("FieldValueForbidden", "Forbidden: may not be specified when strategy `type` is "
                                                   "'Recreate'", "spec.strategy.rollingUpdate"))
    rolling = member(strategy, "rollingUpdate")
    path = "spec.strategy.rollingUpdate"
    causes += v.int_or_percent(f"{path}.maxUnavailable", rolling.get("maxUnavailable"), at_most_100=True)
    causes += v.int_or_percent(f"{path}.maxSurge", rolling.get("maxSurge"))
    if rolling and _zero(rolling.get("maxUnavailable")) and _zero(rolling.get("maxSurge")):
        causes.append(v.invalid("spec.strategy.rollingUpdate.maxUnavailable", rolling.get("maxUnavailable"),
                                "may not be 0 when `maxSurge` is 0"))
    return causes


def _zero(value: object) -> bool:
    return value in (0, "0", "0%")


def selector_fixed(obj: Obj, old: Obj) -> list[Cause]:
    return v.immutable_selector(spec(obj), spec(old))


def validate_replica_set(obj: Obj) -> list[Cause]:
    s = spec(obj)
    return v.replicas(s) + v.selector_and_template(s, "replicaset")


def validate_stateful_set(obj: Obj) -> list[Cause]:
    s = spec(obj)
    claims = frozenset(str(member(claim, "metadata").get("name") or "") for claim in dicts(s.get("volumeClaimTemplates")))
    causes = v.replicas(s) + v.selector_and_template(s, "statefulset", claim_volumes=claims)
    policy = s.get("podManagementPolicy")
    if policy not in ("OrderedReady", "Parallel"):
        causes.append(v.unsupported("spec.podManagementPolicy", policy, ("OrderedReady", "Parallel")))
    return causes


def validate_stateful_set_update(obj: Obj, old: Obj) -> list[Cause]:
    def fixed(s: Obj) -> Obj:
        return {k: val for k, val in s.items() if k not in STATEFUL_SET_MUTABLE}

    if fixed(spec(obj)) != fixed(spec(old)):
        return [Cause("FieldValueForbidden", "Forbidden: updates to statefulset spec for fields other than "
                                             "'replicas', 'ordinals', 'template', 'updateStrategy', "
                                             "'persistentVolumeClaimRetentionPolicy' and 'minReadySeconds' "
                                             "are forbidden", "spec")]
    return []


def validate_daemon_set(obj: Obj) -> list[Cause]:
    return v.selector_and_template(spec(obj), "daemonset")


def validate_revision_update(obj: Obj, old: Obj) -> list[Cause]:
    if obj.get("data") != old.get("data"):
        return [v.invalid("data", obj.get("data"), v.IMMUTABLE)]
    return []
