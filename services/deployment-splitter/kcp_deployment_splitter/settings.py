"""kcp-deployment-splitter's settings: every field a `--flag` and a `KCP_DEPLOYMENT_SPLITTER_*` variable."""

from __future__ import annotations

from pydantic import Field

from kcpcommon.settings import ShardedDaemonSettings, settings_config

from .names import COMPONENT


class SplitterSettings(ShardedDaemonSettings):
    """Spread Deployments over Ready SyncTargets in every logical cluster and sum their status back."""

    model_config = settings_config(COMPONENT)

    grace_period: float = Field(30.0, ge=0, description="seconds a SyncTarget may be NotReady before its "
                                                        "replicas move to the others")
    capacity_grace_period: float = Field(30.0, ge=0, description="seconds a child may keep replicas unavailable "
                                                                 "after creating them all before its cluster "
                                                                 "counts as full and the rest move elsewhere")
    capacity_retry_period: float = Field(600.0, gt=0, description="seconds a cluster counts as full for a "
                                                                  "Deployment before replicas are tried there again")
    place_dependencies: bool = Field(True, description="place the ConfigMaps, Secrets, ServiceAccounts, PVCs and "
                                                      "Services a workload uses on every cluster that runs it")
    schedule_namespaces: bool = Field(True, description="assign each Namespace one Ready SyncTarget and label the "
                                                        "unassigned objects in it (StatefulSets, Jobs, ...) for it "
                                                        "(opt out per Namespace: label scheduling.kcp.io/disabled)")
    remote_endpoints: bool = Field(True, description="give each cluster a Service is on EndpointSlices for its pods "
                                                     "in the other clusters (multi-cluster Services)")
