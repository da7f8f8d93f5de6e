"""apps/v1: Deployments, ReplicaSets, StatefulSets and DaemonSets, with kube's columns, defaults,
validation, status and (but for DaemonSets, as in kube) scale; and the ControllerRevisions that
StatefulSet and DaemonSet history is kept in."""

from __future__ import annotations

from kcp_apiserver.apimachinery.status import Cause
from kcp_apiserver.registry.builtin import workloads
from kcp_apiserver.registry.builtin.declare import kube_resource
from kcp_apiserver.registry.resource import Column, Obj, Resource
from kcp_apiserver.registry.scale import BuiltinScale
from kcp_apiserver.registry.tables import AGE, NAME
from kcp_sim_cluster.api import defaults
from kcp_sim_cluster.api import validation as v
from kcp_sim_cluster.api.strategy import KubeStrategy, member, spec

SCALE = BuiltinScale()
STATEFUL_SET_MUTABLE = ("replicas", "ordinals", "template", "updateStrategy", "persistentVolumeClaimRetentionPolicy",
                        "minReadySeconds")


def _empty_status(obj: Obj) -> None:
    obj["status"] = {}


def validate_deployment(obj: Obj) -> list[Cause]:
    s = spec(obj)
    causes = v.replicas(s) + v.selector_and_template(s, "deployment")
    for name in ("revisionHistoryLimit", "progressDeadlineSeconds", "minReadySeconds"):
        causes += v._non_negative(f"spec.{name}", s.get(name))
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


def _selector_fixed(obj: Obj, old: Obj) -> list[Cause]:
    return v.immutable_selector(spec(obj), spec(old))


def validate_replica_set(obj: Obj) -> list[Cause]:
    s = spec(obj)
    return v.replicas(s) + v.selector_and_template(s, "replicaset")


def validate_stateful_set(obj: Obj) -> list[Cause]:
    s = spec(obj)
    causes = v.replicas(s) + v.selector_and_template(s, "statefulset")
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


def _revision_owner(obj: Obj) -> str:
    """kube's CONTROLLER column: `<kind>.<group>/<name>` of the controlling owner, or <none>."""
    for ref in (obj.get("metadata") or {}).get("ownerReferences") or []:
        if ref.get("controller"):
            group = str(ref.get("apiVersion", "")).rpartition("/")[0]
            kind = str(ref.get("kind", "")).lower()
            return f"{kind}.{group}/{ref.get('name', '')}" if group else f"{kind}/{ref.get('name', '')}"
    return "<none>"


CONTROLLER_REVISION_COLUMNS = (
    NAME,
    Column("Controller", "string", _revision_owner, "Controller of the object"),
    Column("Revision", "integer", lambda o: int(o.get("revision") or 0), "Revision of the ControllerRevision"),
    AGE,
)


def validate_revision_update(obj: Obj, old: Obj) -> list[Cause]:
    if obj.get("data") != old.get("data"):
        return [v.invalid("data", obj.get("data"), v.IMMUTABLE)]
    return []


def resources(release: str) -> tuple[Resource, ...]:
    minor = int(release.split(".")[1])
    return (
        kube_resource("apps", "v1", "Deployment", "deployments", namespaced=True, release=release,
                      short_names=("deploy",), categories=("all",), has_status=True, tracks_generation=True,
                      columns=workloads.DEPLOYMENT, scale=SCALE,
                      strategy=KubeStrategy(defaults.deployment, validate_deployment,
                                            validate_update=_selector_fixed, on_create=_empty_status)),
        kube_resource("apps", "v1", "ReplicaSet", "replicasets", namespaced=True, release=release,
                      short_names=("rs",), categories=("all",), has_status=True, tracks_generation=True,
                      columns=workloads.REPLICA_SET, scale=SCALE,
                      strategy=KubeStrategy(defaults.replica_set, validate_replica_set,
                                            validate_update=_selector_fixed,
                                            on_create=lambda o: o.__setitem__("status", {"replicas": 0}))),
        kube_resource("apps", "v1", "StatefulSet", "statefulsets", namespaced=True, release=release,
                      short_names=("sts",), categories=("all",), has_status=True, tracks_generation=True,
                      columns=workloads.STATEFUL_SET, scale=SCALE,
                      strategy=KubeStrategy(lambda o: defaults.stateful_set(o, minor), validate_stateful_set,
                                            validate_update=validate_stateful_set_update,
                                            on_create=lambda o: o.__setitem__("status", {"replicas": 0,
                                                                                         "availableReplicas": 0}))),
        kube_resource("apps", "v1", "DaemonSet", "daemonsets", namespaced=True, release=release,
                      short_names=("ds",), categories=("all",), has_status=True, tracks_generation=True,
                      columns=workloads.DAEMON_SET,
                      strategy=KubeStrategy(defaults.daemon_set, validate_daemon_set,
                                            validate_update=_selector_fixed,
                                            on_create=lambda o: o.__setitem__("status", {
                                                "currentNumberScheduled": 0, "numberMisscheduled": 0,
                                                "desiredNumberScheduled": 0, "numberReady": 0}))),
        kube_resource("apps", "v1", "ControllerRevision", "controllerrevisions", namespaced=True, release=release,
                      columns=CONTROLLER_REVISION_COLUMNS,
                      strategy=KubeStrategy(validate_update=validate_revision_update)),
    )
