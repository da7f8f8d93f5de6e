"""The endpoints and EndpointSlice controllers: a Service's backends follow its pods.

For every Service with a selector: pods of its namespace that match, have an IP and are not finished.
Endpoints lists ready ones under `addresses`, the others under `notReadyAddresses` (all under
`addresses` with publishNotReadyAddresses); pods being deleted are left out. EndpointSlices (at most
`SLICE_SIZE` endpoints each, kube's default) carry every such pod with its ready, serving and
terminating conditions, owned by the Service so the garbage collector removes them with it; the
Endpoints object, like kube's, is deleted by this controller when its Service goes.
"""

from __future__ import annotations

from typing import Any

import structlog

from kcp_apiserver.embedding import LabelSelector, Resource
from kcp_sim_cluster.controlplane.base import SimController
from kcp_sim_cluster.controlplane.informer import cluster_of, index_value, key_of
from kcp_sim_cluster.controlplane.objects import Obj, is_deleting, labels, owner_reference
from kcp_sim_cluster.controlplane.podutil import is_ready, is_terminal, node_name
from kcp_sim_cluster.controlplane.runtime import Sim
from kcpcommon.controller import Result
from kcpcommon.keys import ObjectKey
from kcpcommon.serviceports import endpoint_ports

log = structlog.get_logger("sim.endpoints")

SLICE_SIZE = 100
SERVICE_NAME_LABEL = "kubernetes.io/service-name"
MANAGED_BY_LABEL = "endpointslice.kubernetes.io/managed-by"
MANAGED_BY = "endpointslice-controller.k8s.io"


def _selector(svc: Obj) -> dict[str, str] | None:
    selector = (svc.get("spec") or {}).get("selector")
    return dict(selector) if selector else None


def _reference(pod: Obj) -> dict[str, Any]:
    meta = pod["metadata"]
    return {"kind": "Pod", "namespace": meta.get("namespace", ""), "name": meta["name"], "uid": meta.get("uid", "")}


def _pod_ip(pod: Obj) -> str:
    return str((pod.get("status") or {}).get("podIP") or "")


class EndpointsController(SimController):
    name = "sim-endpoints"
    needs = ("services", "pods", "endpoints", "endpointslices")
    workers = 2

    def __init__(self, sim: Sim) -> None:
        super().__init__(sim)
        self.ep_res: Resource = sim.resource("endpoints")  # type: ignore[assignment]
        self.slice_res: Resource = sim.resource("endpointslices")  # type: ignore[assignment]

    def wire(self) -> None:
        self.sim.informer("services").add_handler(lambda old, new: self.enqueue(new if new is not None else old))
        self.sim.informer("pods").add_handler(self._on_pod)
        self.sim.informer("endpointslices").add_index(
            "service", lambda o: [f"{cluster_of(o)}/{o['metadata'].get('namespace', '')}/{labels(o)[SERVICE_NAME_LABEL]}"]
            if labels(o).get(MANAGED_BY_LABEL) == MANAGED_BY and labels(o).get(SERVICE_NAME_LABEL) else [])
        self.sim.informer("endpointslices").add_handler(self._on_owned)
        self.sim.informer("endpoints").add_handler(self._on_owned)

    def _on_owned(self, old: Obj | None, new: Obj | None) -> None:
        obj = new if new is not None else old
        assert obj is not None
        name = labels(obj).get(SERVICE_NAME_LABEL) if obj.get("kind") == "EndpointSlice" else obj["metadata"]["name"]
        if name:
            self.controller.enqueue(ObjectKey(cluster_of(obj), obj["metadata"].get("namespace", ""), name))

    def _on_pod(self, old: Obj | None, new: Obj | None) -> None:
        if old is not None and new is not None and labels(old) == labels(new) and _pod_ip(old) == _pod_ip(new) \
                and is_ready(old) == is_ready(new) and is_deleting(old) == is_deleting(new) \
                and is_terminal(old) == is_terminal(new):
            return  # nothing an endpoint shows has changed
        pod = new if new is not None else old
        assert pod is not None
        cluster, namespace = cluster_of(pod), pod["metadata"].get("namespace", "")
        for svc in self.sim.informer("services").by_index("namespace", index_value(cluster, namespace)):
            selector = _selector(svc)
            if selector is None:
                continue
            match = LabelSelector.from_dict({"matchLabels": selector})
            if any(p is not None and match.matches(labels(p)) for p in (old, new)):
                self.enqueue_soon(key_of(svc))

    async def reconcile(self, key: ObjectKey) -> Result | None:
        svc = self.sim.informer("services").get(key)
        endpoints = self.sim.informer("endpoints").get(key)
        if svc is None:
            if endpoints is not None:
                await self.sim.delete(self.ep_res, endpoints)
            return None
        selector = _selector(svc)
        if selector is None:
            return None  # endpoints of a Service without a selector are the user's
        match = LabelSelector.from_dict({"matchLabels": selector})
        pods = [p for p in self.sim.informer("pods").by_index("namespace", index_value(key.cluster, key.namespace))
                if match.matches(labels(p)) and _pod_ip(p) and not is_terminal(p)]
        pods.sort(key=lambda p: (_pod_ip(p), p["metadata"]["name"]))
        await self._endpoints(key, svc, endpoints, pods)
        await self._slices(key, svc, pods)
        return None

    async def _endpoints(self, key: ObjectKey, svc: Obj, current: Obj | None, pods: list[Obj]) -> None:
        publish = bool((svc.get("spec") or {}).get("publishNotReadyAddresses"))
        groups: dict[tuple[tuple[str, int, str], ...], dict[str, list[dict[str, Any]]]] = {}
        for pod in pods:
            if is_deleting(pod) and not publish:
                continue
            ports = endpoint_ports(svc, pod)
            if not ports and (svc.get("spec") or {}).get("ports"):
                continue
            address = {"ip": _pod_ip(pod), "targetRef": _reference(pod)}
            if node_name(pod):
                address["nodeName"] = node_name(pod)
            group = groups.setdefault(ports, {"addresses": [], "notReadyAddresses": []})
            group["addresses" if publish or is_ready(pod) else "notReadyAddresses"].append(address)
        subsets = []
        for ports, group in groups.items():
            subset: dict[str, Any] = {k: v for k, v in group.items() if v}
            if ports:
                subset["ports"] = [{**({"name": n} if n else {}), "port": p, "protocol": proto} for n, p, proto in ports]
            subsets.append(subset)
        wanted_labels = {**labels(svc)}
        if (svc.get("spec") or {}).get("clusterIP") == "None":
            wanted_labels["service.kubernetes.io/headless"] = ""
        if current is None:
            body: dict[str, Any] = {"apiVersion": "v1", "kind": "Endpoints",
                                    "metadata": {"name": key.name, "namespace": key.namespace,
                                                 "labels": wanted_labels}}
            if subsets:
                body["subsets"] = subsets
            await self.sim.create(self.ep_res, key.cluster, key.namespace, body)
            return
        if (current.get("subsets") or []) == subsets and labels(current) == wanted_labels:
            return

        def update(obj: dict[str, Any]) -> None:
            obj["metadata"]["labels"] = wanted_labels
            if subsets:
                obj["subsets"] = subsets
            else:
                obj.pop("subsets", None)

        await self.sim.patch(self.ep_res, current, update)

    async def _slices(self, key: ObjectKey, svc: Obj, pods: list[Obj]) -> None:
        by_ports: dict[tuple[tuple[str, int, str], ...], list[dict[str, Any]]] = {}
        for pod in pods:
            ports = endpoint_ports(svc, pod)
            ready = is_ready(pod) and not is_deleting(pod)
            endpoint: dict[str, Any] = {"addresses": [_pod_ip(pod)],
                                        "conditions": {"ready": ready, "serving": is_ready(pod),
                                                       "terminating": is_deleting(pod)},
                                        "targetRef": _reference(pod)}
            if node_name(pod):
                endpoint["nodeName"] = node_name(pod)
            by_ports.setdefault(ports, []).append(endpoint)
        wanted: list[tuple[list[dict[str, Any]], list[dict[str, Any]]]] = []
        for ports, endpoints in by_ports.items():
            port_list = [{"name": n, "port": p, "protocol": proto} for n, p, proto in ports]
            for start in range(0, len(endpoints), SLICE_SIZE):
                wanted.append((port_list, endpoints[start:start + SLICE_SIZE]))
        if not wanted:  # kube keeps one empty slice (a "placeholder") for a service without endpoints
            wanted.append(([], []))
        existing = sorted(self.sim.informer("endpointslices").by_index(
            "service", f"{key.cluster}/{key.namespace}/{key.name}"), key=lambda s: s["metadata"]["name"])
        slice_labels = {**labels(svc), SERVICE_NAME_LABEL: key.name, MANAGED_BY_LABEL: MANAGED_BY}
        for index, (slice_ports, slice_endpoints) in enumerate(wanted):
            if index < len(existing):
                current = existing[index]
                if (current.get("endpoints") or []) == slice_endpoints and (current.get("ports") or []) == slice_ports \
                        and labels(current) == slice_labels:
                    continue

                def update(obj: dict[str, Any], ports: Any = slice_ports, endpoints: Any = slice_endpoints) -> None:
                    obj["metadata"]["labels"] = slice_labels
                    obj["endpoints"] = endpoints
                    obj["ports"] = ports

                await self.sim.patch(self.slice_res, current, update)
                continue
            body = {"apiVersion": "discovery.k8s.io/v1", "kind": "EndpointSlice", "addressType": "IPv4",
                    "metadata": {"generateName": f"{key.name}-", "namespace": key.namespace, "labels": slice_labels,
                                 "ownerReferences": [{**owner_reference(svc), "apiVersion": "v1",
                                                      "kind": "Service"}]},
                    "endpoints": slice_endpoints, "ports": slice_ports}
            await self.sim.create(self.slice_res, key.cluster, key.namespace, body)
        for surplus in existing[len(wanted):]:
            await self.sim.delete(self.slice_res, surplus)
