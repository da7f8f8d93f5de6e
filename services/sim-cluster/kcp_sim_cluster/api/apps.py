"""apps/v1: Deployments, ReplicaSets, StatefulSets and DaemonSets, with kube's columns, defaults and
validation (kcp_apiserver.kubetypes), status and (but for DaemonSets, as in kube) scale; and the
ControllerRevisions that StatefulSet and DaemonSet history is kept in."""

from __future__ import annotations

from kcp_apiserver.embedding import (
    AGE,
    DAEMON_SET,
    DEPLOYMENT,
    NAME,
    REPLICA_SET,
    STATEFUL_SET,
    BuiltinScale,
    Column,
    Obj,
    Resource,
    kube_resource,
)
from kcp_sim_cluster.api.strategy import kube_strategy

SCALE = BuiltinScale()


def _empty_status(obj: Obj) -> None:
    obj["status"] = {}


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


def resources(release: str) -> tuple[Resource, ...]:
    return (
        kube_resource("apps", "v1", "Deployment", "deployments", namespaced=True, release=release,
                      short_names=("deploy",), categories=("all",), has_status=True, tracks_generation=True,
                      columns=DEPLOYMENT, scale=SCALE,
                      strategy=kube_strategy("apps", "v1", "Deployment", release, on_create=_empty_status)),
        kube_resource("apps", "v1", "ReplicaSet", "replicasets", namespaced=True, release=release,
                      short_names=("rs",), categories=("all",), has_status=True, tracks_generation=True,
                      columns=REPLICA_SET, scale=SCALE,
                      strategy=kube_strategy("apps", "v1", "ReplicaSet", release,
                                             on_create=lambda o: o.__setitem__("status", {"replicas": 0}))),
        kube_resource("apps", "v1", "StatefulSet", "statefulsets", namespaced=True, release=release,
                      short_names=("sts",), categories=("all",), has_status=True, tracks_generation=True,
                      columns=STATEFUL_SET, scale=SCALE,
                      strategy=kube_strategy("apps", "v1", "StatefulSet", release,
                                             on_create=lambda o: o.__setitem__("status", {"replicas": 0,
                                                                                          "availableReplicas": 0}))),
        kube_resource("apps", "v1", "DaemonSet", "daemonsets", namespaced=True, release=release,
                      short_names=("ds",), categories=("all",), has_status=True, tracks_generation=True,
                      columns=DAEMON_SET,
                      strategy=kube_strategy("apps", "v1", "DaemonSet", release,
                                             on_create=lambda o: o.__setitem__("status", {
                                                 "currentNumberScheduled": 0, "numberMisscheduled": 0,
                                                 "desiredNumberScheduled": 0, "numberReady": 0}))),
        kube_resource("apps", "v1", "ControllerRevision", "controllerrevisions", namespaced=True, release=release,
                      columns=CONTROLLER_REVISION_COLUMNS,
                      strategy=kube_strategy("apps", "v1", "ControllerRevision", release)),
    )
