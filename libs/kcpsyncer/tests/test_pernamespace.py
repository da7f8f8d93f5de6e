"""A type the syncer may not read cluster-wide: one reflector per namespace of its own, never a cluster-wide list."""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator
from typing import Any

from kcpcommon.errors import APIClientError
from kcpcommon.informer import SharedInformer
from kcpcommon.keys import ObjectKey
from kcpcommon.store import NAMESPACE_INDEX
from kcpsyncer.discovery import APIType
from kcpsyncer.pernamespace import PerNamespaceInformer, readable_cluster_wide

SECRETS = APIType("v1", "secrets", "Secret", namespaced=True, has_status=False)
OWNER = "syncer.kcp.io/owner=abc"


class NamespacedSecrets:
    """Answers lists per namespace (refusing a cluster-wide one, as kube RBAC would) and watches that stay open."""

    api_version, plural, namespaced = "v1", "secrets", True

    def __init__(self, items: dict[str, list[str]], refused: frozenset[str] = frozenset()) -> None:
        self.items = items
        self.refused = refused  # namespaces not bound (yet)
        self.listed: list[str | None] = []

    async def list(self, *, namespace: str | None = None, **_: Any) -> dict[str, Any]:
        self.listed.append(namespace)
        if namespace is None or namespace in self.refused:
            raise APIClientError("secrets is forbidden: cannot list at the cluster scope", status=403, reason="Forbidden")
        return {"kind": "SecretList", "apiVersion": "v1", "metadata": {"resourceVersion": "7"},
                "items": [{"metadata": {"name": name, "namespace": namespace, "resourceVersion": "7"}}
                          for name in self.items.get(namespace, [])]}

    async def watch_stream(self, **_: Any) -> AsyncIterator[dict[str, Any]]:
        await asyncio.Event().wait()
        yield {}


class Client:
    def __init__(self, resource: NamespacedSecrets, allowed: bool | Exception = True) -> None:
        self._resource, self._allowed = resource, allowed
        self.reviews: list[dict[str, Any]] = []

    def resource(self, api_version: str, plural: str, *, namespaced: bool) -> NamespacedSecrets:
        return self._resource

    async def request(self, method: str, path: str, *, body: Any = None) -> Any:
        self.reviews.append(body["spec"]["resourceAttributes"])
        if isinstance(self._allowed, Exception):
            raise self._allowed
        return {"status": {"allowed": self._allowed}}


def namespace(name: str) -> dict[str, Any]:
    return {"metadata": {"name": name, "resourceVersion": "3", "labels": {"syncer.kcp.io/owner": "abc"}}}


async def test_each_namespace_of_the_syncer_is_listed_on_its_own_and_read_as_one_cache() -> None:
    secrets = NamespacedSecrets({"kcp-a": ["s1"], "kcp-b": ["s2"], "kube-system": ["token"]})
    namespaces = SharedInformer(secrets, cluster="east")  # type: ignore[arg-type]  # fed by hand below
    cache = PerNamespaceInformer(Client(secrets), SECRETS, cluster="east",  # type: ignore[arg-type]
                                 label_selector=OWNER, namespaces=namespaces)
    added: list[str] = []
    cache.add_handler(on_add=lambda obj: added.append(obj["metadata"]["name"]), name="test")
    namespaces.start_handlers()
    try:
        assert not cache.has_synced  # its namespaces have not listed
        namespaces.replace([namespace("kcp-a")], "3")
        assert await cache.wait_for_sync(5)
        assert cache.indexer.get(ObjectKey("east", "kcp-a", "s1")) is not None
        assert [o["metadata"]["name"] for o in cache.indexer.by_index(NAMESPACE_INDEX, "kcp-a")] == ["s1"]

        namespaces.apply("ADDED", namespace("kcp-b"))  # a namespace the syncer makes later
        await asyncio.wait_for(_until(lambda: cache.indexer.get(ObjectKey("east", "kcp-b", "s2")) is not None), 5)
        await asyncio.wait_for(_until(lambda: sorted(added) == ["s1", "s2"]), 5)

        namespaces.apply("DELETED", namespace("kcp-a"))
        await asyncio.wait_for(_until(lambda: cache.indexer.get(ObjectKey("east", "kcp-a", "s1")) is None), 5)
        assert sorted(set(secrets.listed), key=str) == ["kcp-a", "kcp-b"], "never cluster-wide, never kube-system"
    finally:
        await cache.stop()
        await namespaces.stop_handlers()


async def test_a_namespace_labelled_ours_but_not_one_the_controller_binds_is_never_watched() -> None:
    secrets = NamespacedSecrets({"kcp-a": ["s1"], "kube-system": ["token"]})
    namespaces = SharedInformer(secrets, cluster="east")  # type: ignore[arg-type]  # fed by hand below
    cache = PerNamespaceInformer(Client(secrets), SECRETS, cluster="east",  # type: ignore[arg-type]
                                 label_selector=OWNER, namespaces=namespaces,
                                 own=lambda ns: ns["metadata"]["name"].startswith("kcp-"))
    namespaces.start_handlers()
    try:
        # its reflector would be refused forever, and keep the type from ever counting as synced
        namespaces.replace([namespace("kcp-a"), namespace("kube-system")], "3")
        assert await cache.wait_for_sync(5)
        assert secrets.listed == ["kcp-a"]
    finally:
        await cache.stop()
        await namespaces.stop_handlers()


async def test_a_namespace_not_bound_yet_keeps_the_type_unsynced_so_nothing_is_judged_absent() -> None:
    secrets = NamespacedSecrets({"kcp-a": ["s1"], "kcp-b": ["s2"]}, refused=frozenset({"kcp-b"}))
    namespaces = SharedInformer(secrets, cluster="east")  # type: ignore[arg-type]  # fed by hand below
    cache = PerNamespaceInformer(Client(secrets), SECRETS, cluster="east",  # type: ignore[arg-type]
                                 label_selector=OWNER, namespaces=namespaces)
    namespaces.start_handlers()
    try:
        namespaces.replace([namespace("kcp-a"), namespace("kcp-b")], "3")
        await asyncio.wait_for(_until(lambda: secrets.listed.count("kcp-b") >= 2), 5)  # refused, and retried soon
        assert not cache.has_synced  # kcp-b's s2 is not "gone": its namespace could not be listed
        secrets.refused = frozenset()  # the controller's RoleBinding lands
        assert await cache.wait_for_sync(5)
        assert cache.indexer.get(ObjectKey("east", "kcp-b", "s2")) is not None
    finally:
        await cache.stop()
        await namespaces.stop_handlers()


async def _until(check: Any) -> None:
    while not check():
        await asyncio.sleep(0.01)


async def test_a_type_is_read_cluster_wide_only_when_a_review_allows_list_and_watch() -> None:
    secrets = NamespacedSecrets({})
    denied = Client(secrets, allowed=False)
    assert not await readable_cluster_wide(denied, SECRETS)  # type: ignore[arg-type]
    assert sorted(r["verb"] for r in denied.reviews) == ["list", "watch"]
    assert all((r["group"], r["resource"]) == ("", "secrets") for r in denied.reviews)
    assert await readable_cluster_wide(Client(secrets, allowed=True), SECRETS)  # type: ignore[arg-type]
    # a cluster that serves no reviews keeps the one cluster-wide watch
    unserved = Client(secrets, allowed=APIClientError("the server could not find the requested resource",
                                                         status=404, reason="NotFound"))
    assert await readable_cluster_wide(unserved, SECRETS)  # type: ignore[arg-type]
