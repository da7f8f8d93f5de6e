"""A downstream namespace of ours with nothing synced left goes only if nothing else is in it (issue 26): what the
syncer did not make (a user's claim made by hand, a StatefulSet's retained claims) keeps it, and says so."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

import structlog

from kcpcommon.controller import Result
from kcpcommon.errors import APIForbiddenError
from kcpsyncer.names import KEPT_ANNOTATION, OWNER_LABEL, namespace_locator
from kcpsyncer.namespaces import KEPT_RETRY, DownstreamNamespaces

OWNER = "us"
DOWN_NS = "kcp-abc"
CORE = {"resources": [
    {"name": "configmaps", "kind": "ConfigMap", "namespaced": True, "verbs": ["list", "get"]},
    {"name": "serviceaccounts", "kind": "ServiceAccount", "namespaced": True, "verbs": ["list"]},
    {"name": "persistentvolumeclaims", "kind": "PersistentVolumeClaim", "namespaced": True, "verbs": ["list"]},
    {"name": "persistentvolumeclaims/status", "kind": "PersistentVolumeClaim", "namespaced": True, "verbs": ["get"]},
    {"name": "events", "kind": "Event", "namespaced": True, "verbs": ["list"]},
    {"name": "endpoints", "kind": "Endpoints", "namespaced": True, "verbs": ["list"]},
    {"name": "bindings", "kind": "Binding", "namespaced": True, "verbs": ["create"]},
    {"name": "secrets", "kind": "Secret", "namespaced": True, "verbs": ["list"]},
    {"name": "nodes", "kind": "Node", "namespaced": False, "verbs": ["list"]}]}
GROUPS = {"groups": [{"name": "apps", "preferredVersion": {"groupVersion": "apps/v1"}},
                     {"name": "events.k8s.io", "preferredVersion": {"groupVersion": "events.k8s.io/v1"}}]}
APPS = {"resources": [{"name": "controllerrevisions", "kind": "ControllerRevision", "namespaced": True,
                       "verbs": ["list"]}]}
EVENTS_V1 = {"resources": [{"name": "events", "kind": "Event", "namespaced": True, "verbs": ["list"]}]}


def obj(name: str, **metadata: Any) -> dict[str, Any]:
    return {"metadata": {"name": name, "namespace": DOWN_NS, **metadata}}


@dataclass
class Resource:
    plural: str
    cluster: Cluster
    calls: list[tuple[Any, ...]] = field(default_factory=list)

    async def list(self, *, namespace: str | None = None, **kw: Any) -> Any:
        self.cluster.lists.append(self.plural)
        answer = self.cluster.objects.get(self.plural, [])
        if isinstance(answer, Exception):
            raise answer
        assert namespace == DOWN_NS
        return {"items": answer}

    async def patch(self, name: str, body: Any, **kw: Any) -> Any:
        self.calls.append(("patch", name, body, kw))
        return body

    async def delete(self, name: str, **kw: Any) -> Any:
        self.calls.append(("delete", name))
        return {"kind": "Status", "status": "Success"}

    async def get(self, name: str, **kw: Any) -> Any:
        raise AssertionError("the namespace is passed as the cache holds it")


@dataclass
class Cluster:
    """A downstream DynamicClient: discovery answered from the tables above, lists from `objects`."""

    objects: dict[str, Any] = field(default_factory=dict)  # plural -> items (or an error)
    resources: dict[str, Resource] = field(default_factory=dict)
    lists: list[str] = field(default_factory=list)
    discovery: int = 0

    def resource(self, api_version: str, plural: str, *, namespaced: bool) -> Resource:
        return self.resources.setdefault(f"{api_version}/{plural}", Resource(plural, self))

    async def request(self, method: str, path: str, **kw: Any) -> Any:
        self.discovery += path == "/apis"
        return {"/api/v1": CORE, "/apis": GROUPS, "/apis/apps/v1": APPS, "/apis/events.k8s.io/v1": EVENTS_V1}[path]

    @property
    def namespaces(self) -> Resource:
        return self.resources["v1/namespaces"]


class Indexer:
    def __init__(self, objs: list[dict[str, Any]]) -> None:
        self.objs = objs

    def by_index(self, index: str, namespace: str) -> list[dict[str, Any]]:
        return [o for o in self.objs if o["metadata"]["namespace"] == namespace]


class Informer:
    def __init__(self, objs: list[dict[str, Any]]) -> None:
        self.indexer = Indexer(objs)


@dataclass
class Mirrored:
    """A mirrored kind's caches, as `cleanup` reads them."""

    name: str
    objs: list[dict[str, Any]]
    synced: bool = True

    @property
    def down_informer(self) -> Informer:
        return Informer(self.objs)


def namespace(**annotations: str) -> dict[str, Any]:
    return {"metadata": {"name": DOWN_NS, "labels": {OWNER_LABEL: OWNER},
                         "annotations": {"kcp.io/namespace-locator": namespace_locator("root:org", "default"),
                                         **annotations}}}


async def cleanup(cluster: Cluster, *mirrored: Mirrored, found: dict[str, Any] | None = None) -> Result | None:
    namespaces = DownstreamNamespaces(cluster, logical_cluster="root:org", owner=OWNER,  # type: ignore[arg-type]
                                      sync_target_key="key", log=structlog.get_logger("test"))
    return await namespaces.cleanup(DOWN_NS, [], mirrored,  # type: ignore[arg-type]
                                    found=found if found is not None else namespace())


async def test_a_claim_made_by_hand_downstream_keeps_the_namespace_and_the_namespace_says_why() -> None:
    cluster = Cluster(objects={"persistentvolumeclaims": [obj("data-web-0"), obj("data-web-1")],
                               "configmaps": [obj("kube-root-ca.crt")]})
    assert await cleanup(cluster) == Result(requeue_after=KEPT_RETRY)  # nothing watches them: looked at again
    assert cluster.namespaces.calls == [("patch", DOWN_NS, {"metadata": {"annotations": {
        KEPT_ANNOTATION: "persistentvolumeclaims/data-web-0, persistentvolumeclaims/data-web-1"}}},
        {"field_manager": "kcp-syncer"})]


async def test_once_only_what_goes_by_itself_is_left_the_namespace_is_deleted() -> None:
    going = obj("theirs", deletionTimestamp="2026-01-01T00:00:00Z", finalizers=["x"])
    cluster = Cluster(objects={
        "persistentvolumeclaims": [obj("ours", labels={OWNER_LABEL: OWNER}), going,
                                   obj("data-db-0", ownerReferences=[{"kind": "StatefulSet", "name": "db"}])],
        "serviceaccounts": [obj("default")], "configmaps": [obj("kube-root-ca.crt")],
        "secrets": [{**obj("default-token-x"), "type": "kubernetes.io/service-account-token"}],
        "events": [obj("db.1")], "endpoints": [obj("db")], "controllerrevisions": [obj("db-1", ownerReferences=[{}])]})
    assert await cleanup(cluster, found=namespace(**{KEPT_ANNOTATION: "configmaps/notes"})) is None
    assert cluster.namespaces.calls == [("delete", DOWN_NS)]
    # Events (either group), Endpoints, and what cannot be listed were never asked for
    assert sorted(cluster.lists) == ["configmaps", "controllerrevisions", "persistentvolumeclaims", "secrets",
                                     "serviceaccounts"]


async def test_another_syncer_s_objects_and_a_config_map_of_the_user_keep_it() -> None:
    cluster = Cluster(objects={"configmaps": [obj("notes", labels={OWNER_LABEL: "another"})],
                               "controllerrevisions": [obj("kept")], "secrets": [{**obj("creds"), "type": "Opaque"}]})
    assert await cleanup(cluster) == Result(requeue_after=KEPT_RETRY)
    (_, _, body, _), = cluster.namespaces.calls
    assert body["metadata"]["annotations"][KEPT_ANNOTATION] == \
        "configmaps/notes, controllerrevisions.apps/kept, secrets/creds"


async def test_a_type_that_may_not_be_listed_is_skipped() -> None:
    cluster = Cluster(objects={"secrets": APIForbiddenError("forbidden", status=403, reason="Forbidden")})
    assert await cleanup(cluster) is None
    assert cluster.namespaces.calls == [("delete", DOWN_NS)]


async def test_a_statefulset_s_retained_claims_keep_it_without_a_look_at_the_rest() -> None:
    claims = Mirrored("persistentvolumeclaims", [obj("data-web-1"), obj("data-web-0")])
    cluster = Cluster()
    assert await cleanup(cluster, claims) is None  # their deletes queue the namespace: no retry needed
    assert cluster.namespaces.calls == [("patch", DOWN_NS, {"metadata": {"annotations": {
        KEPT_ANNOTATION: "persistentvolumeclaims/data-web-0, persistentvolumeclaims/data-web-1"}}},
        {"field_manager": "kcp-syncer"})]
    assert cluster.lists == []
    # said once: the same reason again writes nothing
    again = Cluster()
    kept = namespace(**{KEPT_ANNOTATION: "persistentvolumeclaims/data-web-0, persistentvolumeclaims/data-web-1"})
    assert await cleanup(again, claims, found=kept) is None
    assert again.namespaces.calls == []


async def test_mirrored_objects_that_go_with_their_owner_keep_it_unannotated_until_they_are_gone() -> None:
    pods = Mirrored("pods", [obj("web-0", ownerReferences=[{"kind": "StatefulSet"}])])
    cluster = Cluster()
    assert await cleanup(cluster, pods) is None
    assert cluster.namespaces.calls == [] and cluster.lists == []


async def test_discovery_is_reused_between_cleanups() -> None:
    cluster = Cluster()
    namespaces = DownstreamNamespaces(cluster, logical_cluster="root:org", owner=OWNER,  # type: ignore[arg-type]
                                      sync_target_key="key", log=structlog.get_logger("test"))
    for _ in range(3):
        await namespaces.cleanup(DOWN_NS, [], [], found=namespace())
    assert cluster.discovery == 1


@dataclass
class Synced(Mirrored):
    """A synced type's caches: upstream objects of the namespace, and the cluster's of ours."""

    upstream: list[dict[str, Any]] = field(default_factory=list)

    def upstream_in(self, namespace: str) -> list[dict[str, Any]]:
        return self.upstream


async def test_claims_a_template_made_in_the_synced_claims_cache_are_leftovers_and_an_applied_one_is_in_use() -> None:
    """The synced claims' cache is the mirror's: a StatefulSet's claim there was not applied by the syncer."""
    made = obj("data-web-0", labels={OWNER_LABEL: OWNER})
    applied = obj("mine", labels={OWNER_LABEL: OWNER}, annotations={
        "syncer.kcp.io/upstream-cluster": "root:org", "syncer.kcp.io/upstream-namespace": "default",
        "syncer.kcp.io/upstream-name": "mine"})
    cluster = Cluster()
    namespaces = DownstreamNamespaces(cluster, logical_cluster="root:org", owner=OWNER,  # type: ignore[arg-type]
                                      sync_target_key="key", log=structlog.get_logger("test"))
    claims = [Synced("persistentvolumeclaims", [made])]
    mirrored = [Mirrored("persistentvolumeclaims", [made])]
    assert await namespaces.cleanup(DOWN_NS, claims, mirrored, found=namespace()) is None  # type: ignore[arg-type]
    assert cluster.namespaces.calls == [("patch", DOWN_NS, {"metadata": {"annotations": {
        KEPT_ANNOTATION: "persistentvolumeclaims/data-web-0"}}}, {"field_manager": "kcp-syncer"})]

    # in use again (a claim the user applied to kcp, synced down): what kept it is no reason any more
    cluster.namespaces.calls.clear()
    claims = [Synced("persistentvolumeclaims", [made, applied])]
    kept = namespace(**{KEPT_ANNOTATION: "persistentvolumeclaims/data-web-0"})
    assert await namespaces.cleanup(DOWN_NS, claims, mirrored, found=kept) is None  # type: ignore[arg-type]
    assert cluster.namespaces.calls == [("patch", DOWN_NS, {"metadata": {"annotations": {KEPT_ANNOTATION: None}}},
                                         {"field_manager": "kcp-syncer"})]
    assert cluster.lists == []
