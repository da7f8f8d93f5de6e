"""kube's ResourceQuota admission over stored quotas: an update is charged what it grows (a Service turned
LoadBalancer), refused in kube's words past the quota, and charged nothing when it grows nothing."""

from __future__ import annotations

from typing import Any

import pytest

from kcp_apiserver.apimachinery.request import RequestContext, RequestInfo
from kcp_apiserver.embedding import CREATE, UPDATE, Attributes, Resource, status
from kcp_apiserver.storage.keys import object_key
from kcp_apiserver.storage.memory import MemoryStorage
from kcp_sim_cluster.api import resource
from kcp_sim_cluster.api.policylister import PolicyLister
from kcp_sim_cluster.api.quota import QuotaAdmission, resource_quotas, update_usage

RELEASE = "1.35"


def service(kind: str = "ClusterIP") -> dict[str, Any]:
    return {"metadata": {"name": "web", "namespace": "ns", "resourceVersion": "5"},
            "spec": {"type": kind, "ports": [{"port": 80}]}}


def attrs(res: Resource, operation: str, obj: dict[str, Any], old: dict[str, Any] | None) -> Attributes:
    ctx = RequestContext(info=RequestInfo(cluster="admin", path="/"))
    return Attributes(ctx=ctx, resource=res, operation=operation, namespace="ns", name="web", obj=obj, old=old)


async def admission_with(used: dict[str, str]) -> tuple[QuotaAdmission, MemoryStorage, str]:
    storage, quotas = MemoryStorage(), resource_quotas(RELEASE)
    key = object_key(quotas.prefix, "admin", "ns", "q")
    await storage.create(key, {"metadata": {"name": "q", "namespace": "ns"},
                               "spec": {"hard": {"services.loadbalancers": "1", "services": "5"}},
                               "status": {"hard": {"services.loadbalancers": "1", "services": "5"}, "used": used}})
    return QuotaAdmission(storage, PolicyLister(storage, quotas, None)), storage, key


def test_an_update_is_charged_only_what_it_grows() -> None:
    assert update_usage("", "services", service("LoadBalancer"), service()) == {
        "services.loadbalancers": 1, "services.nodeports": 1}
    assert update_usage("", "services", service(), service("LoadBalancer")) == {}  # no credit
    claim = {"spec": {"resources": {"requests": {"storage": "2Gi"}}}}
    assert update_usage("", "persistentvolumeclaims", claim, {"spec": {"resources": {"requests": {
        "storage": "1Gi"}}}}) == {"requests.storage": 2**30}
    assert update_usage("", "configmaps", {"data": {"a": "b"}}, {}) == {}  # counts charge creates only


async def test_a_service_turned_load_balancer_is_charged_and_refused_past_the_quota() -> None:
    services = resource(RELEASE, "", "services")
    admission, storage, key = await admission_with({"services.loadbalancers": "0", "services": "1"})
    await admission.validate(attrs(services, UPDATE, service("LoadBalancer"), service()))
    assert (await storage.get(key)).obj["status"]["used"] == {"services.loadbalancers": "1", "services": "1"}

    with pytest.raises(status.APIError) as refused:
        await admission.validate(attrs(services, UPDATE, service("LoadBalancer"), service()))
    assert refused.value.code == 403
    assert "exceeded quota: q, requested: services.loadbalancers=1, used: services.loadbalancers=1, " \
           "limited: services.loadbalancers=1" in str(refused.value)


async def test_an_update_that_grows_nothing_is_admitted_at_a_full_quota() -> None:
    services = resource(RELEASE, "", "services")
    admission, _, _ = await admission_with({"services.loadbalancers": "1", "services": "5"})
    await admission.validate(attrs(services, UPDATE, service("LoadBalancer"), service("LoadBalancer")))
    with pytest.raises(status.APIError):
        await admission.validate(attrs(services, CREATE, service(), None))  # a create is still counted
