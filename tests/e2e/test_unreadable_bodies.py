"""Unreadable bodies get kube's answers, and discovery documents kube's key order, over the wire."""

from __future__ import annotations

from api import Api
from kcp_process import KcpServer, run_kubectl

POD_YAML = """apiVersion: v1
kind: Pod
metadata:
  name: not-a-namespace
spec:
  containers:
  - name: c
    image: nginx
"""


def test_kubectl_create_raw_of_yaml_is_an_unrecognized_object(kcp: KcpServer, tmp_path) -> None:  # type: ignore[no-untyped-def]
    """kube's own test-cmd: posting a YAML file as raw bytes to the namespaces collection."""
    pod = tmp_path / "pod.yaml"
    pod.write_text(POD_YAML)
    result = run_kubectl(kcp, "create", "--raw", "/api/v1/namespaces", "-f", str(pod), check=False)
    assert result.returncode != 0
    assert ("Error from server (BadRequest): the object provided is unrecognized (must be of type Namespace): "
            "couldn't get version/kind; json parse error: invalid character 'a' looking for beginning of value "
            "(61706956657273696f6e3a2076310a6b696e643a20506f640a6d65746164 ...)") in result.stderr


async def test_garbage_creates_and_updates_are_400_with_kubes_message(api: Api, namespace: str) -> None:
    created = await api.post(f"/api/v1/namespaces/{namespace}/configmaps", None, raw=b'{"kind": "ConfigMap",')
    assert (created.status, created.body["reason"]) == (400, "BadRequest")
    assert created.body["message"] == (
        "the object provided is unrecognized (must be of type ConfigMap): couldn't get version/kind; json parse "
        'error: unexpected end of JSON input ({"kind": "ConfigMap",)')
    assert (await api.post(f"/api/v1/namespaces/{namespace}/configmaps",
                           {"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": "cm"}})).status == 201
    replaced = await api.put(f"/api/v1/namespaces/{namespace}/configmaps/cm", None, raw=b"data: x: y",
                             content_type="application/yaml")
    assert (replaced.status, replaced.body["message"]) == (400, (
        "the object provided is unrecognized (must be of type ConfigMap): yaml: mapping values are not allowed "
        "in this context (646174613a20783a2079)"))


async def test_discovery_documents_keep_kubes_key_order(api: Api) -> None:
    core = await api.get("/api/v1")
    assert list(core.body) == ["kind", "apiVersion", "groupVersion", "resources"]
    configmaps = next(r for r in core.body["resources"] if r["name"] == "configmaps")
    assert list(configmaps) == ["name", "singularName", "namespaced", "kind", "verbs", "shortNames",
                                "storageVersionHash"]
    assert configmaps["storageVersionHash"] == "qFsyl6wFWjQ="
    assert list((await api.get("/api")).body) == ["kind", "versions", "serverAddressByClientCIDRs"]
    groups = await api.get("/apis")
    assert list(groups.body) == ["kind", "apiVersion", "groups"]
    assert list(groups.body["groups"][0]) == ["name", "versions", "preferredVersion"]
    accept = "application/json;g=apidiscovery.k8s.io;v=v2;as=APIGroupDiscoveryList,application/json"
    aggregated = (await api.get("/apis", headers={"Accept": accept})).body
    assert list(aggregated) == ["kind", "apiVersion", "metadata", "items"]
    resource = aggregated["items"][0]["versions"][0]["resources"][0]
    assert list(resource)[:5] == ["resource", "responseKind", "scope", "singularResource", "verbs"]
