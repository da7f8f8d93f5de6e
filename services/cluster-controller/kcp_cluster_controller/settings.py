"""kcp-cluster-controller's settings: every field a `--flag` and a `KCP_CLUSTER_CONTROLLER_*` variable."""

from __future__ import annotations

from typing import Literal

from pydantic import Field

from kcpcommon.settings import ShardedDaemonSettings, settings_config


class ClusterControllerSettings(ShardedDaemonSettings):
    """Watch SyncTargets in every logical cluster: import their types, run or install their syncers, keep Ready."""

    model_config = settings_config("kcp-cluster-controller")

    syncer_mode: Literal["push", "pull", "none"] = Field(
        "push", description="push: run each SyncTarget's syncer in this process; pull: install it into the "
                            "physical cluster; none: expect a syncer started by someone else")
    heartbeat_interval: float = Field(10.0, gt=0, description="seconds between syncer heartbeats (and between "
                                                              "this controller's looks at each cluster)")
    heartbeat_threshold: float = Field(30.0, gt=0, description="seconds without a syncer heartbeat after which "
                                                               "a SyncTarget is not Ready")
    discovery_interval: float = Field(60.0, gt=0, description="seconds between looks at a physical cluster's "
                                                              "API types (there is no watch for them)")
    syncer_image: str = Field("kcp-syncer:latest", description="image of the syncer Deployment (pull mode)")
    syncer_kcp_server: str = Field("", description="kcp's URL as the physical cluster reaches it (pull mode); "
                                                   "empty: the URL of --kubeconfig")
    api_export_workspace: str = Field("", description="also export kcp's SyncTarget and Location APIs from this "
                                                      "workspace (APIExports workload.kcp.io and scheduling.kcp.io) "
                                                      "and reconcile the objects of every workspace that binds them; "
                                                      "empty: CRDs only")
