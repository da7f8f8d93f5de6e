"""apps/v1: Deployments, ReplicaSets, StatefulSets and DaemonSets, with kube's columns."""

from __future__ import annotations

from kcp_apiserver.registry.builtin import workloads
from kcp_apiserver.registry.builtin.declare import kube_resource
from kcp_apiserver.registry.resource import Resource


def resources(release: str) -> tuple[Resource, ...]:
    return (
        kube_resource("apps", "v1", "Deployment", "deployments", namespaced=True, release=release,
                      short_names=("deploy",), categories=("all",), has_status=True, tracks_generation=True,
                      columns=workloads.DEPLOYMENT),
        kube_resource("apps", "v1", "ReplicaSet", "replicasets", namespaced=True, release=release,
                      short_names=("rs",), categories=("all",), has_status=True, tracks_generation=True,
                      columns=workloads.REPLICA_SET),
    )
