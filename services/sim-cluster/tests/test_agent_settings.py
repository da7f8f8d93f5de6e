"""`kcp-sim-cluster agent`'s flags and environment, and that the agent never loads the API server package."""

from __future__ import annotations

import subprocess
import sys

import pytest

from kcp_sim_cluster.agent.server import FALLBACK_VERSION, kubelet_version
from kcp_sim_cluster.agent.settings import AgentSettings
from kcpcommon.settings import parse_settings


def test_the_nodes_are_named_after_the_prefix() -> None:
    settings = parse_settings(AgentSettings, ["--nodes", "2", "--node-name-prefix", "edge-"])
    assert settings.node_names == ["edge-1", "edge-2"]
    assert settings.capacity == {"cpu": "4", "memory": "16Gi", "pods": "110"}
    assert settings.delete_nodes_on_exit is False  # kwok's default: nodes stay


def test_the_request_rate_is_a_kubelets_per_node_unless_set() -> None:
    settings = parse_settings(AgentSettings, ["--nodes", "50"])
    assert (settings.api_qps, settings.api_burst) == (250.0, 500)
    assert parse_settings(AgentSettings, ["--nodes", "50", "--qps", "20", "--burst", "0"]).api_burst == 0


def test_environment_variables_set_what_flags_do(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("KCP_SIM_CLUSTER_AGENT_NODES", "7")
    monkeypatch.setenv("KCP_SIM_CLUSTER_AGENT_NODE_CAPACITY", "cpu=2,pods=10")
    settings = parse_settings(AgentSettings, [])
    assert settings.nodes == 7 and settings.capacity == {"cpu": "2", "pods": "10"}


@pytest.mark.parametrize("flags", [["--node-name-prefix", "Bad_"], ["--node-capacity", "cpu"], ["--nodes", "-1"]])
def test_bad_flags_are_refused(flags: list[str]) -> None:
    with pytest.raises(SystemExit):
        parse_settings(AgentSettings, flags)


def test_the_kubelet_version_is_the_servers_release_without_build_metadata() -> None:
    assert kubelet_version("v1.20.2") == "v1.20.2"
    assert kubelet_version("v1.34.0+sim") == "v1.34.0"
    assert kubelet_version("v1.29") == "v1.29.0"
    assert kubelet_version("") == FALLBACK_VERSION


def test_the_agent_subcommand_never_imports_the_api_server() -> None:
    probe = ("import sys\nfrom kcp_sim_cluster.main import main\n"
             "try:\n    main(['agent', '--help'])\nexcept SystemExit:\n    pass\n"
             "print('kcp_apiserver' in sys.modules, 'kcp_sim_cluster.controlplane' in sys.modules)")
    result = subprocess.run([sys.executable, "-c", probe], capture_output=True, text=True, timeout=60, check=True)
    assert "--node-name-prefix" in result.stdout  # the agent's own --help
    assert result.stdout.strip().splitlines()[-1] == "False False"
