"""A client's bad input is a 4xx Status, never a 500: malformed metadata, deep nesting, odd tokens.

One table of malformed values is thrown at every metadata field (and some body fields) of a
ConfigMap and a custom resource, by create, update and merge patch, over real HTTP.
"""

from __future__ import annotations

import asyncio
import base64
import json
import time
from typing import Any

import pytest

from api import Api, Reply

CRD_PATH = "/apis/apiextensions.k8s.io/v1/customresourcedefinitions"
MAX_DEPTH = 250  # the server's limit on an object's nesting (see apimachinery/jsonvalues.py)
DEPTH_MESSAGE = "json parse error: exceeded max depth"


def nested(levels: int, leaf: str = '"x"') -> str:
    """JSON text of `levels` objects nested in one another (built as text: json.dumps recurses)."""
    return '{"a":' * levels + leaf + "}" * levels


def thing_body(name: str, spec_json: str, group: str, extra: str = "") -> bytes:
    return (f'{{"apiVersion":"{group}/v1","kind":"Thing","metadata":{{"name":"{name}"}},'
            f'"spec":{spec_json}{extra}}}').encode()


def thing_crd(group: str) -> dict[str, Any]:
    schema = {"type": "object", "properties": {
        "spec": {"type": "object", "x-kubernetes-preserve-unknown-fields": True},
        "strict": {"type": "object", "properties": {"a": {"type": "string"}}},
        "size": {"type": "integer"}}}
    return {"apiVersion": "apiextensions.k8s.io/v1", "kind": "CustomResourceDefinition",
            "metadata": {"name": f"things.{group}"},
            "spec": {"group": group, "scope": "Namespaced",
                     "names": {"plural": "things", "singular": "thing", "kind": "Thing"},
                     "versions": [{"name": "v1", "served": True, "storage": True,
                                   "schema": {"openAPIV3Schema": schema}}]}}


@pytest.fixture
async def things(api: Api, unique: str) -> tuple[str, str]:
    """A logical cluster serving the `things` CRD; returns (path prefix, group)."""
    prefix, group = f"/clusters/bad-{unique}", f"g{unique}.example.com"
    assert (await api.post(f"{prefix}{CRD_PATH}", thing_crd(group))).status == 201
    deadline = time.monotonic() + 10
    while (await api.get(f"{prefix}/apis/{group}/v1/namespaces/default/things")).status != 200:
        assert time.monotonic() < deadline, "the things CRD was never served"
        await asyncio.sleep(0.05)
    return prefix, group


async def test_a_too_deep_custom_resource_is_refused_and_lists_keep_answering(api: Api, things) -> None:
    prefix, group = things
    path = f"{prefix}/apis/{group}/v1/namespaces/default/things"
    # the object's depth counts itself and spec: spec of MAX_DEPTH - 1 levels is the deepest allowed
    fits = await api.post(path, None, raw=thing_body("fits", nested(MAX_DEPTH - 1), group))
    assert fits.status == 201, fits.body
    for levels in (MAX_DEPTH, 252, 253, 254, 300, 2000):
        refused = await api.post(path, None, raw=thing_body(f"deep{levels}", nested(levels), group))
        assert (refused.status, refused.body["reason"]) == (400, "BadRequest"), (levels, refused.body)
        assert refused.body["message"].startswith(
            "the object provided is unrecognized (must be of type Thing): couldn't get version/kind; "
            f"{DEPTH_MESSAGE} ("), refused.body["message"]
    too_deep_patch = await api.patch(f"{path}/fits", None, "application/merge-patch+json",
                                     raw=('{"spec":' + nested(MAX_DEPTH) + "}").encode())
    assert (too_deep_patch.status, too_deep_patch.body["message"]) == (
        400, "the merge patch is not valid JSON: exceeded max depth")
    # a small JSON patch deepening a stored object is refused as kube refuses an undecodable patched object
    deeper = await api.patch(f"{path}/fits", [{"op": "add", "path": "/spec" + "/a" * (MAX_DEPTH - 1),
                                               "value": {"b": {"c": 1}}}], "application/json-patch+json")
    assert (deeper.status, deeper.body["reason"]) == (422, "Invalid"), deeper.body
    assert deeper.body["details"]["causes"][0]["field"] == "patch"
    assert DEPTH_MESSAGE.removeprefix("json parse error: ") in deeper.body["message"]
    for listing in (path, f"{prefix}/apis/{group}/v1/things", f"/clusters/*/apis/{group}/v1/things"):
        listed = await api.get(listing)
        assert listed.status == 200, (listing, listed.body)
        assert [i["metadata"]["name"] for i in listed.body["items"]] == ["fits"]
    table = await api.get(path, headers={"Accept": "application/json;as=Table;v=v1;g=meta.k8s.io"},
                          params={"includeObject": "Object"})
    assert table.status == 200, table.body
    as_yaml = await api.get(f"{path}/fits", headers={"Accept": "application/yaml"})
    assert as_yaml.status == 200


async def test_an_unknown_field_nested_deep_is_strict_decodings_400(api: Api, things) -> None:
    prefix, group = things
    path = f"{prefix}/apis/{group}/v1/namespaces/default/things"
    for levels, message in ((MAX_DEPTH - 2, 'strict decoding error: unknown field "strict.a.a"'),
                            (254, None)):
        reply = await api.post(path, None, params={"fieldValidation": "Strict"},
                               raw=thing_body("u", "{}", group, ',"strict":' + nested(levels)))
        assert (reply.status, reply.body["reason"]) == (400, "BadRequest"), reply.body
        if message is not None:
            assert reply.body["message"] == message
        else:
            assert DEPTH_MESSAGE in reply.body["message"]


@pytest.mark.parametrize("field", ["annotations", "labels", "finalizers", "ownerReferences", "managedFields",
                                   "generateName", "namespace", "resourceVersion", "uid", "creationTimestamp",
                                   "deletionTimestamp", "deletionGracePeriodSeconds", "generation"])
async def test_null_metadata_fields_read_as_absent(api: Api, namespace: str, field: str) -> None:
    """kube decodes null into the field's zero value, which it then omits."""
    path = f"/api/v1/namespaces/{namespace}/configmaps"
    name = field.lower()
    created = await api.post(path, {"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": name, field: None}})
    assert created.status == 201, created.body
    assert created.body["metadata"].get(field) is not None or field not in created.body["metadata"]
    replaced = await api.put(f"{path}/{name}", {"apiVersion": "v1", "kind": "ConfigMap",
                                                "metadata": {"name": name, field: None}, "data": {"k": "v"}})
    assert replaced.status == 200, replaced.body
    assert replaced.body["data"] == {"k": "v"}
    for meta in (replaced.body["metadata"], (await api.get(f"{path}/{name}")).body["metadata"]):
        assert meta.get(field, "absent") is not None


async def test_a_continue_token_out_of_range_is_kubes_400(api: Api, namespace: str) -> None:
    path = f"/api/v1/namespaces/{namespace}/configmaps"
    for name in ("a", "b"):
        assert (await api.post(path, {"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": name}})).status == 201
    issued = (await api.get(path, params={"limit": "1"})).body["metadata"]["continue"]
    real_start = json.loads(base64.urlsafe_b64decode(issued + "=" * (-len(issued) % 4)))["start"]
    assert [i["metadata"]["name"] for i in (await api.get(path, params={"limit": "1", "continue": issued})).body[
        "items"]] == ["b"]

    def token(rv: Any, start: str = real_start) -> str:
        raw = f'{{"v":"meta.k8s.io/v1","rv":{rv},"start":{json.dumps(start)}}}'
        return base64.urlsafe_b64encode(raw.encode()).decode().rstrip("=")

    cases = {
        token(2**64): "invalid continue token: continue key is not valid: json: cannot unmarshal number "
                      "18446744073709551616 into Go struct field continueToken.rv of type int64",
        token(0): "invalid continue token: continue key is not valid: incorrect encoded start resourceVersion "
                  "(version meta.k8s.io/v1)",
        token('"7"'): "invalid continue token: continue key is not valid: json: cannot unmarshal string into Go "
                      "struct field continueToken.rv of type int64",
        token(1.5): "invalid continue token: continue key is not valid: json: cannot unmarshal number 1.5 into Go "
                    "struct field continueToken.rv of type int64",
        token(5, ""): "invalid continue token: continue key is not valid: encoded start key empty "
                      "(version meta.k8s.io/v1)",
        base64.urlsafe_b64encode(b'{"v":"x","rv":5,"start":"a"}').decode():
            "invalid continue token: continue key is not valid: server does not recognize this encoded version x",
        base64.urlsafe_b64encode(b"[1]").decode():
            "invalid continue token: continue key is not valid: json: cannot unmarshal array into Go value of type "
            "storage.continueToken",
    }
    for value, message in cases.items():
        reply = await api.get(path, params={"limit": "1", "continue": value})
        assert (reply.status, reply.body["reason"], reply.body["message"]) == (400, "BadRequest", message), value
    future = await api.get(path, params={"limit": "1", "continue": token(2**63 - 1)})
    assert 400 <= future.status < 500, future.body
    garbage = await api.get(path, params={"limit": "1", "continue": "%%%"})
    assert garbage.status == 400 and garbage.body["message"].startswith(
        "invalid continue token: continue key is not valid: "), garbage.body


# -- the sweep ----------------------------------------------------------------------------------

ODD_VALUES: list[str] = [  # JSON text: what json.dumps cannot say (huge and lone-surrogate values) too
    "null", "true", "-1", "18446744073709551616", "1e400", "1.5", '""', '"\\ud800"', '"\\u0000"',
    '"' + "\u00e9" * 300 + '"', '"\\u202e\\ufeff"', "[]", "[null]", '[1,"x"]', "{}", '{"a":null}', '{"":""}',
    '{"k":1}', '{"k":{"k":"v"}}', "[{}]", '[{"uid":1}]', '[{"apiVersion":null,"kind":[],"name":{}}]',
    '[{"manager":1,"fieldsV1":"x"}]', nested(40), nested(MAX_DEPTH + 5),
]
META_FIELDS = ["name", "generateName", "namespace", "uid", "resourceVersion", "generation", "creationTimestamp",
               "deletionTimestamp", "deletionGracePeriodSeconds", "labels", "annotations", "ownerReferences",
               "finalizers", "managedFields", "selfLink"]
CONFIGMAP_FIELDS = ["data", "binaryData", "immutable", "apiVersion", "kind", "metadata"]
THING_FIELDS = ["spec", "size", "strict", "status", "apiVersion", "kind", "metadata"]


def _with_field(base: dict[str, Any], field: str, value: str, *, meta: bool) -> bytes:
    """`base` as JSON text with one (metadata) field set to the raw JSON `value`."""
    marker = "__ODD__"
    body = json.loads(json.dumps(base))
    (body["metadata"] if meta else body)[field] = marker
    return json.dumps(body).replace(f'"{marker}"', value).encode()


async def test_malformed_objects_never_get_a_server_error(api: Api, namespace: str, things) -> None:
    prefix, group = things
    kinds = [
        (f"/api/v1/namespaces/{namespace}/configmaps", {"apiVersion": "v1", "kind": "ConfigMap"}, CONFIGMAP_FIELDS),
        (f"{prefix}/apis/{group}/v1/namespaces/default/things", {"apiVersion": f"{group}/v1", "kind": "Thing"},
         THING_FIELDS),
    ]
    requests: list[tuple[str, str, bytes, str]] = []
    for path, type_meta, body_fields in kinds:
        base = {**type_meta, "metadata": {"name": "target"}}
        assert (await api.post(path, base)).status == 201
        fields = [(f, True) for f in META_FIELDS] + [(f, False) for f in body_fields]
        for i, (field, meta) in enumerate(fields):
            for j, value in enumerate(ODD_VALUES):  # every field meets every value, by a verb that rotates
                verb = (i + j) % 3
                if verb == 0:
                    created = {**base, "metadata": {"name": f"n{len(requests)}"}}
                    requests.append(("POST", path, _with_field(created, field, value, meta=meta), "application/json"))
                elif verb == 1:
                    requests.append(("PUT", f"{path}/target", _with_field(base, field, value, meta=meta),
                                     "application/json"))
                else:
                    patch = _with_field({"metadata": {}}, field, value, meta=True) if meta else \
                        f'{{"{field}":{value}}}'.encode()
                    requests.append(("PATCH", f"{path}/target", patch, "application/merge-patch+json"))
    limit = asyncio.Semaphore(8)

    async def send(method: str, path: str, raw: bytes, content_type: str) -> tuple[str, str, bytes, Reply]:
        async with limit:
            return method, path, raw, await api.request(method, path, raw=raw, content_type=content_type)

    replies = await asyncio.gather(*(send(*r) for r in requests))
    failures = [(m, p, raw[:200], r.status, r.body) for m, p, raw, r in replies if r.status >= 500]
    assert not failures, failures[:5]
    assert all(isinstance(r.body, dict) and r.body.get("kind") in ("Status", "ConfigMap", "Thing")
               for *_, r in replies)
    for path, *_ in kinds:  # whatever was accepted, the collection still lists
        assert (await api.get(path)).status == 200
