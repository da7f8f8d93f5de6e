"""`kcp-sim-cluster`: the apiserver's serving loop (credentials, embedded etcd over mutual TLS) with the
simulated cluster's configuration, and a kubeconfig per simulated cluster."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import structlog

from kcp_apiserver.embedding import (
    DEFAULT_CLUSTER,
    Backend,
    Credentials,
    ServerConfig,
    run,
    start_event_loop,
    write_contexts_kubeconfig,
)
from kcp_sim_cluster.config import sim_config
from kcp_sim_cluster.settings import SimClusterSettings
from kcpcommon.logs import configure_logging
from kcpcommon.settings import parse_settings

log = structlog.get_logger("kcp-sim-cluster")


def logical_clusters(args: SimClusterSettings) -> tuple[str, ...]:
    """Where each simulated cluster lives: one is the default logical cluster (the root URL); several
    are /clusters/<name>-<i>."""
    if args.clusters == 1:
        return (DEFAULT_CLUSTER,)
    return args.cluster_names


def build(args: Any, backend: Backend) -> ServerConfig:
    return sim_config(args, backend, logical_clusters(args))


def publish(args: Any, url: str, creds: Credentials) -> None:
    """admin.kubeconfig for the default logical cluster (the simulated cluster when there is one);
    with --clusters N also <name>-<i>.kubeconfig for each, pointing at /clusters/<name>-<i>."""
    root = Path(args.root_dir)
    if args.clusters == 1:
        write_contexts_kubeconfig(root / "admin.kubeconfig", [(args.name, url)], creds)
        return
    write_contexts_kubeconfig(root / "admin.kubeconfig", [(DEFAULT_CLUSTER, url)], creds)
    for name in args.cluster_names:
        write_contexts_kubeconfig(root / f"{name}.kubeconfig", [(name, f"{url}/clusters/{name}")], creds)


def main(argv: list[str] | None = None) -> None:
    args = parse_settings(SimClusterSettings, argv, prog="kcp-sim-cluster")
    args.root_dir = str(Path(args.root_dir).resolve())
    configure_logging(args.log_level)
    start_event_loop(run(args, build, publish, worker_module="kcp_sim_cluster"))
