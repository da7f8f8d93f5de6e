"""The simulated data plane: a pod calling a Service by name, as cluster DNS and kube-proxy would route it.

A container's `wget` (shell.py) resolves `svc`, `svc.ns`, `svc.ns.svc` or `svc.ns.svc.cluster.local` (the short
form in the pod's own namespace) and the Service's cluster IP. The Service's endpoints are the ready ones of every
EndpointSlice labelled `kubernetes.io/service-name` with its name, whoever manages it (the cluster's own
controller, or kcp's remote endpoints of its pods in other clusters), as kube-proxy uses them; a request goes to
one of them at random. It is answered only when a pod of that address runs (Ready, or going but still in its
preStop hook: controlplane/kubelet.py): in this
cluster as its store holds it, elsewhere as a peer cluster reached over a flat network says
(`--network-peers NAME=KUBECONFIG,...`: Submariner or Cilium ClusterMesh would give a real one). A stale endpoint is
a failed request, as on a real network. The answer names the pod and the cluster that served it.

The directory is read when the command starts (`wget` is the one command that needs it), so a request sees the
endpoints of that moment, as a connection would.
"""

from __future__ import annotations

import asyncio
import json
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

import structlog

from kcp_apiserver.embedding import ActionCall, Obj, Resource
from kcp_apiserver.embedding import status as st
from kcp_sim_cluster.api.directory import Directory, Endpoint, Route, names_of
from kcp_sim_cluster.controlplane.podutil import is_ready

log = structlog.get_logger(__name__)

SERVICE_NAME_LABEL = "kubernetes.io/service-name"
NAMESPACE_LOCATOR = "kcp.io/namespace-locator"  # kcp's syncer: the workspace and namespace a namespace holds
PEER_TIMEOUT = 2.0  # seconds a peer cluster has to say whether a pod of an address serves


def _live(pod: Obj) -> bool:
    """A pod that answers: Running and Ready, or going but still running (its preStop hook: kubelet.py)."""
    running = (pod.get("status") or {}).get("phase") == "Running"
    return running and (is_ready(pod) or bool((pod.get("metadata") or {}).get("deletionTimestamp")))


@dataclass
class Peer:
    """Another cluster on the flat network: asked which pod, if any, serves an address."""

    name: str
    kubeconfig: str
    _factory: Any = None  # a KubeClientFactory, made on first use

    async def serving(self, ip: str) -> str | None:
        """The name of the live pod with address `ip` there (None: none, or the peer did not answer)."""
        # imported here: the client costs ~35 MiB, paid only by a cluster that has peers
        from kcpcommon.clients import KubeClientFactory
        from kcpcommon.errors import APIClientError

        try:
            if self._factory is None:
                self._factory = await KubeClientFactory.load(self.kubeconfig, name=self.name,
                                                             component="kcp-sim-cluster-network", version="v1",
                                                             request_timeout=PEER_TIMEOUT)
            async with asyncio.timeout(PEER_TIMEOUT):
                found = await self._factory.dynamic().request(
                    "GET", "/api/v1/pods", query=[("fieldSelector", f"status.podIP={ip}")])
        except (APIClientError, OSError, TimeoutError, ValueError) as exc:
            log.info("peer cluster did not answer", peer=self.name, ip=ip, error=str(exc))
            return None
        for pod in (found or {}).get("items") or []:
            if _live(pod):
                return str(pod["metadata"]["name"])
        return None

    async def close(self) -> None:
        if self._factory is not None:
            await self._factory.close()


def parse_peers(specs: str) -> list[Peer]:
    """`NAME=KUBECONFIG,...`; a ValueError names a malformed one."""
    peers = []
    for spec in filter(None, (s.strip() for s in specs.split(","))):
        name, sep, path = spec.partition("=")
        if not sep or not name or not path:
            raise ValueError(f"--network-peers {spec!r}: NAME=KUBECONFIG expected")
        peers.append(Peer(name, path))  # read on first use: a peer started after this cluster is fine
    return peers


@dataclass
class Network:
    """This cluster's place on the network: its name in answers, and its peers."""

    name: str = ""  # what answers call this cluster; "": its logical cluster's name (a process serving several)
    peers: Sequence[Peer] = ()

    async def directory(self, call: ActionCall, services: Resource, slices: Resource, pods: Resource,
                        namespace: str, alias: str = "") -> Directory:
        """The Services of `namespace` with their endpoints as of now (what a caller there resolves); `alias`: a
        second name of the namespace its Services answer to (`namespace_alias`)."""
        try:
            found = (await call.registry.list(services, call.cluster, namespace)).items
            sliced = (await call.registry.list(slices, call.cluster, namespace)).items
            local = (await call.registry.list(pods, call.cluster, namespace)).items
        except st.APIError:
            return Directory()
        by_ip = {str((p.get("status") or {}).get("podIP")): p for p in local if (p.get("status") or {}).get("podIP")}
        remote = sorted({ip for s in sliced for ip in _ready_addresses(s) if ip not in by_ip})
        answers = dict(zip(remote, await asyncio.gather(*(self._remote(ip) for ip in remote)), strict=True))
        for ip, pod in by_ip.items():
            answers[ip] = f"pod={pod['metadata']['name']} cluster={self.name or call.cluster}" if _live(pod) else None
        routes: dict[str, Route] = {}
        for svc in found:
            meta, spec = svc.get("metadata") or {}, svc.get("spec") or {}
            endpoints = [Endpoint(ip, ports, answers.get(ip)) for s in sliced
                         if (s.get("metadata", {}).get("labels") or {}).get(SERVICE_NAME_LABEL) == meta.get("name")
                         for ip, ports in _endpoints(s)]
            route = Route(str(meta.get("name")), namespace, str(spec.get("clusterIP") or ""),
                          {int(p["port"]): str(p.get("name") or "") for p in spec.get("ports") or [] if p.get("port")},
                          tuple(endpoints))
            for name in names_of(route.name, namespace, namespace, route.cluster_ip):
                routes[name] = route
            for name in names_of(route.name, alias, namespace, "") if alias else ():
                routes.setdefault(name, route)
        return Directory(routes)

    async def _remote(self, ip: str) -> str | None:
        for peer in self.peers:
            pod = await peer.serving(ip)
            if pod is not None:
                return f"pod={pod} cluster={peer.name}"
        return None

    async def close(self) -> None:
        for peer in self.peers:
            await peer.close()


def namespace_alias(namespace: Obj) -> str:
    """The name a namespace's workloads know it by when kcp's syncer made it (`kcp-<hash>` for a workspace's
    `default`): kcp's per-workspace DNS resolves `svc.default` there, and so does this data plane. Read from the
    syncer's namespace locator annotation; "" for any other namespace."""
    text = ((namespace.get("metadata") or {}).get("annotations") or {}).get(NAMESPACE_LOCATOR)
    try:
        locator = json.loads(text) if isinstance(text, str) else None
    except ValueError:
        return ""
    name = locator.get("namespace") if isinstance(locator, dict) else None
    return name if isinstance(name, str) else ""


def _ready_addresses(endpoint_slice: Obj) -> list[str]:
    return [ip for ip, _ in _endpoints(endpoint_slice)]


def _endpoints(endpoint_slice: Obj) -> list[tuple[str, dict[str, int]]]:
    """(address, port name -> port) of each ready endpoint of a slice."""
    ports = {str(p.get("name") or ""): int(p["port"]) for p in endpoint_slice.get("ports") or [] if p.get("port")}
    found: list[tuple[str, dict[str, int]]] = []
    for endpoint in endpoint_slice.get("endpoints") or []:
        conditions: Mapping[str, Any] = endpoint.get("conditions") or {}
        if conditions.get("ready") is False:
            continue
        for address in endpoint.get("addresses") or []:
            found.append((str(address), ports))
    return found
