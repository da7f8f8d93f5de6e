"""AcrossIdentities: one type over `*` and every identity APIBindings name, as one informer. The factory's
informers are real but never run: the tests feed their caches as a reflector would (`replace`, `apply`)."""

from __future__ import annotations

import asyncio
from collections.abc import Awaitable, Callable
from typing import Any

import pytest

from kcpcommon.clients import ClientFactory
from kcpcommon.errors import APIClientError
from kcpcommon.identities import BoundIdentities, group_of
from kcpcommon.informer_factory import SharedInformerFactory
from kcpcommon.keys import CLUSTER_ANNOTATION, ObjectKey
from kcpcommon.store import CLUSTER_INDEX, LABELS_INDEX, label_value

HASH_A, HASH_B = "a" * 64, "b" * 64


class _Resource:
    def __init__(self, api_version: str, plural: str) -> None:
        self.api_version, self.plural = api_version, plural


class _Clients:
    """Enough of a client factory for informers that never run."""

    server = "https://kcp.invalid"

    def dynamic(self, cluster: str) -> _Clients:
        return self

    def resource(self, api_version: str, plural: str, **kwargs: Any) -> _Resource:
        return _Resource(api_version, plural)


def deployment(cluster: str, name: str, **labels: str) -> dict[str, Any]:
    return {"apiVersion": "apps/v1", "kind": "Deployment",
            "metadata": {"name": name, "namespace": "default", "resourceVersion": "1", "labels": labels,
                         "annotations": {CLUSTER_ANNOTATION: cluster}}}


def binding(cluster: str, *bound: tuple[str, str, str]) -> dict[str, Any]:
    return {"apiVersion": "apis.kcp.io/v1alpha1", "kind": "APIBinding",
            "metadata": {"name": "kubernetes", "resourceVersion": "1", "annotations": {CLUSTER_ANNOTATION: cluster}},
            "status": {"boundResources": [{"group": g, "resource": r, "schema": {"name": f"v1.{r}.{g or 'core'}",
                                                                                    "UID": "u", "identityHash": h}}
                                          for g, r, h in bound]}}


def setup() -> tuple[BoundIdentities, SharedInformerFactory]:
    factory = SharedInformerFactory(_Clients())  # type: ignore[arg-type]
    bound = BoundIdentities(factory)
    return bound, factory


def test_the_group_of_an_api_version() -> None:
    assert (group_of("apps/v1"), group_of("v1"), group_of("workload.kcp.io/v1alpha1")) == (
        "apps", "", "workload.kcp.io")


def test_each_identity_a_binding_names_becomes_one_member_of_its_type_only() -> None:
    bound, factory = setup()
    deployments = bound.informer("apps/v1", "deployments", namespaced=True)
    services = bound.informer("v1", "services", namespaced=True)
    assert bound.informer("apps/v1", "deployments", namespaced=True) is deployments  # one per type
    bound.bindings.replace([binding("team", ("apps", "deployments", HASH_A), ("", "services", HASH_A))], "1")
    bound.bindings.apply("ADDED", {**binding("other", ("apps", "deployments", HASH_A),
                                             ("apps", "deployments", HASH_B)), "metadata": {
        "name": "k2", "resourceVersion": "2", "annotations": {CLUSTER_ANNOTATION: "other"}}})
    assert [m.resource.plural for m in deployments.members] == [
        "deployments", f"deployments:{HASH_A}", f"deployments:{HASH_B}"]
    assert [m.resource.plural for m in services.members] == ["services", f"services:{HASH_A}"]
    assert all(m is factory.informer(cluster="*", api_version="apps/v1", plural=m.resource.plural, namespaced=True)
               for m in deployments.members)  # the factory's own, shared
    late = bound.informer("apps/v1", "replicasets", namespaced=True)
    assert len(late.members) == 1  # no binding names replicasets
    late_deployments = bound.informer("apps/v1", "deployments", namespaced=False)  # another key, known identities
    assert len(late_deployments.members) == 3


def test_the_indexer_is_the_union_of_every_member_and_indexes_reach_late_members() -> None:
    bound, _ = setup()
    view = bound.informer("apps/v1", "deployments", namespaced=True)
    view.add_indexers({"app": lambda o: [o["metadata"]["labels"].get("app", "")]})
    view.plain.replace([deployment("crd-ws", "web", app="web")], "1")
    bound.bindings.replace([binding("team", ("apps", "deployments", HASH_A))], "1")
    bound_member = view.members[1]
    bound_member.replace([deployment("team", "web", app="web"), deployment("team", "api", app="api")], "1")
    index = view.indexer
    assert len(index) == 3 and ObjectKey("team", "default", "api") in index
    assert ObjectKey("nowhere", "default", "api") not in index
    found = index.get(ObjectKey("team", "default", "web"))
    assert found is not None and found["metadata"]["annotations"][CLUSTER_ANNOTATION] == "team"
    copy = index.get_copy(ObjectKey("crd-ws", "default", "web"))
    assert copy is not None
    copy["metadata"]["name"] = "changed"  # a copy: the cache is untouched
    found = index.get(ObjectKey("crd-ws", "default", "web"))
    assert found is not None and found["metadata"]["name"] == "web"
    assert [(o["metadata"]["annotations"][CLUSTER_ANNOTATION], o["metadata"]["name"])
            for o in index.by_index("app", "web")] == [("crd-ws", "web"), ("team", "web")]  # sorted by key
    assert index.index_keys(CLUSTER_INDEX, "team") == {ObjectKey("team", "default", "web"),
                                                       ObjectKey("team", "default", "api")}
    assert index.index_values("app") == ["api", "web"]
    assert index.index_values(CLUSTER_INDEX) == ["crd-ws", "team"]
    assert sorted(str(k) for k in index.keys()) == ["crd-ws|default/web", "team|default/api", "team|default/web"]
    assert len(index.list()) == 3
    assert index.by_index(LABELS_INDEX, label_value("app", "api"))[0]["metadata"]["name"] == "api"


def test_a_handler_sees_every_member_and_a_late_member_s_objects_arrive_as_adds() -> None:
    bound, _ = setup()
    view = bound.informer("apps/v1", "deployments", namespaced=True)
    added: list[tuple[str, str]] = []
    deleted: list[str] = []
    registration = view.add_handler(
        on_add=lambda o: added.append((o["metadata"]["annotations"][CLUSTER_ANNOTATION], o["metadata"]["name"])),
        on_delete=lambda o: deleted.append(o["metadata"]["name"]), inline=True, name="test")
    view.plain.replace([deployment("crd-ws", "web")], "1")
    bound.bindings.replace([], "1")
    assert view.has_synced and registration.has_synced
    assert added == [("crd-ws", "web")]
    bound.bindings.apply("ADDED", binding("team", ("apps", "deployments", HASH_A)))
    member = view.members[1]
    member.replace([deployment("team", "web")], "1")
    assert added == [("crd-ws", "web"), ("team", "web")]
    member.apply("DELETED", deployment("team", "web"))
    assert deleted == ["web"]
    registration.remove()
    bound.bindings.apply("MODIFIED", binding("team", ("apps", "deployments", HASH_A), ("apps", "deployments", HASH_B)))
    view.members[2].replace([deployment("again", "web")], "1")
    assert added == [("crd-ws", "web"), ("team", "web")]  # removed: not attached to the later member


def test_a_handler_added_late_replays_what_every_member_holds() -> None:
    bound, _ = setup()
    bound.bindings.replace([binding("team", ("apps", "deployments", HASH_A))], "1")
    view = bound.informer("apps/v1", "deployments", namespaced=True)
    view.plain.replace([deployment("crd-ws", "web")], "1")
    view.members[1].replace([deployment("team", "api")], "1")
    added: list[str] = []
    registration = view.add_handler(on_add=lambda o: added.append(o["metadata"]["name"]), inline=True)
    assert sorted(added) == ["api", "web"] and registration.has_synced


def test_has_synced_waits_for_the_bindings_and_every_member_then_stays_true() -> None:
    bound, _ = setup()
    view = bound.informer("apps/v1", "deployments", namespaced=True)
    registration = view.add_handler(on_add=lambda o: None, inline=True)
    view.plain.replace([], "1")
    assert not view.has_synced and not view.synced_or_unserved  # the bindings may name an identity yet
    bound.bindings.replace([binding("team", ("apps", "deployments", HASH_A))], "1")
    assert not view.has_synced and not registration.has_synced  # the bound member has not listed
    view.members[1].replace([], "1")
    assert view.has_synced and registration.has_synced
    bound.bindings.apply("MODIFIED", binding("team", ("apps", "deployments", HASH_A), ("apps", "deployments", HASH_B)))
    assert not view.members[2].has_synced
    assert view.has_synced and registration.has_synced and view.synced_or_unserved  # a late member gates itself


def test_unserved_types_count_as_listed_but_one_member_must_have_listed() -> None:
    bound, _ = setup()
    view = bound.informer("apps/v1", "deployments", namespaced=True)
    bound.bindings.reflector.served = False  # a plain kube server: no APIBindings
    view.plain.reflector.served = False  # and no Deployments yet
    assert not view.has_synced and view.synced_or_unserved  # nothing to list: ready, not synced
    view.plain.reflector.served = True
    assert not view.synced_or_unserved
    view.plain.replace([deployment("ws", "web")], "1")
    assert view.has_synced and len(view.indexer) == 1
    # the plain list unserved (no CRD anywhere) while a bound identity lists: synced
    bound2, _ = setup()
    view2 = bound2.informer("apps/v1", "deployments", namespaced=True)
    bound2.bindings.replace([binding("team", ("apps", "deployments", HASH_A))], "1")
    view2.plain.reflector.served = False
    assert not view2.has_synced
    view2.members[1].replace([deployment("team", "web")], "1")
    assert view2.has_synced


async def test_queued_handlers_and_wait_for_sync() -> None:
    bound, _ = setup()
    view = bound.informer("apps/v1", "deployments", namespaced=True)
    seen: list[str] = []
    done = asyncio.Event()

    async def on_add(obj: Any) -> None:
        seen.append(obj["metadata"]["name"])
        if len(seen) == 2:
            done.set()

    registration = view.add_handler(on_add=on_add, name="queued")
    bound.bindings.replace([binding("team", ("apps", "deployments", HASH_A))], "1")
    assert not await view.wait_for_sync(0.05)
    for member in view.members:
        member.start_handlers()
    try:
        view.plain.replace([deployment("crd-ws", "web")], "1")
        view.members[1].replace([deployment("team", "api")], "1")
        assert await view.wait_for_sync(5)
        await asyncio.wait_for(registration.wait_for_sync(), 5)
        await asyncio.wait_for(done.wait(), 5)
        assert sorted(seen) == ["api", "web"]
    finally:
        for member in view.members:
            await member.stop_handlers()


def test_the_plain_list_s_copy_of_a_bound_workspace_is_hidden_until_it_no_longer_binds() -> None:
    """No CRD serves the type anywhere: kcp answers the plain wildcard list with the first identity's objects,
    which that identity's informer lists too. The view shows and tells them once."""
    bound, _ = setup()
    view = bound.informer("apps/v1", "deployments", namespaced=True)
    added: list[str] = []
    updated: list[str] = []
    view.add_handler(on_add=lambda o: added.append(o["metadata"]["annotations"][CLUSTER_ANNOTATION]),
                     on_update=lambda old, new: updated.append(new["metadata"]["name"]), inline=True)
    bound.bindings.replace([binding("team", ("apps", "deployments", HASH_A))], "1")
    view.plain.replace([deployment("team", "web", app="web"), deployment("own", "api")], "1")  # team's: a copy
    view.members[1].replace([deployment("team", "web", app="web")], "1")
    assert sorted(added) == ["own", "team"]
    index = view.indexer
    assert len(index) == 2 and len(index.list()) == 2
    assert sorted(str(k) for k in index.keys()) == ["own|default/api", "team|default/web"]
    assert index.index_keys(CLUSTER_INDEX, "team") == {ObjectKey("team", "default", "web")}
    assert [o["metadata"]["name"] for o in index.by_index(CLUSTER_INDEX, "team")] == ["web"]
    assert index.index_values(CLUSTER_INDEX) == ["own", "team"]
    assert ObjectKey("team", "default", "web") in index and "team|default/web" not in index
    changed = {**deployment("team", "web", app="web"), "metadata": {
        **deployment("team", "web")["metadata"], "resourceVersion": "2"}}
    view.plain.apply("MODIFIED", changed)
    view.members[1].apply("MODIFIED", changed)
    assert updated == ["web"]  # once, from the identity's informer
    # the team's binding goes (the workspace serves the type itself again): the plain list speaks for it
    bound.bindings.apply("DELETED", binding("team", ("apps", "deployments", HASH_A)))
    view.members[1].replace([], "2")
    assert sorted(added) == ["own", "team", "team"]  # replayed as an add from the plain list
    assert sorted(str(k) for k in view.indexer.keys()) == ["own|default/api", "team|default/web"]


def test_a_cluster_binds_a_resource_while_any_of_its_bindings_does() -> None:
    bound, _ = setup()
    first = binding("team", ("apps", "deployments", HASH_A))
    second = {**binding("team", ("apps", "deployments", HASH_B)), "metadata": {
        "name": "other", "resourceVersion": "1", "annotations": {CLUSTER_ANNOTATION: "team"}}}
    gone: list[str] = []
    bound.on_unbound("apps", "deployments", gone.append)
    bound.bindings.replace([first, second], "1")
    assert bound.binds("team", "apps", "deployments") and not bound.binds("team", "", "services")
    bound.bindings.apply("DELETED", first)
    assert bound.binds("team", "apps", "deployments") and gone == []
    bound.bindings.apply("MODIFIED", {**second, "status": {}})  # its resource no longer bound
    assert not bound.binds("team", "apps", "deployments") and gone == ["team"]
    assert bound.identities("apps", "deployments") == [HASH_A, HASH_B]  # identities stay


# --- against a real kcp-apiserver ---

APIS = "apis.kcp.io/v1alpha1"


async def until(probe: Callable[[], Awaitable[Any]], what: str, timeout: float = 20.0) -> Any:
    loop = asyncio.get_running_loop()
    deadline = loop.time() + timeout
    while loop.time() < deadline:
        try:
            if found := await probe():
                return found
        except APIClientError:
            pass
        await asyncio.sleep(0.1)
    raise AssertionError(f"not within {timeout}s: {what}")


async def provide(clients: ClientFactory, provider: str, group: str) -> str:
    """`widgets.<group>` exported as `widgets` from `provider`; the export's identity."""
    client = clients.dynamic(provider)
    schema = f"v1.widgets.{group}"
    await client.resource(APIS, "apiresourceschemas", namespaced=False).create({
        "apiVersion": APIS, "kind": "APIResourceSchema", "metadata": {"name": schema},
        "spec": {"group": group, "scope": "Namespaced",
                 "names": {"kind": "Widget", "listKind": "WidgetList", "plural": "widgets", "singular": "widget"},
                 "versions": [{"name": "v1", "served": True, "storage": True,
                               "schema": {"type": "object", "x-kubernetes-preserve-unknown-fields": True}}]}})
    exports = client.resource(APIS, "apiexports", namespaced=False)
    await exports.create({"apiVersion": APIS, "kind": "APIExport", "metadata": {"name": "widgets"},
                          "spec": {"latestResourceSchemas": [schema]}})
    return str(await until(lambda: _identity(exports), "the export's identity"))


async def _identity(exports: Any) -> str:
    return str(((await exports.get("widgets")).get("status") or {}).get("identityHash") or "")


async def bind_and_create(clients: ClientFactory, consumer: str, provider: str, group: str, name: str) -> None:
    client = clients.dynamic(consumer)
    bindings = client.resource(APIS, "apibindings", namespaced=False)
    await bindings.create({"apiVersion": APIS, "kind": "APIBinding", "metadata": {"name": "widgets"},
                           "spec": {"reference": {"export": {"path": provider, "name": "widgets"}}}})
    await until(lambda: _bound(bindings), f"{consumer} binds the widgets")
    widgets = client.resource(f"{group}/v1", "widgets", namespaced=True)
    await until(lambda: widgets.create({"apiVersion": f"{group}/v1", "kind": "Widget",
                                        "metadata": {"name": name}}, namespace="default"), f"a widget in {consumer}")


async def _bound(bindings: Any) -> bool:
    return bool(((await bindings.get("widgets")).get("status") or {}).get("boundResources"))


@pytest.mark.usefixtures("no_leaked_tasks")
async def test_a_type_only_bound_is_seen_once_in_every_binding_workspace_however_late(
        clients: ClientFactory, unique: str) -> None:
    """No CRD serves `widgets.<group>` anywhere, so kcp answers the plain wildcard list with the first export's
    objects: the view still shows each widget once. A second export's identity, bound after the view listed,
    adds a member whose widgets reach the handler as adds."""
    group = f"g{unique}.example.io"
    first = await provide(clients, f"prov-a-{unique}", group)
    await bind_and_create(clients, f"cons-a-{unique}", f"prov-a-{unique}", group, "one")
    added: list[tuple[str, str]] = []
    factory = SharedInformerFactory(clients)
    bound = BoundIdentities(factory)
    view = bound.informer(f"{group}/v1", "widgets", namespaced=True)
    async with factory:
        factory.start()
        assert await view.wait_for_sync(20)
        # a handler added once the bindings are listed hears each widget once (one added before may also hear the
        # plain list's copy, delivered before the binding that hides it was seen: see the module docstring)
        view.add_handler(on_add=lambda o: added.append((o["metadata"]["annotations"][CLUSTER_ANNOTATION],
                                                        o["metadata"]["name"])), inline=True, name="test")
        await until(lambda: _at_least(added, 1), "the replay of the view's cache")
        assert [m.resource.plural for m in view.members] == ["widgets", f"widgets:{first}"]
        assert ObjectKey(f"cons-a-{unique}", "default", "one") in view.plain.indexer  # kcp's answer, hidden
        assert added == [(f"cons-a-{unique}", "one")] and len(view.indexer) == 1
        second = await provide(clients, f"prov-b-{unique}", group)
        await bind_and_create(clients, f"cons-b-{unique}", f"prov-b-{unique}", group, "two")
        await until(lambda: _at_least(added, 2), "the late identity's widget as an add")
        assert sorted(added) == [(f"cons-a-{unique}", "one"), (f"cons-b-{unique}", "two")]
        assert [m.resource.plural for m in view.members][-1] == f"widgets:{second}"
        assert sorted(str(k) for k in view.indexer.keys()) == [f"cons-a-{unique}|default/one",
                                                               f"cons-b-{unique}|default/two"]


async def _at_least(added: list[Any], count: int) -> bool:
    return len(added) >= count
