"""kcp-syncer's settings: every field a `--flag` and a `KCP_SYNCER_*` environment variable."""

from __future__ import annotations

from typing import Literal

from pydantic import Field, field_validator
from pydantic_settings import BaseSettings

from kcpcommon.settings import settings_config
from kcpsyncer import BURST, DEFAULT_RESOURCES, QPS


class SyncerSettings(BaseSettings):
    """Sync the objects of one logical cluster assigned to a SyncTarget down to its physical cluster."""

    model_config = settings_config("kcp-syncer")

    from_kubeconfig: str | None = Field(None, description="kubeconfig file to reach kcp; unset: the in-cluster "
                                                          "service account")
    from_context: str | None = Field(None, description="context of --from-kubeconfig; unset: its current one")
    to_kubeconfig: str = Field(description="kubeconfig file of the physical cluster")
    to_context: str | None = Field(None, description="context of --to-kubeconfig; unset: its current one")
    sync_target: str = Field(min_length=1, description="name of the SyncTarget this syncer serves")
    logical_cluster: str = Field("admin", min_length=1, description="logical cluster holding the SyncTarget and "
                                                                    "the workloads")
    resources: str = Field(",".join(DEFAULT_RESOURCES), description="comma-separated types to sync, "
                                                                    "plural.group as in SyncTarget spec.resources")
    heartbeat_interval: float = Field(10.0, gt=0, description="seconds between SyncTarget heartbeats")
    workers: int = Field(64, ge=1, description="objects reconciled (and written) at once")
    health_address: str = Field("0.0.0.0", description="address of the /healthz, /readyz and /metrics server")
    health_port: int = Field(0, ge=0, le=65535, description="port of the /healthz, /readyz and /metrics server; "
                                                            "0: a free port, logged at start")
    log_level: Literal["debug", "info", "warning", "error"] = Field("info", description="lowest level logged")
    placed_through_view: bool = Field(True, description="reach the workspaces placed on the SyncTarget through "
                                                         "kcp's syncer virtual workspace of it (/services/syncer/"
                                                         "<logical cluster>/<sync target>; needs verb sync on the "
                                                         "SyncTarget); off: directly, as the identity may")
    qps: float = Field(QPS, ge=0, description="API requests per second to each side, sustained (0: unlimited)")
    burst: int = Field(BURST, ge=0, description="API requests allowed in a burst above qps")

    @field_validator("resources")
    @classmethod
    def _types(cls, value: str) -> str:
        if not [r for r in value.split(",") if r.strip()]:
            raise ValueError("at least one resource type is needed")
        return value

    def resource_list(self) -> tuple[str, ...]:
        return tuple(dict.fromkeys(r.strip() for r in self.resources.split(",") if r.strip()))
