"""`kcp-cluster-controller`: install the SyncTarget and Location CRDs (and, with --api-export-workspace, export
the same APIs from there), watch SyncTargets and Locations everywhere, reconcile them."""

from __future__ import annotations

import asyncio
from importlib import resources as package_files
from typing import Any

import structlog
import yaml
from prometheus_client import CollectorRegistry

from kcpcommon.backoff import Backoff
from kcpcommon.clients import ClientFactory
from kcpcommon.controller import Controller
from kcpcommon.daemon import HealthServer, configure_logging, parse_settings, run_daemon, serve_controller
from kcpcommon.errors import APIAlreadyExistsError, APIClientError
from kcpcommon.informer import deleted_object
from kcpcommon.informer_factory import SharedInformerFactory
from kcpcommon.keys import WILDCARD_CLUSTER, ObjectKey, key_for
from kcpcommon.ratelimit import ItemExponentialFailureRateLimiter
from kcpcommon.sharding import owns
from kcpcommon.workqueue import WorkQueue

from . import VERSION
from .controller import API_VERSION, PLURAL, SyncerRunner, SyncTargetReconciler
from .exports import EXPORTS, Merged, publish
from .locations import API_VERSION as LOCATION_API_VERSION
from .locations import PLURAL as LOCATIONS
from .locations import LocationReconciler
from .modes import NoneMode, PushMode
from .push import PushSyncers
from .settings import ClusterControllerSettings

COMPONENT = "kcp-cluster-controller"
INSTALL_CLUSTER = "admin"

log = structlog.get_logger(COMPONENT)


def packaged_crd(file: str) -> dict[str, Any]:
    """A CRD shipped with the package (the same file `kubectl apply` takes)."""
    text = package_files.files("kcp_cluster_controller").joinpath(file).read_text()
    crd: dict[str, Any] = yaml.safe_load(text)
    return crd


CRD_FILES = ("synctarget-crd.yaml", "location-crd.yaml", "placement-crd.yaml")


async def install_crd(kcp: ClientFactory, cluster: str = INSTALL_CLUSTER, file: str = "synctarget-crd.yaml") -> None:
    """Create a packaged CRD in `cluster`, or bring it up to date; retried until kcp answers."""
    crds = kcp.dynamic(cluster).resource("apiextensions.k8s.io/v1", "customresourcedefinitions", namespaced=False)
    wanted = packaged_crd(file)
    kind = wanted["spec"]["names"]["kind"]
    backoff = Backoff(initial=0.5, cap=10.0)
    while True:
        try:
            try:
                await crds.create(wanted)
                log.info(f"{kind} CRD installed", cluster=cluster)
            except APIAlreadyExistsError:
                existing = await crds.get(wanted["metadata"]["name"])
                if existing.get("spec") != {**existing.get("spec", {}), **wanted["spec"]}:
                    wanted["metadata"]["resourceVersion"] = existing["metadata"]["resourceVersion"]
                    await crds.replace(wanted)
                    log.info(f"{kind} CRD updated", cluster=cluster)
            return
        except APIClientError as exc:
            delay = backoff.next()
            log.warning(f"cannot install the {kind} CRD yet", cluster=cluster, error=str(exc), retry_in=round(delay, 2))
            await asyncio.sleep(delay)


async def serve(settings: ClusterControllerSettings) -> None:
    await serve_controller(settings, component=COMPONENT, version=VERSION,
                           lead=lambda kcp, health, registry: _run(settings, kcp, health, registry))


async def _run(settings: ClusterControllerSettings, kcp: ClientFactory, health: HealthServer,
               registry: CollectorRegistry) -> None:
    for file in CRD_FILES:
        await install_crd(kcp, file=file)
    queue: WorkQueue[ObjectKey] = WorkQueue("synctargets", rate_limiter=ItemExponentialFailureRateLimiter(
        0.5, settings.heartbeat_interval))
    identities: dict[str, str] = {}
    if settings.api_export_workspace:
        identities = await publish(kcp, settings.api_export_workspace,
                                   {name: [packaged_crd(file) for file in files] for name, files in EXPORTS.items()})
    factory = SharedInformerFactory(kcp)

    def informers(api_version: str, plural: str, export: str) -> list[Any]:
        """The type's objects in every workspace: the CRDs', and the export's (`<plural>:<identity>`) if any."""
        found = [factory.informer(cluster=WILDCARD_CLUSTER, api_version=api_version, plural=plural, namespaced=False)]
        if export in identities:
            found.append(factory.informer(cluster=WILDCARD_CLUSTER, api_version=api_version,
                                          plural=f"{plural}:{identities[export]}", namespaced=False))
        return found

    targets = informers(API_VERSION, PLURAL, "workload.kcp.io")
    push = PushSyncers(kcp, heartbeat_interval=settings.heartbeat_interval, registry=registry, on_change=queue.add)
    mode: SyncerRunner = PushMode(push) if settings.syncer_mode == "push" else NoneMode()
    pull = None
    if settings.syncer_mode == "pull":
        from .pull import PullMode

        mode = pull = PullMode(kcp, settings)
    target_cache = Merged(*(i.indexer for i in targets))
    reconciler = SyncTargetReconciler(kcp, target_cache, mode,
                                      heartbeat_interval=settings.heartbeat_interval,
                                      heartbeat_threshold=settings.heartbeat_threshold,
                                      discovery_interval=settings.discovery_interval, enqueue=queue.add)
    controller = Controller("synctargets", reconciler.reconcile, workers=settings.workers, queue=queue,
                            registry=registry, component=COMPONENT)

    def enqueue(obj: Any) -> None:
        key = key_for(deleted_object(obj))
        if owns(key.cluster, settings.shard_index, settings.shards):
            controller.enqueue(key)

    location_informers = informers(LOCATION_API_VERSION, LOCATIONS, "scheduling.kcp.io")
    locations = LocationReconciler(kcp, Merged(*(i.indexer for i in location_informers)), target_cache)
    location_controller = Controller("locations", locations.reconcile, workers=2, registry=registry,
                                     component=COMPONENT)

    def enqueue_location(obj: Any) -> None:
        key = key_for(deleted_object(obj))
        if owns(key.cluster, settings.shard_index, settings.shards):
            location_controller.enqueue(key)

    def target_changed(obj: Any) -> None:
        enqueue(obj)
        cluster = key_for(deleted_object(obj)).cluster
        if owns(cluster, settings.shard_index, settings.shards):
            for key in locations.keys_in(cluster):  # its Locations count it anew
                location_controller.enqueue(key)

    for each in targets:
        each.add_handler(on_add=target_changed, on_update=lambda old, new: target_changed(new),
                         on_delete=target_changed, name="synctargets")
    for each in location_informers:
        each.add_handler(on_add=enqueue_location, on_update=lambda old, new: enqueue_location(new), name="locations")
    def targets_synced() -> bool:
        """The CRDs' SyncTargets listed (installed in admin, so always served); an export's may be served nowhere
        until a workspace binds it."""
        return targets[0].has_synced and all(i.synced_or_unserved for i in targets[1:])

    health.add_readiness_check("informers", lambda: all(i.synced_or_unserved for i in (*targets, *location_informers)))
    factory.start()
    log.info("watching SyncTargets and Locations in every logical cluster", syncer_mode=settings.syncer_mode,
             shard=settings.shard_index, shards=settings.shards, exported_from=settings.api_export_workspace or None)
    try:
        await asyncio.gather(
            controller.start(wait_for=[targets_synced]),
            location_controller.start(wait_for=[targets_synced,
                                                lambda: all(i.synced_or_unserved for i in location_informers)]))
    finally:
        await push.stop_all()
        if pull is not None:
            await pull.stop()
        await factory.stop()
        await reconciler.close()


def main() -> None:
    settings = parse_settings(ClusterControllerSettings, prog=COMPONENT)
    configure_logging(settings.log_level)
    raise SystemExit(run_daemon(lambda: serve(settings)))
