"""kcp's Service IPs: kube's core/v1 Service (built-in, or imported as a CRD) gets a cluster IP from kcp's own
range, unique per logical cluster; a tenant's hand-made CRD named services is left alone."""

from __future__ import annotations

import dataclasses
import ipaddress
from typing import Any

import pytest

from kcp_apiserver.admission.serviceips import KCP_SERVICE_CIDR, SERVICES, ServiceIPs, is_kube_service, taken_ips
from kcp_apiserver.apimachinery import status as st
from kcp_apiserver.apimachinery.request import system_context
from kcp_apiserver.registry.admission import CREATE, UPDATE, Attributes
from kcp_apiserver.server.settings import APIServerSettings

IMPORTED = dataclasses.replace(SERVICES, schema={"type": "object"}, kube_type=True)
HAND_MADE = dataclasses.replace(SERVICES, group="example.com", schema={"type": "object"})


def plugin() -> ServiceIPs:
    return ServiceIPs(None, cidr=KCP_SERVICE_CIDR)  # type: ignore[arg-type]  # admit needs neither


def service(name: str, cluster: str = "c1", **spec: Any) -> dict[str, Any]:
    return {"metadata": {"name": name, "namespace": "ns", "annotations": {"kcp.io/cluster": cluster}},
            "spec": {"type": "ClusterIP", "ports": [{"port": 80, "protocol": "TCP"}], **spec}}


async def create(p: ServiceIPs, svc: dict[str, Any], res: Any = IMPORTED) -> dict[str, Any]:
    cluster = svc["metadata"]["annotations"]["kcp.io/cluster"]
    await p.admit(Attributes(system_context(cluster), res, CREATE, "ns", svc["metadata"]["name"], svc, None))
    p._observe(svc, False)
    return svc


def test_kubes_service_is_told_from_a_tenants_crd() -> None:
    assert is_kube_service(SERVICES) and is_kube_service(IMPORTED)
    assert not is_kube_service(HAND_MADE)
    assert not is_kube_service(dataclasses.replace(SERVICES, schema={"type": "object"}))  # core group, not imported


async def test_an_imported_service_gets_an_address_of_kcps_range_and_a_crd_none() -> None:
    p = plugin()
    spec = (await create(p, service("web")))["spec"]
    assert ipaddress.ip_address(spec["clusterIP"]) in KCP_SERVICE_CIDR
    assert spec["clusterIPs"] == [spec["clusterIP"]]
    assert spec["ipFamilies"] == ["IPv4"] and spec["ipFamilyPolicy"] == "SingleStack"
    assert "clusterIP" not in (await create(p, service("widget"), HAND_MADE))["spec"]


async def test_addresses_are_unique_per_logical_cluster_and_a_taken_one_is_refused_as_kube() -> None:
    p = plugin()
    first = (await create(p, service("a")))["spec"]["clusterIP"]
    assert (await create(p, service("b")))["spec"]["clusterIP"] != first
    with pytest.raises(st.APIError) as err:
        await create(p, service("c", clusterIP=first))
    assert err.value.code == 422
    assert f"failed to allocate IP {first}: provided IP is already allocated" in err.value.message
    assert (await create(p, service("c", "c2", clusterIP=first)))["spec"]["clusterIP"] == first  # another tenant
    assert taken_ips(p, "c2") == {first}


async def test_an_address_out_of_range_headless_and_external_name() -> None:
    p = plugin()
    with pytest.raises(st.APIError) as err:
        await create(p, service("a", clusterIP="10.96.0.10"))
    assert "provided IP (10.96.0.10) is not in the valid range. The range of valid IPs is 10.255.0.0/16" in \
        err.value.message
    assert (await create(p, service("h", clusterIP="None")))["spec"]["clusterIPs"] == ["None"]
    external = (await create(p, service("x", type="ExternalName", externalName="example.com")))["spec"]
    assert "clusterIP" not in external


def test_the_range_is_a_flag_checked_at_startup() -> None:
    assert APIServerSettings().service_cluster_ip_range == str(KCP_SERVICE_CIDR)
    assert APIServerSettings(service_cluster_ip_range="10.1.0.0/24").service_cluster_ip_range == "10.1.0.0/24"
    with pytest.raises(ValueError, match="not an IPv4 CIDR"):
        APIServerSettings(service_cluster_ip_range="10.1.0.1/24")


async def test_an_external_name_service_turned_cluster_ip_gets_an_address_on_update() -> None:
    p = plugin()
    old = await create(p, service("x", type="ExternalName", externalName="example.com"))
    new = service("x", type="ClusterIP")
    await p.admit(Attributes(system_context("c1"), IMPORTED, UPDATE, "ns", "x", new, old))
    assert ipaddress.ip_address(new["spec"]["clusterIP"]) in KCP_SERVICE_CIDR
    kept = service("x", type="ClusterIP")  # a later update leaving it out keeps it
    await p.admit(Attributes(system_context("c1"), IMPORTED, UPDATE, "ns", "x", kept, new))
    assert kept["spec"]["clusterIP"] == new["spec"]["clusterIP"]
