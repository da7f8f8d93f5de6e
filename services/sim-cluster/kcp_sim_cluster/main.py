"""The console script: `kcp-sim-cluster [flags]` serves a simulated cluster; `kcp-sim-cluster agent [flags]`
plays simulated nodes against any API server, without loading the API server package."""

from __future__ import annotations

import sys
from collections.abc import Sequence


def main(argv: Sequence[str] | None = None) -> None:
    args = list(sys.argv[1:] if argv is None else argv)
    if args[:1] == ["agent"]:
        from kcp_sim_cluster.agent.cli import main as agent

        agent(args[1:])
        return
    from kcp_sim_cluster.cli import main as server

    server(args)
