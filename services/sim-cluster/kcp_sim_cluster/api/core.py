"""core/v1 workload types: Pods and Nodes (kcp's own core types come from the apiserver package)."""

from __future__ import annotations

from kcp_apiserver.registry.builtin.declare import kube_resource
from kcp_apiserver.registry.resource import Resource


def resources(release: str) -> tuple[Resource, ...]:
    return (
        kube_resource("", "v1", "Pod", "pods", namespaced=True, release=release, short_names=("po",),
                      categories=("all",), has_status=True),
        kube_resource("", "v1", "Node", "nodes", namespaced=False, release=release, short_names=("no",),
                      has_status=True),
    )
