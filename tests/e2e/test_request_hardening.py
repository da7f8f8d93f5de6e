"""Requests kube refuses: YAML alias bombs, bodies in media types it does not read, list options it does
not know, methods it does not serve; and /metrics, which kube shows only to an authenticated, authorized caller."""

from __future__ import annotations

from pathlib import Path

import aiohttp
from test_crds import CRD_PATH, served, wait_established, widget_crd

from api import Api, configmap
from kcp_process import KcpServer


def billion_laughs(levels: int = 9, fanout: int = 9) -> bytes:
    """A few hundred bytes of YAML whose aliases expand to fanout**levels strings."""
    lines = ["apiVersion: v1", "kind: ConfigMap", "metadata:", "  name: laughs", "a0: &a0 lol"]
    for level in range(1, levels + 1):
        refs = ",".join([f"*a{level - 1}"] * fanout)
        lines.append(f"a{level}: &a{level} [{refs}]")
    lines.append(f"data: {{k: *a{levels}}}")
    return ("\n".join(lines) + "\n").encode()


def rss_bytes(server: KcpServer) -> int:
    assert server.process is not None
    for line in Path(f"/proc/{server.process.pid}/status").read_text().splitlines():
        if line.startswith("VmRSS:"):
            return int(line.split()[1]) * 1024
    raise AssertionError("no VmRSS for the server process")


async def test_a_yaml_alias_bomb_is_refused_as_kube_refuses_it(kcp: KcpServer, api: Api, namespace: str) -> None:
    body = billion_laughs()
    assert len(body) < 512
    before = rss_bytes(kcp)
    reply = await api.post(f"/api/v1/namespaces/{namespace}/configmaps", None, raw=body,
                           content_type="application/yaml")
    assert (reply.status, reply.body["reason"]) == (400, "BadRequest"), reply.body
    assert reply.body["message"].startswith(
        "the object provided is unrecognized (must be of type ConfigMap): yaml: document contains excessive "
        "aliasing (")
    assert rss_bytes(kcp) - before < 50 * 1024 * 1024  # the expansion was never built
    modest = (b"apiVersion: v1\nkind: ConfigMap\nmetadata: {name: aliased}\n"
              b"x: &v shared\ndata: {a: *v, b: *v}\n")
    created = await api.post(f"/api/v1/namespaces/{namespace}/configmaps", None, raw=modest,
                             content_type="application/yaml")
    assert created.status == 201, created.body
    assert created.body["data"] == {"a": "shared", "b": "shared"}


async def test_a_body_in_a_media_type_kube_does_not_read_is_415(api: Api, namespace: str) -> None:
    path = f"/api/v1/namespaces/{namespace}/configmaps"
    as_text = await api.post(path, configmap("plain"), content_type="text/plain")
    assert (as_text.status, as_text.body["reason"]) == (415, "UnsupportedMediaType"), as_text.body
    assert as_text.body["message"] == ("the body of the request was in an unknown format - accepted media types "
                                       "include: application/json, application/yaml, "
                                       "application/vnd.kubernetes.protobuf")
    assert (await api.get(f"{path}/plain")).status == 404
    created = await api.post(path, configmap("json"), content_type="application/json; charset=utf-8")
    assert created.status == 201
    replaced = await api.put(f"{path}/json", {**configmap("json"), "metadata": {"name": "json"}},
                             content_type="text/plain")
    assert replaced.status == 415


async def test_a_custom_resource_body_in_protobuf_is_415(api: Api, unique: str) -> None:
    prefix, group = f"/clusters/media-{unique}", f"g{unique}.example.com"
    assert (await api.post(f"{prefix}{CRD_PATH}", widget_crd(group))).status == 201
    await wait_established(api, prefix, f"widgets.{group}")
    widgets = f"{prefix}/apis/{group}/v1/namespaces/default/widgets"
    await served(api, widgets)
    reply = await api.post(widgets, None, raw=b"k8s\x00garbage",
                           content_type="application/vnd.kubernetes.protobuf")
    assert (reply.status, reply.body["message"]) == (415, (
        "the body of the request was in an unknown format - accepted media types include: application/json, "
        "application/yaml")), reply.body


async def test_an_unknown_resource_version_match_is_kubes_invalid_list_options(api: Api, namespace: str) -> None:
    path = f"/api/v1/namespaces/{namespace}/configmaps"
    bogus = await api.get(path, params={"resourceVersion": "0", "resourceVersionMatch": "Bogus"})
    assert (bogus.status, bogus.body["reason"]) == (422, "Invalid"), bogus.body
    assert bogus.body["message"] == ('ListOptions.meta.k8s.io "" is invalid: resourceVersionMatch: Unsupported '
                                     'value: "Bogus": supported values: "Exact", "NotOlderThan", ""')
    assert bogus.body["details"] == {"group": "meta.k8s.io", "kind": "ListOptions", "causes": [
        {"reason": "FieldValueNotSupported", "field": "resourceVersionMatch",
         "message": 'Unsupported value: "Bogus": supported values: "Exact", "NotOlderThan", ""'}]}
    without_rv = await api.get(path, params={"resourceVersionMatch": "NotOlderThan"})
    assert without_rv.status == 422
    assert without_rv.body["message"] == ('ListOptions.meta.k8s.io "" is invalid: resourceVersionMatch: Forbidden: '
                                          'resourceVersionMatch is forbidden unless resourceVersion is provided')
    fine = await api.get(path, params={"resourceVersion": "0", "resourceVersionMatch": "NotOlderThan"})
    assert fine.status == 200


async def test_trace_is_405(api: Api, namespace: str) -> None:
    for path in (f"/api/v1/namespaces/{namespace}/configmaps", "/api/v1/namespaces", "/version"):
        reply = await api.request("TRACE", path)
        assert (reply.status, reply.body["reason"]) == (405, "MethodNotAllowed"), (path, reply.body)


async def test_metrics_need_a_token_while_health_and_version_stay_public(kcp: KcpServer, api: Api) -> None:
    async with aiohttp.ClientSession() as session:
        anonymous = Api(kcp, session, token="")
        for prefix in ("", "/clusters/somewhere"):
            refused = await anonymous.get(prefix + "/metrics")
            assert (refused.status, refused.body["reason"]) == (401, "Unauthorized"), prefix
            for path in ("/healthz", "/livez", "/readyz", "/version"):
                assert (await anonymous.get(prefix + path)).status == 200, prefix + path
    metrics = await api.get("/metrics")
    assert metrics.status == 200 and "apiserver_request_total" in metrics.body
