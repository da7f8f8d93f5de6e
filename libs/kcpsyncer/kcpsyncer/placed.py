"""One syncer per physical cluster: the SyncTarget's syncer also serves every workspace placed on it.

An admin registers a physical cluster once, as SyncTarget T in a compute workspace C; a team's Placement
puts the namespaces of its workspace W on T by labelling each `placed.workload.kcp.io/<key(C, T)>: Placed`
(kcpcommon.keys.placed_label; the assignment label `workloads.kcp.io/cluster: T` goes on it and its objects;
any value of the label counts, as the splitter's `Draining` while it moves them off).
`PlacedWorkspaces` watches those Namespaces across every workspace (one informer over `*`) and runs one engine
per workspace W != C that has one: W's objects assigned to T go down exactly as C's do, into namespaces
`kcp-<hash(W, ns)>` (tenants stay apart downstream) under the owner label of (W, T).

- An engine of a placed workspace neither beats (the SyncTarget, and its heartbeat, live in C) nor holds a
  tunnel (it registers per SyncTarget): pods' logs and exec through kcp for placed workspaces are left for later.
- A workspace with no placed namespace left keeps its engine until the engine is `idle` (nothing of its owner
  left downstream, its namespaces included): the namespace rule takes the assignment labels off, the engine
  deletes downstream on that positive evidence, and only then is it stopped. Stopping it earlier would orphan
  what it synced; kcp being unreachable never makes an engine idle (its caches keep what they hold). A workspace
  that was draining when this syncer stopped is found again by its namespaces downstream (made for this
  SyncTarget, by their key annotation; not going already), and its engine runs again until they are gone.
- An engine that fails is logged and restarted with backoff; the others go on.
- Reading Namespaces over `*` takes an identity that may: push mode's (the cluster controller's) does it directly;
  a pull-mode syncer's (a ServiceAccount of C, a stranger in every other workspace) goes through kcp's syncer
  virtual workspace of T (`options.placed_upstream`), which it may use with verb `sync` on T and which shows only
  the namespaces placed on T and what is in them. A 403 is logged once and the look retried with backoff, so a
  syncer without the grant serves C alone until it gets it.
"""

from __future__ import annotations

import asyncio
import dataclasses
from collections.abc import Callable
from dataclasses import dataclass
from typing import TYPE_CHECKING, Protocol

import structlog
from prometheus_client import CollectorRegistry

from kcpcommon.backoff import Backoff
from kcpcommon.errors import APIClientError
from kcpcommon.informer import SharedInformer
from kcpcommon.keys import WILDCARD_CLUSTER, cluster_of, placed_label, sync_target_key
from kcpcommon.tasks import cancel_and_wait, spawn

from .metrics import SyncerMetrics
from .names import OWNER_LABEL, SYNC_TARGET_KEY_ANNOTATION, owner
from .namespaces import downstream_workspace
from .objects import meta

if TYPE_CHECKING:
    from . import SyncerOptions

log = structlog.get_logger("kcpsyncer.placed")

IDLE_CHECK = 1.0  # seconds between looks at whether the engine of a workspace no longer placed here is done


class Engine(Protocol):
    """What the supervisor needs of an engine (`engine.Syncer`)."""

    @property
    def idle(self) -> bool: ...

    async def run(self) -> None: ...


EngineFactory = Callable[["SyncerOptions", CollectorRegistry | None], Engine]


def _syncer(options: SyncerOptions, registry: CollectorRegistry | None) -> Engine:
    from .engine import Syncer

    return Syncer(options, registry=registry)


@dataclass
class _Served:
    """One placed workspace's engine: the current one (None while it waits out a failure) and its task."""

    task: asyncio.Task[None] | None = None
    engine: Engine | None = None
    failures: int = 0


class PlacedWorkspaces:
    """Runs an engine per workspace placed on this SyncTarget (see the module docstring)."""

    def __init__(self, options: SyncerOptions, *, registry: CollectorRegistry | None = None,
                 engine: EngineFactory = _syncer, namespaces: SharedInformer | None = None,
                 leftovers: SharedInformer | None = None,
                 idle_check: float = IDLE_CHECK, backoff: Callable[[], Backoff] = lambda: Backoff(initial=1.0)) -> None:
        self.options = options
        self.compute, self.target = options.logical_cluster, options.sync_target
        # any value: `Placed`, or the splitter's `Draining` while it moves the namespace's workloads off T
        self.selector = placed_label(self.compute, self.target)
        self.key = sync_target_key(self.compute, self.target)
        self._registry = registry
        self._engine = engine
        self._idle_check = idle_check
        self._backoff = backoff
        self.upstream = options.placed_upstream or options.upstream
        self._resource = self.upstream.dynamic(WILDCARD_CLUSTER).resource("v1", "namespaces", namespaced=False)
        self.namespaces = namespaces if namespaces is not None else SharedInformer(
            self._resource, cluster=WILDCARD_CLUSTER, label_selector=self.selector,
            name=f"informer:*:v1/namespaces[{self.selector}]")
        downstream = options.downstream.dynamic().resource("v1", "namespaces", namespaced=False)
        self.leftovers = leftovers if leftovers is not None else SharedInformer(  # every syncer's, this cluster's
            downstream, cluster=self.target, label_selector=OWNER_LABEL,
            name=f"informer:{self.target}:v1/namespaces[{OWNER_LABEL}]")
        self.served: dict[str, _Served] = {}
        self.metrics = SyncerMetrics(registry, logical_cluster=self.compute, sync_target=self.target)
        self._changed = asyncio.Event()
        self._log = log.bind(logical_cluster=self.compute, sync_target=self.target)
        for informer in (self.namespaces, self.leftovers):
            informer.add_handler(on_add=self._wake, on_update=lambda old, new: self._wake(new),
                                 on_delete=self._wake, name=f"syncer:{self.target}:placed", inline=True)

    def placed(self) -> set[str]:
        """The workspaces, other than the SyncTarget's own, with a namespace placed on it now."""
        found = {cluster_of(ns) for ns in self.namespaces.indexer.list()}
        return {w for w in found if w and w != self.compute}

    def draining(self) -> set[str]:
        """The workspaces, other than the SyncTarget's own, with a namespace this SyncTarget's syncer made for them
        on the cluster (its key annotation: another workspace's SyncTarget of the same name on the same cluster
        makes namespaces with the same owner label) that is not going already."""
        found = set()
        for ns in self.leftovers.indexer.list():
            workspace = downstream_workspace(ns)
            annotations = meta(ns).get("annotations") or {}
            if workspace and workspace != self.compute and not meta(ns).get("deletionTimestamp") \
                    and annotations.get(SYNC_TARGET_KEY_ANNOTATION) == self.key \
                    and (meta(ns).get("labels") or {}).get(OWNER_LABEL) == owner(workspace, self.target):
                found.add(workspace)
        return found

    async def run(self) -> None:
        """Watch the placed namespaces (once they may be read) and supervise the engines, until cancelled."""
        watch = spawn(self._watch(), name=f"syncer:{self.compute}:{self.target}:placed-namespaces")
        try:
            await self.supervise()
        finally:
            await cancel_and_wait(watch)

    async def supervise(self) -> None:
        """Once the placed namespaces have listed: an engine per placed workspace, kept until it is idle once its
        workspace is placed here no more. Until cancelled, then every engine stops."""
        try:
            await asyncio.gather(self.namespaces.wait_for_sync(), self.leftovers.wait_for_sync())
            while True:
                self._changed.clear()
                self.reconcile()
                try:  # a running engine turns idle without telling: look again every `idle_check` seconds
                    await asyncio.wait_for(self._changed.wait(), self._idle_check)
                except TimeoutError:
                    pass
        finally:
            await cancel_and_wait(*(s.task for s in self.served.values() if s.task is not None))
            self.served.clear()
            self.metrics.placed_workspaces(0)

    def reconcile(self) -> None:
        """Start the engines of newly placed workspaces (and of those with namespaces left downstream); stop those
        of workspaces no longer placed, once idle."""
        placed = self.placed()
        wanted = placed | self.draining()
        for workspace in sorted(wanted - set(self.served)):
            served = self.served[workspace] = _Served()
            served.task = spawn(self._serve(workspace, served), name=f"syncer:{workspace}:{self.target}:placed")
            self._log.info("serving a workspace placed here, or draining off", workspace=workspace,
                           placed=workspace in placed)
        for workspace in sorted(set(self.served) - wanted):
            served = self.served[workspace]
            if served.engine is not None and served.engine.idle:
                if served.task is not None:
                    served.task.cancel()
                del self.served[workspace]
                self._log.info("stopped serving a workspace no longer placed here: nothing of it is left downstream",
                               workspace=workspace)
        self.metrics.placed_workspaces(len(self.served))

    async def _serve(self, workspace: str, served: _Served) -> None:
        """Run `workspace`'s engine; restart it with backoff when it fails."""
        options = dataclasses.replace(self.options, upstream=self.upstream, logical_cluster=workspace,
                                      heartbeat=False, tunnel=False, serve_placed=False,
                                      sync_target_workspace=self.compute)
        delays = self._backoff()
        while True:
            served.engine = self._engine(options, self._registry)
            try:
                await served.engine.run()
                raise RuntimeError("the engine returned")
            except asyncio.CancelledError:
                raise
            except Exception as exc:
                served.failures += 1
                delay = delays.next()
                self.metrics.error("PlacedEngineFailed")
                self._log.warning("the engine of a placed workspace failed; restarting", workspace=workspace,
                                  error=str(exc) or type(exc).__name__, failures=served.failures,
                                  retry_in=round(delay, 2))
            served.engine = None  # not idle while it waits: what it holds downstream is unknown
            await asyncio.sleep(delay)

    async def _watch(self) -> None:
        """Run the placed namespaces' informer once this identity may list Namespaces over `*`; until then ask
        again with backoff, saying why once (a pull-mode syncer's ServiceAccount may not)."""
        delays, told = self._backoff(), False
        while True:
            try:
                await self._resource.list(label_selector=self.selector, limit=1)
                break
            except APIClientError as exc:
                delay = delays.next()
                if not told:
                    told = True
                    self._log.warning("cannot list namespaces across workspaces: workspaces placed on this "
                                      "SyncTarget are not served until this identity may; retrying",
                                      status=exc.status, reason=exc.reason, error=exc.message)
                await asyncio.sleep(delay)
        if told:
            self._log.info("namespaces across workspaces are readable now: serving placed workspaces")
        leftovers = spawn(self.leftovers.run(), name=self.leftovers.name)
        try:
            await self.namespaces.run()
        finally:
            await cancel_and_wait(leftovers)

    def _wake(self, *_: object) -> None:
        self._changed.set()
