"""The syncer engine: spec down, status up, for one SyncTarget of one logical cluster.

A library of its own, not part of the `kcp-syncer` service, because the cluster
controller runs syncers inside its own process (push mode) and services never
import each other; not part of kcpcommon either, which keeps only what every
daemon shares. `kcp-syncer` is a thin daemon around `run_syncer`.

Modules: `engine` wires informers, queue and workers; `down` applies specs,
`up` writes status, `remove` deletes (on positive evidence only),
`summary` keeps the statuses of an object on several clusters apart and sums
them up, `specdiff` applies the per-target spec diffs of an object split across targets and `revisions` finds
the kcp ReplicaSet a split Deployment's pods belong to, `namespaces` maps and cleans downstream namespaces (`foreign` finds what
else they hold), `pernamespace`
watches a type it may not read cluster-wide one namespace at a time, `heartbeat` beats, `placed` runs an
engine per workspace placed on the SyncTarget (one syncer per physical cluster);
`synced` holds the queued key and each type's caches, `objects` reads
metadata; `discovery`, `names`, `transform` and `metrics` are what they say.

    upstream, downstream = await connect(from_kubeconfig, to_kubeconfig, sync_target="east")
    await run_syncer(SyncerOptions(upstream=upstream, downstream=downstream, sync_target="east",
                                   logical_cluster="root:org"), registry=registry, ready=ready)

The caller owns (and closes) both client factories: the cluster controller
shares one kcp `ClientFactory` across all its syncers.
"""

from __future__ import annotations

import asyncio
import logging
from dataclasses import dataclass
from pathlib import Path

from prometheus_client import CollectorRegistry

from kcpcommon.clients import ClientFactory, KubeClientFactory
from kcpcommon.tasks import cancel_and_wait, spawn
from kcpcommon.version import package_version

from .names import (
    ASSIGNMENT_LABEL,
    DEFAULT_RESOURCES,
    FIELD_MANAGER,
    NAMESPACE_LOCATOR_ANNOTATION,
    downstream_namespace,
    syncer_finalizer,
)

__all__ = ["ASSIGNMENT_LABEL", "BURST", "DEFAULT_RESOURCES", "FIELD_MANAGER", "NAMESPACE_LOCATOR_ANNOTATION",
           "QPS", "SyncerOptions", "connect", "downstream_namespace", "keep_bodies_out_of_logs", "run_syncer",
           "syncer_finalizer", "syncer_view"]

COMPONENT = "kcp-syncer"
VERSION = package_version("kcp-syncer-lib")  # in the User-Agent: kcp-syncer/<version>
# a syncer's request budget to each side: one change costs one write on one side (an apply down, a status or
# finalizer patch up), and the ceiling must sit above the 300 objects/s a syncer is expected to keep up with
QPS = 1000.0
BURST = 2000


@dataclass(frozen=True)
class SyncerOptions:
    """One syncer: which logical cluster of kcp (upstream) goes to which physical cluster (downstream).

    `upstream` is kcp (any logical cluster; the syncer uses `logical_cluster`),
    `downstream` the physical cluster (a `KubeClientFactory` named after the
    SyncTarget). `resources` are `plural.group` names as in SyncTarget
    `spec.resources` ("deployments.apps", "services").
    """

    upstream: ClientFactory
    downstream: KubeClientFactory
    sync_target: str
    logical_cluster: str
    resources: tuple[str, ...] = DEFAULT_RESOURCES
    heartbeat_interval: float = 10.0
    # reconciles (and so writes) in flight at once. A worker waits out its write's round trip, so one
    # syncer manages about workers / round trip objects a second: 16 workers fell behind 100 new
    # Deployments a second (two writes each) once a loaded kcp answered in 100 ms. More cost memory
    # only while busy: one connection each (asyncio keeps a 256 KiB buffer per TLS connection).
    workers: int = 64
    discovery_retry: float = 5.0  # seconds between looks for a type that is not served (yet) upstream or down
    # the SyncTarget's own engine beats and holds the tunnel; an engine of a workspace placed on it (placed.py)
    # does neither: there is no SyncTarget in that workspace
    heartbeat: bool = True
    tunnel: bool = True
    # `run_syncer` also serves every other workspace whose namespaces are placed on this SyncTarget (placed.py)
    serve_placed: bool = True
    # the SyncTarget's workspace, when not `logical_cluster` (an engine of a placed workspace): named on the
    # downstream namespaces, so a syncer finds its own again across workspaces
    sync_target_workspace: str = ""
    # how the workspaces placed on the SyncTarget are reached (placed.py): kcp's syncer virtual workspace of this
    # SyncTarget (`syncer_view(upstream, ...)`: a pull-mode syncer, whose identity reaches nothing else), or, None,
    # `upstream` itself (push mode: the cluster controller's identity reads every workspace)
    placed_upstream: ClientFactory | None = None


SYNCER_VIEW = "/services/syncer/{cluster}/{sync_target}"  # kcp's syncer virtual workspace of one SyncTarget


def syncer_view(upstream: ClientFactory, *, logical_cluster: str, sync_target: str) -> ClientFactory:
    """kcp's syncer virtual workspace of SyncTarget `sync_target` of `logical_cluster`, with `upstream`'s
    credentials: the placed namespaces of every workspace, and nothing more (close it after)."""
    return upstream.through(SYNCER_VIEW.format(cluster=logical_cluster, sync_target=sync_target))


async def connect(from_kubeconfig: str | Path | None, to_kubeconfig: str | Path, *, sync_target: str,
                  from_context: str | None = None, to_context: str | None = None, qps: float = QPS,
                  burst: int = BURST) -> tuple[ClientFactory, KubeClientFactory]:
    """Client factories for kcp and the physical cluster, from kubeconfig paths or text (close both after)."""
    upstream = await ClientFactory.load(from_kubeconfig, context=from_context, component=COMPONENT,
                                        version=VERSION, qps=qps, burst=burst)
    try:
        downstream = await KubeClientFactory.load(to_kubeconfig, context=to_context, name=sync_target,
                                                  component=COMPONENT, version=VERSION, qps=qps, burst=burst)
    except BaseException:
        await upstream.close()
        raise
    return upstream, downstream


async def run_syncer(options: SyncerOptions, *, registry: CollectorRegistry | None = None,
                     ready: asyncio.Event | None = None) -> None:
    """Sync until cancelled; `ready` is set once every synced type's caches (up and down) have synced.

    Metrics go to `registry` (labelled by logical cluster and sync target, so
    many syncers share one registry). Failures to reach either side are
    retried for ever; nothing is deleted downstream without positive evidence.
    """
    from .engine import Syncer
    from .placed import PlacedWorkspaces

    keep_bodies_out_of_logs()
    if not options.serve_placed:
        await Syncer(options, registry=registry).run(ready=ready)
        return
    supervisor = PlacedWorkspaces(options, registry=registry)
    own = spawn(Syncer(options, registry=registry, served_workspaces=lambda: len(supervisor.served)).run(ready=ready),
                name=f"syncer:{options.logical_cluster}")
    placed = spawn(supervisor.run(), name=f"syncer:{options.logical_cluster}:{options.sync_target}:placed")
    try:  # both run until cancelled: whichever ends first (it failed) ends the other, and its error is raised
        done, _ = await asyncio.wait([own, placed], return_when=asyncio.FIRST_COMPLETED)
    finally:
        await cancel_and_wait(own, placed)
    for task in done:
        task.result()
    raise RuntimeError("the syncer returned")


def keep_bodies_out_of_logs() -> None:
    """kubernetes_asyncio logs every response body at debug level, and the syncer reads Secrets: never
    let its logger go below info, whatever level the daemon logs at."""
    client_log = logging.getLogger("kubernetes_asyncio")
    if client_log.getEffectiveLevel() < logging.INFO:
        client_log.setLevel(logging.INFO)
