"""Many clients writing one object at once, as kube-apiserver answers them: a patch without a precondition
never sees a conflict (the server retries it until the request's deadline); a write that names a
resourceVersion or uid the object no longer has is a 409 at once."""

from __future__ import annotations

import asyncio
from collections import Counter

from api import Api, configmap

JSON_PATCH = "application/json-patch+json"


async def blind_patches(api: Api, path: str, clients: int, patches: int) -> Counter[int]:
    """`clients` concurrent clients, each sending `patches` JSON patches that add a key of its own, one at a time;
    the answers' status codes, counted."""
    codes: Counter[int] = Counter()

    async def client(i: int) -> None:
        for j in range(patches):
            reply = await api.patch(path, [{"op": "add", "path": f"/data/c{i}-{j}", "value": str(j)}], JSON_PATCH)
            codes[reply.status] += 1

    await asyncio.gather(*(client(i) for i in range(clients)))
    return codes


async def test_blind_json_patches_from_many_clients_all_land_without_a_conflict(api: Api, namespace: str) -> None:
    collection = f"/api/v1/namespaces/{namespace}/configmaps"
    assert (await api.post(collection, configmap("contended", {}))).status == 201
    codes = await blind_patches(api, f"{collection}/contended", clients=16, patches=20)
    assert codes == Counter({200: 16 * 20})
    got = await api.get(f"{collection}/contended")
    assert sorted(got.body["data"]) == sorted(["k", *(f"c{i}-{j}" for i in range(16) for j in range(20))])


async def test_a_patch_with_a_stale_resource_version_is_a_conflict(api: Api, namespace: str) -> None:
    collection = f"/api/v1/namespaces/{namespace}/configmaps"
    created = await api.post(collection, configmap("stale", {"k": "v"}))
    stale = created.body["metadata"]["resourceVersion"]
    assert (await api.patch(f"{collection}/stale", {"data": {"k": "w"}}, "application/merge-patch+json")).status == 200
    reply = await api.patch(f"{collection}/stale", {"metadata": {"resourceVersion": stale}, "data": {"k": "x"}},
                            "application/merge-patch+json")
    assert reply.status == 409 and reply.body["reason"] == "Conflict"
    assert "the object has been modified" in reply.body["message"]
    assert (await api.get(f"{collection}/stale")).body["data"] == {"k": "w"}


async def test_an_update_for_an_object_since_replaced_is_a_uid_precondition_conflict(api: Api, namespace: str) -> None:
    collection = f"/api/v1/namespaces/{namespace}/configmaps"
    first = (await api.post(collection, configmap("replaced", {"k": "v"}))).body
    assert (await api.delete(f"{collection}/replaced")).status == 200
    second = (await api.post(collection, configmap("replaced", {"k": "again"}))).body
    body = {**first, "data": {"k": "mine"}}
    del body["metadata"]["resourceVersion"]
    reply = await api.put(f"{collection}/replaced", body)
    assert reply.status == 409 and reply.body["reason"] == "Conflict"
    assert reply.body["message"] == (
        f'Operation cannot be fulfilled on configmaps "replaced": Precondition failed: UID in precondition: '
        f'{first["metadata"]["uid"]}, UID in object meta: {second["metadata"]["uid"]}')
