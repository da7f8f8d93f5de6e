"""The sim's service load-balancer controller: LoadBalancer Services get an address of their cluster's slice,
keep it, and lose it when they stop being LoadBalancers."""

from __future__ import annotations

import copy
import ipaddress
from typing import Any

import pytest

from kcp_sim_cluster.controlplane.objects import Obj
from kcp_sim_cluster.controlplane.options import ControlPlaneOptions
from kcp_sim_cluster.controlplane.servicelb import AddressPool, ServiceLoadBalancer, cluster_ranges, ingress_ips
from kcpcommon.keys import CLUSTER_ANNOTATION, ObjectKey


def test_the_range_is_split_into_one_slice_per_cluster() -> None:
    assert {c: str(n) for c, n in cluster_ranges("172.18.0.0/16", ["a", "b", "c"]).items()} == {
        "a": "172.18.0.0/18", "b": "172.18.64.0/18", "c": "172.18.128.0/18"}
    assert {c: str(n) for c, n in cluster_ranges("10.1.2.0/24", ["only"]).items()} == {"only": "10.1.2.0/24"}
    with pytest.raises(ValueError, match="fewer addresses"):
        cluster_ranges("10.0.0.0/31", ["a", "b", "c"])


def test_the_lowest_free_address_goes_next_and_a_service_keeps_its_own() -> None:
    pool = AddressPool(ipaddress.IPv4Network("10.0.0.0/29"))
    a, b, c = (ObjectKey("sim", "default", n) for n in "abc")
    assert pool.allocate(a) == "10.0.0.1"  # the network address is skipped
    assert pool.allocate(b) == "10.0.0.2"
    assert pool.allocate(a) == "10.0.0.1"
    pool.release(a)
    assert pool.allocate(c) == "10.0.0.1"
    pool.take("10.0.0.3", a)  # seen in a Service's status (after a restart)
    assert pool.allocate(a) == "10.0.0.3"
    pool.take("10.0.0.3", b)  # taken already: b keeps its own
    assert pool.allocate(b) == "10.0.0.2"


def test_a_full_slice_hands_out_nothing() -> None:
    pool = AddressPool(ipaddress.IPv4Network("10.0.0.8/32"))
    assert pool.allocate(ObjectKey("sim", "", "a")) == "10.0.0.8"
    assert pool.allocate(ObjectKey("sim", "", "b")) is None


class FakeInformer:
    def __init__(self) -> None:
        self.store: dict[ObjectKey, Obj] = {}

    def get(self, key: ObjectKey) -> Obj | None:
        return self.store.get(key)


class FakeRecorder:
    def __init__(self) -> None:
        self.reasons: list[str] = []

    def record(self, obj: Obj, type_: str, reason: str, message: str, **kw: Any) -> None:
        self.reasons.append(reason)


class FakeSim:
    """What the controller uses of `Sim`: its options, the services informer, status writes and the recorder."""

    def __init__(self, clusters: tuple[str, ...]) -> None:
        self.options = ControlPlaneOptions(nodes=0, node_capacity={}, ready_delay=0, eviction_toleration=0,
                                           clusters=clusters, load_balancer_ip_range="10.9.0.0/24")
        self.services = FakeInformer()
        self.recorder = FakeRecorder()

    def resource(self, name: str) -> object:
        return object()

    def informer(self, name: str) -> FakeInformer:
        return self.services

    async def write_status(self, res: object, obj: Obj, mutate: Any) -> Obj | None:
        current = copy.deepcopy(dict(obj))
        if not mutate(current):
            return None
        self.services.store[key(current)] = current
        return current


def key(obj: Obj) -> ObjectKey:
    return ObjectKey(obj["metadata"]["annotations"][CLUSTER_ANNOTATION], "default", obj["metadata"]["name"])


def service(cluster: str, name: str, type_: str = "LoadBalancer", **spec: Any) -> dict[str, Any]:
    return {"metadata": {"name": name, "namespace": "default", "annotations": {CLUSTER_ANNOTATION: cluster}},
            "spec": {"type": type_, "ports": [{"port": 80}], **spec}}


async def test_load_balancer_services_get_an_address_of_their_clusters_slice_until_they_change_type() -> None:
    sim = FakeSim(("east", "west"))
    controller = ServiceLoadBalancer(sim)  # type: ignore[arg-type]
    for svc in (service("east", "web"), service("west", "web"), service("east", "api"),
                service("east", "plain", "ClusterIP"), service("east", "other", loadBalancerClass="example.com/lb")):
        sim.services.store[key(svc)] = svc
        await controller.reconcile(key(svc))
    shown = {f"{k.cluster}/{k.name}": ingress_ips(s) for k, s in sim.services.store.items()}
    assert shown == {"east/web": ["10.9.0.1"], "west/web": ["10.9.0.129"], "east/api": ["10.9.0.2"],
                     "east/plain": [], "east/other": []}
    assert sim.recorder.reasons.count("EnsuredLoadBalancer") == 3

    web = ObjectKey("east", "default", "web")
    back = copy.deepcopy(sim.services.store[web])
    back["spec"]["type"] = "ClusterIP"
    sim.services.store[web] = back
    await controller.reconcile(web)
    assert sim.services.store[web]["status"] == {"loadBalancer": {}}
    assert sim.recorder.reasons[-1] == "DeletedLoadBalancer"

    new = service("east", "new")
    sim.services.store[key(new)] = new
    await controller.reconcile(key(new))
    assert ingress_ips(sim.services.store[key(new)]) == ["10.9.0.1"]  # the address freed by the type change
