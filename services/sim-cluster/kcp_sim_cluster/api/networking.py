"""networking.k8s.io/v1 Ingresses and discovery.k8s.io/v1 EndpointSlices (their defaults and validation
are kcp_apiserver.kubetypes')."""

from __future__ import annotations

from kcp_apiserver.embedding import Resource, kube_resource
from kcp_sim_cluster.api import columns
from kcp_sim_cluster.api.strategy import kube_strategy


def resources(release: str) -> tuple[Resource, ...]:
    return (
        kube_resource("networking.k8s.io", "v1", "Ingress", "ingresses", namespaced=True, release=release,
                      short_names=("ing",), has_status=True, tracks_generation=True, columns=columns.INGRESS,
                      strategy=kube_strategy("networking.k8s.io", "v1", "Ingress", release,
                                             on_create=lambda o: o.__setitem__("status", {"loadBalancer": {}}))),
        kube_resource("discovery.k8s.io", "v1", "EndpointSlice", "endpointslices", namespaced=True,
                      release=release, columns=columns.ENDPOINT_SLICE,
                      strategy=kube_strategy("discovery.k8s.io", "v1", "EndpointSlice", release)),
    )
