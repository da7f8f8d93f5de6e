"""The simulated control plane as one Runnable: shared informers, the event recorder and every
controller whose resources the server serves.
"""

from __future__ import annotations

import asyncio

import structlog

from kcp_apiserver.embedding import ServerParts
from kcp_sim_cluster.controlplane import events
from kcp_sim_cluster.controlplane.base import SimController
from kcp_sim_cluster.controlplane.informer import Informer, cluster_of, new_informer
from kcp_sim_cluster.controlplane.options import ControlPlaneOptions
from kcp_sim_cluster.controlplane.podutil import node_name
from kcp_sim_cluster.controlplane.runtime import Sim
from kcp_sim_cluster.controlplane.scheduler import node_index_value
from kcpcommon.tasks import cancel_and_wait, spawn, supervise

log = structlog.get_logger("sim.controlplane")


def _controller_types() -> list[type[SimController]]:
    from kcp_sim_cluster.controlplane.cronjob import CronJobController
    from kcp_sim_cluster.controlplane.daemonset import DaemonSetController
    from kcp_sim_cluster.controlplane.deployment import DeploymentController
    from kcp_sim_cluster.controlplane.disruption import DisruptionController
    from kcp_sim_cluster.controlplane.endpoints import EndpointsController
    from kcp_sim_cluster.controlplane.hpa import HorizontalPodAutoscalerController
    from kcp_sim_cluster.controlplane.job import JobController
    from kcp_sim_cluster.controlplane.kubelet import Kubelet
    from kcp_sim_cluster.controlplane.nodelifecycle import NodeLifecycleController
    from kcp_sim_cluster.controlplane.nodes import NodeController
    from kcp_sim_cluster.controlplane.persistentvolumes import VolumeController
    from kcp_sim_cluster.controlplane.protection import StorageProtectionController
    from kcp_sim_cluster.controlplane.quota import ResourceQuotaController
    from kcp_sim_cluster.controlplane.replicaset import ReplicaSetController
    from kcp_sim_cluster.controlplane.replication import ReplicationManager
    from kcp_sim_cluster.controlplane.rootca import RootCAPublisher
    from kcp_sim_cluster.controlplane.scheduler import Scheduler
    from kcp_sim_cluster.controlplane.servicelb import ServiceLoadBalancer
    from kcp_sim_cluster.controlplane.statefulset import StatefulSetController
    from kcp_sim_cluster.controlplane.volumes import VolumeBinder

    return [NodeController, NodeLifecycleController, Scheduler, Kubelet, ReplicaSetController, DeploymentController,
            EndpointsController, StatefulSetController, DaemonSetController, JobController, CronJobController,
            VolumeBinder, VolumeController, RootCAPublisher, ServiceLoadBalancer, ReplicationManager,
            ResourceQuotaController, DisruptionController, HorizontalPodAutoscalerController,
            StorageProtectionController]


class ControlPlane:
    """kube-controller-manager, scheduler and kubelets of every simulated cluster of this server."""

    def __init__(self, parts: ServerParts, options: ControlPlaneOptions) -> None:
        if parts.registry is None:
            raise RuntimeError("the simulated control plane writes through the registry, which is not built")
        event_res = next(r for r in parts.catalog.builtins if r.group == "" and r.plural == "events")
        self.informers = parts.informers
        self.sim = Sim(options=options, storage=parts.storage, catalog=parts.catalog,
                       registry=parts.registry, recorder=events.recorder(parts.registry, event_res))
        self.controllers: list[SimController] = []
        self._tasks: list[asyncio.Task[None]] = []

    async def start(self) -> None:
        sim = self.sim
        kinds = []
        for kind in _controller_types():
            missing = [n for n in kind.needs if sim.resource(n) is None]
            if missing:
                log.info("controller not started: resources not served", controller=kind.name, missing=missing)
            else:
                kinds.append(kind)
        await self._informers({n for k in kinds for n in (*k.needs, *k.optional) if sim.resource(n) is not None})
        for kind in kinds:
            controller = kind(sim)
            controller.wire()
            self.controllers.append(controller)
        sim.recorder.start()
        for controller in self.controllers:
            self._tasks.append(spawn(self._run(controller), name=f"sim:{controller.name}"))
            for i, loop in enumerate(controller.background()):
                self._tasks.append(spawn(loop, name=f"sim:{controller.name}:bg{i}"))

    async def _informers(self, names: set[str]) -> None:
        """The sim's view of the server's shared informer of each resource it reads, kept decoded: the
        scheduler and the controllers look objects up on every event."""
        sim = self.sim
        clusters = frozenset(sim.options.clusters)
        for name in sorted(names):
            res = sim.resource(name)
            assert res is not None
            shared = await self.informers.get(res)
            shared.keep_decoded()
            sim.informers[name] = new_informer(shared, res.namespaced, clusters)
        if "pods" in sim.informers:
            sim.informers["pods"].add_index(
                "node", lambda p: [node_index_value(cluster_of(p), n)] if (n := node_name(p)) else [])

    async def _run(self, controller: SimController) -> None:
        informers: list[Informer] = [self.sim.informer(n) for n in controller.needs]
        for informer in informers:
            await informer.wait_for_sync()
        for key in controller.initial_keys():
            controller.controller.enqueue(key)
        await supervise(controller.controller.start, name=f"sim:{controller.name}:workers")

    async def stop(self) -> None:
        for controller in self.controllers:
            controller.controller.stop()
        await cancel_and_wait(*self._tasks)
        for informer in self.sim.informers.values():
            informer.stop()
        await self.sim.recorder.stop()
