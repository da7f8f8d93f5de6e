"""JSON for people: `?pretty=true`, or a curl/Wget/browser User-Agent, gets kube's two-space indentation;
every other client gets compact JSON (kube's isPrettyPrint)."""

from __future__ import annotations

import json

from api import Api, configmap


async def raw(api: Api, path: str, *, agent: str = "kubectl/v1.35.0", params: dict[str, str] | None = None) -> bytes:
    headers = {"Accept": "application/json", "Authorization": f"Bearer {api.token}", "User-Agent": agent}
    async with api.session.get(api.server.url + path, headers=headers, params=params,
                               ssl=api.server.ssl_context()) as resp:
        return await resp.read()


def is_indented(body: bytes) -> bool:
    return body.startswith(b'{\n  "') and json.loads(body) is not None


async def test_pretty_is_asked_for_by_query_or_by_a_humans_client(api: Api, namespace: str) -> None:
    assert (await api.post(f"/api/v1/namespaces/{namespace}/configmaps", configmap("c1"))).status == 201
    path = f"/api/v1/namespaces/{namespace}/configmaps/c1"
    compact = await raw(api, path)
    assert compact.startswith(b'{"') and b"\n" not in compact.strip()
    assert is_indented(await raw(api, path, params={"pretty": "true"}))
    assert is_indented(await raw(api, path, params={"pretty": "1"}))
    for agent in ("curl/8.5.0", "Wget/1.21", "Mozilla/5.0 (X11; Linux x86_64)"):
        assert is_indented(await raw(api, path, agent=agent)), agent
    assert not is_indented(await raw(api, path, agent="curl/8.5.0", params={"pretty": "false"}))
    assert not is_indented(await raw(api, path, params={"pretty": "maybe"}))  # Go's ParseBool: unreadable is no
    assert json.loads(await raw(api, path, params={"pretty": "true"})) == json.loads(compact)


async def test_lists_and_errors_are_indented_too(api: Api, namespace: str) -> None:
    assert (await api.post(f"/api/v1/namespaces/{namespace}/configmaps", configmap("c2"))).status == 201
    listed = await raw(api, f"/api/v1/namespaces/{namespace}/configmaps", agent="curl/8.5.0")
    assert is_indented(listed) and [i["metadata"]["name"] for i in json.loads(listed)["items"]] == ["c2"]
    missing = await raw(api, f"/api/v1/namespaces/{namespace}/configmaps/nope", params={"pretty": "true"})
    assert is_indented(missing) and json.loads(missing)["reason"] == "NotFound"
