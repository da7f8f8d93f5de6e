"""What a pod's calls to Services resolve to: every name of each Service, its ports and its ready endpoints, each
with the pod that answers there (network.py reads it; shell.py's `wget` uses it). Pure data."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field


@dataclass(frozen=True)
class Endpoint:
    """One ready address of a Service, with the pod that answers there (None: nobody does)."""

    ip: str
    ports: Mapping[str, int]  # the Service port's name -> the endpoint's port
    answer: str | None


@dataclass(frozen=True)
class Route:
    """A Service as a caller in one namespace reaches it."""

    name: str
    namespace: str
    cluster_ip: str
    ports: Mapping[int, str]  # the Service's port -> its name
    endpoints: tuple[Endpoint, ...]


@dataclass(frozen=True)
class Directory:
    """The Services a pod reaches, by every name that resolves to them."""

    routes: Mapping[str, Route] = field(default_factory=dict)

    def resolve(self, host: str) -> Route | None:
        return self.routes.get(host.rstrip(".").lower())


def names_of(service: str, namespace: str, caller_namespace: str, cluster_ip: str) -> list[str]:
    names = [f"{service}.{namespace}", f"{service}.{namespace}.svc", f"{service}.{namespace}.svc.cluster.local"]
    if namespace == caller_namespace:
        names.append(service)
    if cluster_ip and cluster_ip != "None":
        names.append(cluster_ip)
    return names
