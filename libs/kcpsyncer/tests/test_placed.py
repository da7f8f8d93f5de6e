"""One syncer per physical cluster: the supervisor of the engines of the workspaces placed on a SyncTarget
(placed.py), against fake engines and a placed-namespaces cache fed by hand; and the engine's `idle`."""

from __future__ import annotations

import asyncio
import json
import time
from collections.abc import Callable
from typing import Any

import pytest
import structlog.testing
from prometheus_client import CollectorRegistry
from syncer_fakes import FakeResource

from kcpcommon.backoff import Backoff
from kcpcommon.errors import APIForbiddenError
from kcpcommon.informer import SharedInformer
from kcpcommon.keys import CLUSTER_ANNOTATION, PLACED, placed_label, sync_target_key
from kcpcommon.tasks import cancel_and_wait, spawn
from kcpsyncer import SyncerOptions
from kcpsyncer.discovery import APIType
from kcpsyncer.engine import Syncer
from kcpsyncer.names import (
    NAMESPACE_LOCATOR_ANNOTATION,
    OWNER_LABEL,
    SYNC_TARGET_KEY_ANNOTATION,
    namespace_locator,
    owner,
)
from kcpsyncer.placed import PlacedWorkspaces
from kcpsyncer.synced import SyncedType, SyncKey

COMPUTE, TARGET = "root:compute", "shared"
LABEL = placed_label(COMPUTE, TARGET)
CM = APIType("v1", "configmaps", "ConfigMap", namespaced=True, has_status=False)


class FakeNamespaces(FakeResource):
    """Namespaces over `*`: `list` fails with `failures` first, then answers."""

    def __init__(self) -> None:
        super().__init__(APIType("v1", "namespaces", "Namespace", namespaced=False, has_status=False))
        self.failures: list[Exception] = []

    async def list(self, **kw: Any) -> Any:
        self.calls.append(("list", kw))
        if self.failures:
            raise self.failures.pop(0)
        return {"items": []}


class FakeClients:
    server = "https://fake"

    def __init__(self) -> None:
        self.namespaces = FakeNamespaces()
        self.clusters: list[str | None] = []

    def dynamic(self, cluster: str | None = None) -> FakeClients:
        self.clusters.append(cluster)
        return self

    def resource(self, api_version: str, plural: str, *, namespaced: bool) -> FakeResource:
        assert plural == "namespaces"
        return self.namespaces


class FakeEngine:
    """Runs until cancelled, or fails at once when told to; `idle` as the test sets it."""

    def __init__(self, options: SyncerOptions, fail: Exception | None) -> None:
        self.options, self.fail = options, fail
        self.idle = False
        self.cancelled = False

    async def run(self) -> None:
        if self.fail is not None:
            raise self.fail
        try:
            await asyncio.Event().wait()
        except asyncio.CancelledError:
            self.cancelled = True
            raise


class Engines:
    """The engine factory: every engine made, by workspace; `failing` workspaces' next engines fail."""

    def __init__(self) -> None:
        self.made: dict[str, list[FakeEngine]] = {}
        self.failing: dict[str, int] = {}

    def __call__(self, options: SyncerOptions, registry: CollectorRegistry | None) -> FakeEngine:
        fail = None
        if self.failing.get(options.logical_cluster, 0) > 0:
            self.failing[options.logical_cluster] -= 1
            fail = RuntimeError("boom")
        engine = FakeEngine(options, fail)
        self.made.setdefault(options.logical_cluster, []).append(engine)
        return engine

    def current(self, workspace: str) -> FakeEngine:
        return self.made[workspace][-1]


def namespace(workspace: str, name: str = "default") -> dict[str, Any]:
    return {"apiVersion": "v1", "kind": "Namespace",
            "metadata": {"name": name, "labels": {LABEL: PLACED, "workloads.kcp.io/cluster": TARGET},
                         "annotations": {CLUSTER_ANNOTATION: workspace}, "resourceVersion": "1"}}


async def until(condition: Callable[[], bool], what: str, timeout: float = 5.0) -> None:
    deadline = time.monotonic() + timeout
    while not condition():
        assert time.monotonic() < deadline, f"not within {timeout}s: {what}"
        await asyncio.sleep(0.005)


class Harness:
    def __init__(self) -> None:
        self.clients, self.cluster = FakeClients(), FakeClients()
        self.options = SyncerOptions(upstream=self.clients, downstream=self.cluster,  # type: ignore[arg-type]
                                     sync_target=TARGET, logical_cluster=COMPUTE, resources=("configmaps",))
        self.engines = Engines()
        self.registry = CollectorRegistry()
        self.informer = SharedInformer(self.clients.namespaces, cluster="*")  # type: ignore[arg-type]
        self.leftovers = SharedInformer(self.cluster.namespaces, cluster=TARGET)  # type: ignore[arg-type]
        self.leftovers.replace([], "1")
        self.supervisor = PlacedWorkspaces(self.options, registry=self.registry, engine=self.engines,
                                           namespaces=self.informer, leftovers=self.leftovers, idle_check=0.01,
                                           backoff=lambda: Backoff(initial=0.01, cap=0.02, jitter=0.0))
        self.task: asyncio.Task[None] | None = None

    def start(self) -> None:
        self.task = spawn(self.supervisor.supervise(), name="test:placed")

    async def stop(self) -> None:
        if self.task is not None:
            await cancel_and_wait(self.task)

    def gauge(self) -> float | None:
        return self.registry.get_sample_value("kcp_syncer_placed_workspaces",
                                              {"logical_cluster": COMPUTE, "sync_target": TARGET})


async def test_an_engine_runs_per_placed_workspace_and_none_for_the_synctarget_s_own() -> None:
    h = Harness()
    h.informer.replace([namespace("root:team-a"), namespace("root:team-a", "web"), namespace("root:team-b"),
                        namespace(COMPUTE)], "1")
    h.start()
    try:
        await until(lambda: set(h.engines.made) == {"root:team-a", "root:team-b"} and h.gauge() == 2,
                    "an engine for each team")
        assert {w: len(e) for w, e in h.engines.made.items()} == {"root:team-a": 1, "root:team-b": 1}
        options = h.engines.current("root:team-a").options
        assert (options.logical_cluster, options.sync_target, options.resources) == (
            "root:team-a", TARGET, ("configmaps",))
        assert options.upstream is h.options.upstream and options.downstream is h.options.downstream
        # no heartbeat or tunnel (the SyncTarget is C's), and no supervisor of its own
        assert (options.heartbeat, options.tunnel, options.serve_placed) == (False, False, False)
        assert options.sync_target_workspace == COMPUTE  # whose SyncTarget its namespaces downstream name
        h.informer.apply("ADDED", namespace("root:team-c"))
        await until(lambda: "root:team-c" in h.engines.made and h.gauge() == 3, "team C's engine")
    finally:
        await h.stop()
    assert all(e.cancelled for engines in h.engines.made.values() for e in engines)  # stopped with the supervisor
    assert h.gauge() == 0


async def test_an_unplaced_workspace_keeps_its_engine_until_it_is_idle() -> None:
    h = Harness()
    h.informer.replace([namespace("root:team-a"), namespace("root:team-b")], "1")
    h.start()
    try:
        await until(lambda: len(h.engines.made) == 2, "both engines")
        team_a, team_b = h.engines.current("root:team-a"), h.engines.current("root:team-b")
        team_b.idle = True  # placed and idle (nothing synced yet): kept
        h.informer.apply("DELETED", namespace("root:team-a"))  # the placement went
        for _ in range(5):  # several looks: the busy engine of the unplaced team stays
            seen = len(h.engines.made["root:team-a"])
            await asyncio.sleep(0.02)
            assert "root:team-a" in h.supervisor.served and not team_a.cancelled
            assert seen == 1
        assert "root:team-b" in h.supervisor.served and not team_b.cancelled
        team_a.idle = True  # what it synced is gone downstream
        await until(lambda: team_a.cancelled and "root:team-a" not in h.supervisor.served and h.gauge() == 1,
                    "team A's engine stopped once idle")
        assert not team_b.cancelled
        h.informer.apply("ADDED", namespace("root:team-a"))  # placed again: a new engine
        await until(lambda: len(h.engines.made["root:team-a"]) == 2 and h.gauge() == 2, "team A served again")
    finally:
        await h.stop()


async def test_a_workspace_found_draining_downstream_is_served_until_its_namespaces_are_gone() -> None:
    """The syncer stopped while team A drained off the cluster: its namespace there brings its engine back."""
    h = Harness()
    h.informer.replace([namespace("root:team-b")], "1")
    h.leftovers.replace([downstream_ns(workspace="root:team-a"),
                         downstream_ns("kcp-c", workspace=COMPUTE),  # the SyncTarget's own
                         downstream_ns("kcp-d", workspace="root:team-d", target="other"),  # another SyncTarget's
                         # team F's own SyncTarget of the same name on the same cluster: same owner label, not ours
                         downstream_ns("kcp-f", workspace="root:team-f", compute="root:team-f"),
                         downstream_ns("kcp-e", workspace="root:team-e", deleting=True)], "1")  # going already
    h.start()
    try:
        await until(lambda: set(h.engines.made) == {"root:team-a", "root:team-b"}, "engines for A and B")
        team_a = h.engines.current("root:team-a")
        team_a.idle = True  # its caches may lag the supervisor's: kept while its namespace is there
        await asyncio.sleep(0.05)
        assert not team_a.cancelled
        h.leftovers.apply("MODIFIED", downstream_ns(workspace="root:team-a", deleting=True, version="4"))
        await until(lambda: team_a.cancelled and "root:team-a" not in h.supervisor.served, "A's engine stopped")
        assert set(h.engines.made) == {"root:team-a", "root:team-b"} and h.gauge() == 1
    finally:
        await h.stop()


async def test_a_failed_engine_is_restarted_and_the_others_go_on() -> None:
    h = Harness()
    h.engines.failing["root:team-a"] = 2
    h.informer.replace([namespace("root:team-a"), namespace("root:team-b")], "1")
    with structlog.testing.capture_logs() as logs:
        h.start()
        try:
            await until(lambda: len(h.engines.made.get("root:team-a", [])) == 3, "team A's engine restarted twice")
            assert len(h.engines.made["root:team-b"]) == 1 and not h.engines.current("root:team-b").cancelled
            assert h.supervisor.served["root:team-a"].failures == 2
            assert h.registry.get_sample_value("kcp_syncer_errors_total", {
                "logical_cluster": COMPUTE, "sync_target": TARGET, "reason": "PlacedEngineFailed"}) == 2
        finally:
            await h.stop()
    failures = [e for e in logs if e["event"].startswith("the engine of a placed workspace failed")]
    assert [(e["workspace"], e["error"]) for e in failures] == [("root:team-a", "boom")] * 2


async def test_a_failed_engine_of_an_unplaced_workspace_is_not_taken_for_idle() -> None:
    """While a failed engine waits to restart, what it holds downstream is unknown: it is not stopped for good."""
    h = Harness()
    h.engines.failing["root:team-a"] = 1
    h.informer.replace([], "1")
    h.informer.apply("ADDED", namespace("root:team-a"))
    h.start()
    try:
        await until(lambda: len(h.engines.made.get("root:team-a", [])) == 1, "team A's first engine")
        h.informer.apply("DELETED", namespace("root:team-a"))
        await until(lambda: len(h.engines.made["root:team-a"]) == 2, "restarted to drain, though unplaced")
        h.engines.current("root:team-a").idle = True
        await until(lambda: "root:team-a" not in h.supervisor.served, "stopped once the new engine is idle")
    finally:
        await h.stop()


async def test_a_forbidden_look_across_workspaces_is_told_once_and_retried() -> None:
    """A pull-mode syncer's ServiceAccount may not list Namespaces over `*`: harmless, said once, asked again."""
    h = Harness()
    h.clients.namespaces.failures = [APIForbiddenError("namespaces is forbidden", status=403, reason="Forbidden")
                                     for _ in range(3)]
    ran = asyncio.Event()

    async def informer_run() -> None:
        ran.set()
        await asyncio.Event().wait()

    h.supervisor.namespaces.run = informer_run  # type: ignore[method-assign]
    with structlog.testing.capture_logs() as logs:
        task = spawn(h.supervisor._watch(), name="test:watch")
        try:
            await asyncio.wait_for(ran.wait(), 5)
        finally:
            await cancel_and_wait(task)
    assert [c[0] for c in h.clients.namespaces.calls] == ["list"] * 4
    assert h.clients.namespaces.calls[-1][1]["label_selector"] == LABEL  # Placed, or Draining off
    assert "*" in h.clients.clusters  # across every workspace
    warned = [e for e in logs if e["event"].startswith("cannot list namespaces across workspaces")]
    assert len(warned) == 1 and warned[0]["status"] == 403


# --- the engine's `idle` ---


class EngineClients:
    server = "https://fake"

    def dynamic(self, cluster: str | None = None) -> EngineClients:
        return self

    def resource(self, api_version: str, plural: str, *, namespaced: bool) -> FakeResource:
        return FakeResource(APIType(api_version, plural, "", namespaced, False))

    async def request(self, method: str, path: str, **kw: Any) -> Any:
        return {}  # discovery: the cluster serves no other type a namespace could hold


def engine_with_configmaps() -> tuple[Syncer, SharedInformer, SharedInformer]:
    clients = EngineClients()
    options = SyncerOptions(upstream=clients, downstream=clients,  # type: ignore[arg-type]
                            sync_target=TARGET, logical_cluster="root:team-a", resources=("configmaps",))
    syncer = Syncer(options)
    up, down = FakeResource(CM), FakeResource(CM)
    up_informer = SharedInformer(up, cluster="root:team-a")  # type: ignore[arg-type]
    down_informer = SharedInformer(down, cluster=TARGET)  # type: ignore[arg-type]
    syncer.types["configmaps"] = SyncedType("configmaps", CM, CM, up, down,  # type: ignore[arg-type]
                                            up_informer, down_informer)
    return syncer, up_informer, down_informer


def downstream_cm() -> dict[str, Any]:
    return {"apiVersion": "v1", "kind": "ConfigMap",
            "metadata": {"name": "web", "namespace": "kcp-x", "resourceVersion": "3"}}


def downstream_ns(name: str = "kcp-x", *, deleting: bool = False, workspace: str = "root:team-a",
                  target: str = TARGET, version: str = "3", compute: str = COMPUTE) -> dict[str, Any]:
    metadata: dict[str, Any] = {
        "name": name, "resourceVersion": version, "labels": {OWNER_LABEL: owner(workspace, target)},
        "annotations": {NAMESPACE_LOCATOR_ANNOTATION: namespace_locator(workspace, "default"),
                        SYNC_TARGET_KEY_ANNOTATION: sync_target_key(compute, target)}}
    if deleting:
        metadata["deletionTimestamp"] = "2026-01-01T00:00:00Z"
    return {"apiVersion": "v1", "kind": "Namespace", "metadata": metadata}


@pytest.mark.parametrize("case", ["undiscovered", "unlisted", "holds", "queued", "namespace left"])
async def test_an_engine_is_not_idle_while_it_may_hold_something_downstream(case: str) -> None:
    syncer, up_informer, down_informer = engine_with_configmaps()
    syncer._discovered = case != "undiscovered"
    up_informer.replace([], "1")
    syncer.owned_namespaces.replace([downstream_ns(deleting=True)] if case == "namespace left" else [], "1")
    if case != "unlisted":  # the downstream cache has not listed: absence proves nothing
        down_informer.replace([downstream_cm()] if case == "holds" else [], "1")
    if case == "queued":  # a delete (or a namespace cleanup) still to do
        syncer.controller.enqueue(SyncKey("", "", "kcp-x"))
    assert not syncer.idle


async def test_an_engine_is_idle_once_its_downstream_caches_hold_nothing_and_no_work_is_left() -> None:
    syncer, up_informer, down_informer = engine_with_configmaps()
    syncer._discovered = True
    up_informer.replace([], "1")
    syncer.owned_namespaces.replace([downstream_ns()], "1")
    down_informer.replace([downstream_cm()], "1")
    assert not syncer.idle
    down_informer.apply("DELETED", downstream_cm())
    assert not syncer.idle  # its namespace is still there
    syncer.owned_namespaces.apply("DELETED", downstream_ns())
    assert syncer.idle


async def test_a_namespace_of_ours_found_empty_when_the_engine_starts_is_cleaned_up() -> None:
    """A workspace that drained off the cluster while no syncer ran: its emptied namespace goes on the next start,
    once every cache has listed; never while a type is not served (its objects would look absent)."""
    syncer, up_informer, down_informer = engine_with_configmaps()
    namespaces = syncer.namespaces._namespaces  # the fake downstream namespaces resource
    syncer._unserved = {"deployments.apps"}
    syncer._namespace_seen(downstream_ns())
    assert len(syncer.controller.queue) == 0  # a Deployment there would look absent: not looked at
    syncer._unserved = set()
    syncer._namespace_seen(downstream_ns())
    key = SyncKey("", "", "kcp-x")
    assert len(syncer.controller.queue) == 1
    syncer.owned_namespaces.replace([downstream_ns()], "1")
    up_informer.replace([], "1")
    await syncer._reconcile(key)  # the downstream ConfigMaps have not listed: held, nothing deleted
    assert namespaces.calls == [] and key in syncer.types["configmaps"].waiting
    down_informer.replace([], "1")
    await syncer._reconcile(key)
    assert [c[:2] for c in namespaces.calls] == [("delete", "kcp-x")]  # read from the cache, not the API
    namespaces.calls.clear()
    syncer.namespaces._origin.clear()
    syncer.owned_namespaces.replace([downstream_ns(deleting=True)], "2")
    await syncer._reconcile(key)
    assert namespaces.calls == []  # going already
    for task in [t.release for t in syncer.types.values() if t.release is not None]:
        await cancel_and_wait(task)


async def test_the_namespaces_an_engine_makes_name_the_synctarget_across_workspaces() -> None:
    """The engine of a placed workspace names its SyncTarget (of the compute workspace) on every namespace it makes."""
    clients = EngineClients()
    cases = (("", sync_target_key("root:team-a", TARGET)),  # its own SyncTarget's
             (COMPUTE, sync_target_key(COMPUTE, TARGET)))  # placed on the compute workspace's
    for workspace, expected in cases:
        options = SyncerOptions(upstream=clients, downstream=clients,  # type: ignore[arg-type]
                                sync_target=TARGET, logical_cluster="root:team-a", resources=("configmaps",),
                                sync_target_workspace=workspace)
        syncer = Syncer(options)
        await syncer.namespaces.ensure("kcp-x", "default")
        (call,) = syncer.namespaces._namespaces.calls  # type: ignore[attr-defined]
        assert call[0] == "create"
        annotations = call[1]["metadata"]["annotations"]
        assert annotations[SYNC_TARGET_KEY_ANNOTATION] == expected
        assert json.loads(annotations[NAMESPACE_LOCATOR_ANNOTATION]) == {"logicalCluster": "root:team-a",
                                                                          "namespace": "default"}
