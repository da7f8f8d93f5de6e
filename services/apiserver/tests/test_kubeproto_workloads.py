"""Protobuf request bodies of kube's workload types, as kubectl's typed commands send them."""

from __future__ import annotations

from typing import Any

import pytest

from kcp_apiserver.apimachinery import kubeproto


def envelope(api_version: str, kind: str, message: str, obj: dict[str, Any]) -> bytes:
    """What client-go writes: the magic prefix, then runtime.Unknown around the object's own message."""
    raw = kubeproto._encode_message(message, obj, "")
    type_meta = kubeproto._delimited(1, api_version.encode()) + kubeproto._delimited(2, kind.encode())
    return kubeproto.MAGIC + kubeproto._delimited(1, type_meta) + kubeproto._delimited(2, raw)


def test_a_deployment_decodes_with_int_or_string_quantities_and_pointers() -> None:
    obj = {"metadata": {"name": "web", "labels": {"app": "web"}},
           "spec": {"replicas": 3, "selector": {"matchLabels": {"app": "web"}},
                    "template": {"metadata": {"labels": {"app": "web"}},
                                 "spec": {"containers": [{"name": "nginx", "image": "nginx:1.25",
                                                          "ports": [{"containerPort": 8080}],
                                                          "resources": {"limits": {"cpu": "500m"}}}]}},
                    "strategy": {"type": "RollingUpdate",
                                 "rollingUpdate": {"maxUnavailable": 0, "maxSurge": "50%"}}}}
    decoded = kubeproto.decode(envelope("apps/v1", "Deployment", "Deployment", obj))
    spec = decoded["spec"]
    assert (decoded["apiVersion"], decoded["kind"], spec["replicas"]) == ("apps/v1", "Deployment", 3)
    assert spec["strategy"]["rollingUpdate"] == {"maxUnavailable": 0, "maxSurge": "50%"}
    container = spec["template"]["spec"]["containers"][0]
    assert container["ports"] == [{"containerPort": 8080}]
    assert container["resources"] == {"limits": {"cpu": "500m"}}
    assert decoded["status"] == {}  # a non-pointer struct is always there, as Go's JSON writes it


def test_inline_fields_land_in_their_parent() -> None:
    obj = {"metadata": {"name": "front"}, "spec": {"rules": [{"host": "example.com", "http": {"paths": [
        {"path": "/", "pathType": "Prefix", "backend": {"service": {"name": "web", "port": {"number": 80}}}}]}}]}}
    decoded = kubeproto.decode(envelope("networking.k8s.io/v1", "Ingress", "Ingress", obj))
    assert decoded["spec"]["rules"] == obj["spec"]["rules"]


def test_a_service_port_target_can_be_a_name() -> None:
    obj = {"metadata": {"name": "s"}, "spec": {"ports": [{"name": "http", "port": 80, "targetPort": "web"}]}}
    decoded = kubeproto.decode(envelope("v1", "Service", "Service", obj))
    assert decoded["spec"]["ports"] == [{"name": "http", "port": 80, "targetPort": "web"}]


def test_workload_kinds_are_read_never_written() -> None:
    """Their tables list what clients send, not every field: the server answers them in JSON."""
    assert not kubeproto.supports("apps/v1", "Deployment")
    with pytest.raises(ValueError):
        kubeproto.encode({"apiVersion": "apps/v1", "kind": "Deployment"})


# `kubectl autoscale deployment web --min=2 --max=5 --cpu=50%` (kubectl 1.35), as sent (`-v=8` hex dump)
KUBECTL_AUTOSCALE = bytes.fromhex(
    "6b3873000a290a0e6175746f7363616c696e672f76321217486f72697a6f6e74616c506f644175746f7363616c6572"
    "12610a130a0377656212001a0022002a0032003800420012440a1a0a0a4465706c6f796d656e7412037765621a07"
    "617070732f76311002180522220a085265736f7572636522160a03637075120f0a0b5574696c697a6174696f6e2032"
    "1a04180020001a002200")


def test_kubectl_autoscales_bodies_decode_as_an_autoscaling_v2_hpa() -> None:
    decoded = kubeproto.decode(KUBECTL_AUTOSCALE)
    assert (decoded["apiVersion"], decoded["kind"]) == ("autoscaling/v2", "HorizontalPodAutoscaler")
    assert decoded["spec"] == {
        "scaleTargetRef": {"kind": "Deployment", "name": "web", "apiVersion": "apps/v1"},
        "minReplicas": 2, "maxReplicas": 5,
        "metrics": [{"type": "Resource", "resource": {"name": "cpu", "target": {"type": "Utilization",
                                                                                 "averageUtilization": 50}}}]}


def test_an_autoscaling_v1_hpa_decodes_with_its_cpu_target() -> None:
    obj = {"metadata": {"name": "web"}, "spec": {"scaleTargetRef": {"kind": "ReplicaSet", "name": "web"},
                                                 "maxReplicas": 3, "targetCPUUtilizationPercentage": 70}}
    decoded = kubeproto.decode(envelope("autoscaling/v1", "HorizontalPodAutoscaler",
                                        "autoscaling.v1.HorizontalPodAutoscaler", obj))
    assert decoded["spec"] == obj["spec"]
