"""Cluster IP and node port allocation: from the service CIDR, never twice, freed on delete."""

from __future__ import annotations

import ipaddress
from typing import Any

import pytest

from kcp_apiserver.embedding import CREATE, UPDATE, Attributes, system_context
from kcp_apiserver.embedding import status as st
from kcp_sim_cluster.api import resource
from kcp_sim_cluster.api.serviceips import SERVICE_CIDR, ServiceIPs, taken_ips
from kcp_sim_cluster.bootstrap import kubernetes_objects
from kcp_sim_cluster.settings import SimClusterSettings

SERVICES = resource("1.37", "", "services")


def plugin(cidr: str = "10.96.0.0/12") -> ServiceIPs:
    return ServiceIPs(None, cidr=ipaddress.IPv4Network(cidr))  # type: ignore[arg-type]  # admit needs neither


def service(name: str, **spec: Any) -> dict[str, Any]:
    return {"metadata": {"name": name, "namespace": "ns", "annotations": {"kcp.io/cluster": "c1"}},
            "spec": {"type": "ClusterIP", "ports": [{"port": 80, "protocol": "TCP"}], **spec}}


async def create(p: ServiceIPs, svc: dict[str, Any], cluster: str = "c1", *, store: bool = True) -> dict[str, Any]:
    await p.admit(Attributes(system_context(cluster), SERVICES, CREATE, "ns", svc["metadata"]["name"], svc, None))
    if store:
        svc["metadata"]["annotations"]["kcp.io/cluster"] = cluster
        p._observe(svc, False)
    return svc


async def test_addresses_are_from_the_cidr_and_distinct() -> None:
    p = plugin()
    ips = {(await create(p, service(f"s{i}")))["spec"]["clusterIP"] for i in range(50)}
    assert len(ips) == 50
    assert all(ipaddress.ip_address(ip) in SERVICE_CIDR for ip in ips)
    assert taken_ips(p, "c1") == ips


async def test_a_full_range_is_refused_and_a_delete_frees_an_address() -> None:
    p = plugin("10.0.0.0/30")  # two usable addresses, the first the `kubernetes` Service's
    first = await create(p, service("a"))
    assert first["spec"]["clusterIP"] == "10.0.0.2"
    with pytest.raises(st.APIError) as err:
        await create(p, service("b"))
    assert err.value.code == 422 and "range is full" in err.value.message
    p._observe(first, True)
    again = await create(p, service("c"))
    assert again["spec"]["clusterIP"] == first["spec"]["clusterIP"]
    kubernetes = await create(p, service("kubernetes", clusterIP="10.0.0.1"))  # asked for by name: kube's own
    assert kubernetes["spec"]["clusterIP"] == "10.0.0.1"


async def test_an_address_in_flight_is_not_handed_out_twice() -> None:
    p = plugin("10.0.0.0/29")
    for name in "abcde":  # five addresses besides the first
        await create(p, service(name), store=False)
    with pytest.raises(st.APIError):
        await create(p, service("f"), store=False)


async def test_requested_addresses_are_checked() -> None:
    p = plugin()
    taken = (await create(p, service("a")))["spec"]["clusterIP"]
    with pytest.raises(st.APIError) as err:
        await create(p, service("b", clusterIP=taken))
    assert err.value.message == (f'Service "b" is invalid: spec.clusterIPs: Invalid value: []string{{"{taken}"}}: '
                                 f"failed to allocate IP {taken}: provided IP is already allocated")
    with pytest.raises(st.APIError) as err:
        await create(p, service("c", clusterIP="192.168.1.1"))
    assert "The range of valid IPs is 10.96.0.0/12" in err.value.message
    with pytest.raises(st.APIError) as err:
        await create(p, service("d", clusterIP="nonsense"))
    assert "must be a valid IP address" in err.value.message


async def test_clusters_have_their_own_ranges() -> None:
    p = plugin("10.0.0.0/30")
    a = await create(p, service("a"), "c1")
    b = await create(p, service("a"), "c2", store=True)
    assert a["spec"]["clusterIP"] in {"10.0.0.1", "10.0.0.2"} and b["spec"]["clusterIP"] in {"10.0.0.1", "10.0.0.2"}


async def test_headless_and_external_name_services_get_no_address() -> None:
    p = plugin()
    headless = await create(p, service("h", clusterIP="None"))
    assert (headless["spec"]["clusterIP"], headless["spec"]["clusterIPs"]) == ("None", ["None"])
    external = await create(p, service("e", type="ExternalName", externalName="example.com"))
    assert "clusterIP" not in external["spec"]
    assert taken_ips(p, "c1") == set()


async def test_an_update_keeps_the_address_and_may_not_change_it() -> None:
    p = plugin()
    old = await create(p, service("a", type="NodePort"))
    port = old["spec"]["ports"][0]["nodePort"]
    assert 30000 <= port <= 32767
    new = service("a", type="NodePort")  # an update that leaves the allocated fields out
    await p.admit(Attributes(system_context("c1"), SERVICES, UPDATE, "ns", "a", new, old))
    assert new["spec"]["clusterIP"] == old["spec"]["clusterIP"]
    assert new["spec"]["ports"][0]["nodePort"] == port
    changed = service("a", clusterIP="10.96.0.7")
    with pytest.raises(st.APIError) as err:
        await p.admit(Attributes(system_context("c1"), SERVICES, UPDATE, "ns", "a", changed, old))
    assert 'spec.clusterIP: Invalid value: "10.96.0.7": field is immutable' in err.value.message


async def test_a_service_become_node_port_gets_a_node_port() -> None:
    p = plugin()
    old = await create(p, service("a"))
    assert "nodePort" not in old["spec"]["ports"][0]
    new = service("a", type="NodePort")
    await p.admit(Attributes(system_context("c1"), SERVICES, UPDATE, "ns", "a", new, old))
    assert 30000 <= new["spec"]["ports"][0]["nodePort"] <= 32767


def test_the_sims_range_is_kubes_default_and_the_kubernetes_service_takes_its_first_address() -> None:
    assert SimClusterSettings().service_cluster_ip_range == str(SERVICE_CIDR) == "10.96.0.0/12"
    (_, _, svc), *_ = kubernetes_objects("127.0.0.1", 7000, ipaddress.IPv4Network("10.50.0.0/16"))
    assert svc["spec"]["clusterIP"] == "10.50.0.1"
