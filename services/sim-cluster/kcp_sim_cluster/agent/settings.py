"""`kcp-sim-cluster agent` settings: where the API server is and the nodes to play.

Every option is a `--flag` and a `KCP_SIM_CLUSTER_AGENT_*` environment variable; `--help` is written from here.
"""

from __future__ import annotations

import re
from typing import Literal

from pydantic import Field, field_validator
from pydantic_settings import BaseSettings

from kcp_sim_cluster.capacity import parse_capacity
from kcpcommon.settings import settings_config

KUBELET_QPS, KUBELET_BURST = 5.0, 10  # a kubelet's kubeAPIQPS and kubeAPIBurst: the agent plays --nodes of them
NODE_NAME_PREFIX = re.compile(r"^[a-z0-9]([-a-z0-9.]*[-a-z0-9.])?$")


class AgentSettings(BaseSettings):
    """Simulated Nodes on any Kubernetes API server: registers them, keeps them alive and runs their pods."""

    model_config = settings_config("kcp-sim-cluster-agent")

    kubeconfig: str | None = Field(None, description="kubeconfig file of the API server to register nodes with; "
                                                     "unset: the in-cluster service account")
    context: str | None = Field(None, description="kubeconfig context; unset: its current context")
    nodes: int = Field(3, ge=0, le=10_000, description="simulated Nodes this agent registers and runs pods on")
    node_name_prefix: str = Field("sim-agent-node-", description="the nodes are <prefix>1 .. <prefix>N")
    node_capacity: str = Field("cpu=4,memory=16Gi,pods=110", description="each node's capacity and allocatable, "
                                                                         "as comma-separated resource=quantity")
    ready_delay: float = Field(1.0, ge=0, description="seconds from a pod's containers starting to the pod "
                                                      "being Ready")
    node_lease_duration_seconds: int = Field(40, ge=4, le=3600, description="each node Lease's duration, "
                                                 "renewed every quarter of it (the kubelet's nodeLeaseDurationSeconds)")
    delete_nodes_on_exit: bool = Field(False, description="delete the nodes when stopped; off (as kwok): they "
                                                          "stay, and turn unready once their leases expire")
    health_address: str = Field("0.0.0.0", description="address of the /healthz, /readyz and /metrics server")
    health_port: int = Field(0, ge=0, le=65535, description="port of the /healthz, /readyz and /metrics "
                                                            "server; 0: a free port, logged at start")
    log_level: Literal["debug", "info", "warning", "error"] = Field("info", description="lowest level logged")
    qps: float | None = Field(None, ge=0, description="API requests per second, sustained (0: unlimited); "
                                                    "unset: 5 per node, each kubelet's default kubeAPIQPS")
    burst: int | None = Field(None, ge=0, description="API requests allowed in a burst above qps; unset: 10 per "
                                                      "node, each kubelet's default kubeAPIBurst")

    @field_validator("node_name_prefix")
    @classmethod
    def _dns_prefix(cls, value: str) -> str:
        if not NODE_NAME_PREFIX.match(value) or len(value) > 200:
            raise ValueError(f"--node-name-prefix {value!r} must be lowercase letters, digits, '-' and '.', "
                             "starting with a letter or digit")
        return value

    @field_validator("node_capacity")
    @classmethod
    def _capacity(cls, value: str) -> str:
        parse_capacity(value)
        return value

    @property
    def capacity(self) -> dict[str, str]:
        return parse_capacity(self.node_capacity)

    @property
    def api_qps(self) -> float:
        return self.qps if self.qps is not None else KUBELET_QPS * max(self.nodes, 1)

    @property
    def api_burst(self) -> int:
        return self.burst if self.burst is not None else KUBELET_BURST * max(self.nodes, 1)

    @property
    def node_names(self) -> list[str]:
        return [f"{self.node_name_prefix}{i}" for i in range(1, self.nodes + 1)]
