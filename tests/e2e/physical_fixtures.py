"""The physical clusters the syncer's and splitter's end-to-end suites run against, one fixture with two params:
`sim`, a kcp-sim-cluster (what `make test` runs), and `real-kube`, a real kube 1.20 control plane (kube_fixtures)
whose Nodes are `kcp-sim-cluster agent`'s (marked real_kube: `make kube-e2e` runs it, `make test` leaves it out).

The tests ask `physical(root)` for a cluster and see only what both kinds share: a kubeconfig, the admin token and
CA (`Rest`), and start/stop returning the exit status, so the same test is the judge of both (issue 22 item 4).
Where the two differ in what a test sees, tests/e2e/README.md's "Differences from a real cluster" says so.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from pathlib import Path

import pytest
from kube_fixtures import KubeControlPlane
from syncer_fixtures import eventually, sim_cluster
from test_sim_agent import AgentProcess

from kcp_process import KcpServer, ServedFromRoot

SIM = "sim"
REAL_KUBE = "real-kube"
KINDS = [SIM, pytest.param(REAL_KUBE, marks=pytest.mark.real_kube)]
AGENT_NODES = 2
PATIENCE = 120.0  # seconds for a real control plane and its Nodes: the machine is shared


@dataclass
class RealKubeCluster(ServedFromRoot):
    """A real kube 1.20 control plane with `AGENT_NODES` simulated Nodes (the real scheduler binds pods to them,
    the agent makes them Running and Ready); `stop` takes both down, `start` brings them back on the same data."""

    root: Path
    port: int = 0
    control_plane: KubeControlPlane | None = None
    agent: AgentProcess | None = field(default=None)

    def __post_init__(self) -> None:
        self.control_plane = KubeControlPlane(self.root)
        self.port = self.control_plane.port

    def start(self, timeout: float = PATIENCE) -> None:
        assert self.control_plane is not None
        self.control_plane.start(timeout)
        self.agent = AgentProcess(self.kubeconfig, self.root / "agent.log",
                                  ["--nodes", str(AGENT_NODES), "--ready-delay", "0.2"]).start()
        eventually(self.agent.ready, f"the agent's Nodes ({self.agent.log_tail()})", timeout=timeout)

    def stop(self) -> int:
        """The agent first (it would only retry), then the control plane; 0 when both stopped cleanly."""
        code = self.agent.stop() if self.agent is not None else 0
        self.agent = None
        assert self.control_plane is not None
        self.control_plane.stop()
        return code


Physical = KcpServer | RealKubeCluster


@pytest.fixture(scope="module", params=KINDS)
def physical(request: pytest.FixtureRequest) -> Iterator[Callable[[Path], Physical]]:
    """A maker of physical clusters of this param's kind (not started); the module starts and stops them."""
    def make(root: Path) -> Physical:
        return sim_cluster(root) if request.param == SIM else RealKubeCluster(root)
    yield make


def sim_only(reason: str) -> pytest.MarkDecorator:
    """For a test that does not apply to kube 1.20 (`reason` says why; the README's differences list has it):
    it runs on the sim alone, by narrowing the module's `physical` param to SIM."""
    del reason  # for the reader: the decorator's argument documents the test
    return pytest.mark.parametrize("physical", [SIM], indirect=True)
