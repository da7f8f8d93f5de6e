"""`kcp-sim-cluster agent`: settings, logging, the health server, then the node and pod agents until SIGTERM."""

from __future__ import annotations

import asyncio
from collections.abc import Sequence

import structlog
from prometheus_client import CollectorRegistry

from kcp_sim_cluster.agent.nodes import COMPONENT, NodeAgent
from kcp_sim_cluster.agent.pods import PodAgent
from kcp_sim_cluster.agent.server import server_facts
from kcp_sim_cluster.agent.settings import AgentSettings
from kcpcommon.clients import KubeClientFactory
from kcpcommon.daemon import HealthServer, configure_logging, parse_settings, run_daemon
from kcpcommon.events import ClientEventSink, EventRecorder
from kcpcommon.informer_factory import SharedInformerFactory
from kcpcommon.version import package_version

log = structlog.get_logger(COMPONENT)

VERSION = package_version("kcp-sim-cluster")
KUBELET = "kubelet"  # the Events' source component, as a real kubelet's
CLUSTER = "cluster"  # what keys and logs call the one server the agent talks to


async def serve(settings: AgentSettings) -> None:
    """Serve health and metrics, learn the server, run the nodes and their pods until cancelled."""
    registry = CollectorRegistry()
    health = HealthServer(registry=registry, host=settings.health_address, port=settings.health_port)
    indexes = {name: i for i, name in enumerate(settings.node_names, start=1)}
    started: list[tuple[NodeAgent, PodAgent]] = []  # until the agents exist, /readyz says not ready
    health.add_readiness_check("informers", lambda: all(n.informer.has_synced and p.informer.has_synced
                                                        for n, p in started) and bool(started))
    health.add_readiness_check("nodes", lambda: bool(started) and started[0][0].registered())
    async with health, await KubeClientFactory.load(settings.kubeconfig, context=settings.context, name=CLUSTER,
                                                    component=COMPONENT, version=VERSION, qps=settings.api_qps,
                                                    burst=settings.api_burst) as clients:
        facts = await server_facts(clients.dynamic())
        factory = SharedInformerFactory(clients)
        nodes = NodeAgent(clients, factory, indexes=indexes, capacity=settings.capacity, facts=facts,
                          registry=registry, lease_duration=settings.node_lease_duration_seconds)
        recorder = EventRecorder(ClientEventSink(clients), component=KUBELET)
        pods = PodAgent(clients, factory, indexes=indexes, ready_delay=settings.ready_delay, registry=registry,
                        recorder=recorder)
        started.append((nodes, pods))
        log.info("node agent starting", server=clients.server, nodes=settings.nodes,
                 kubelet_version=facts.kubelet_version, node_leases=facts.serves_leases, health_port=health.port)
        factory.start()
        recorder.start()
        try:
            await asyncio.gather(nodes.run(), pods.run())
        finally:
            await factory.stop()
            await recorder.stop()
            if settings.delete_nodes_on_exit:
                await nodes.delete_nodes()


def main(argv: Sequence[str] | None = None) -> None:
    settings = parse_settings(AgentSettings, argv, prog="kcp-sim-cluster agent")
    configure_logging(settings.log_level)
    raise SystemExit(run_daemon(lambda: serve(settings)))
