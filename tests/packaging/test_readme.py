"""The README a newcomer follows: its quickstart is `make run` then `make test`, its configuration
reference is exactly what the daemons' settings models say (rendered by a script, so it cannot drift),
and its demo output ends where seed 004's does."""

from __future__ import annotations

import re
import subprocess
import sys
from pathlib import Path

from repo_layout import REPO

README = REPO / "README.md"


def test_quickstart_is_make_run_then_make_test() -> None:
    block = README.read_text().split("```sh\n", 1)[1].split("```", 1)[0]
    commands = [line.split("#")[0].strip() for line in block.splitlines() if line.strip()]
    assert commands[:2] == ["make run", "make test"]


def test_configuration_reference_matches_the_settings_models() -> None:
    result = subprocess.run([sys.executable, str(REPO / "scripts" / "render_config_reference.py"), "--check"],
                            capture_output=True, text=True, timeout=120)
    assert result.returncode == 0, result.stderr


def test_configuration_reference_covers_every_daemon_and_field() -> None:
    rendered = subprocess.run([sys.executable, str(REPO / "scripts" / "render_config_reference.py")],
                              capture_output=True, text=True, timeout=120, check=True).stdout
    for command in ("kcp-apiserver", "kcp-cluster-controller", "kcp-deployment-splitter", "kcp-syncer",
                    "kcp-sim-cluster"):
        assert f"### `{command}`" in rendered
    # fields of each model, with their environment variables
    for flag, env in [("--etcd-servers", "KCP_APISERVER_ETCD_SERVERS"),
                      ("--syncer-mode", "KCP_CLUSTER_CONTROLLER_SYNCER_MODE"),
                      ("--leader-elect`, `--no-leader-elect", "KCP_DEPLOYMENT_SPLITTER_LEADER_ELECT"),
                      ("--sync-target", "KCP_SYNCER_SYNC_TARGET"), ("--nodes", "KCP_SIM_CLUSTER_NODES")]:
        assert re.search(rf"^\| `{re.escape(flag)}` \| `{env}` \|", rendered, re.M), flag


def test_a_stale_reference_is_caught(tmp_path: Path) -> None:
    """--check compares for real: a README whose table lost a flag fails it."""
    stale = tmp_path / "README.md"
    stale.write_text(README.read_text().replace("| `--secure-port` |", "| `--secure-prot` |", 1))
    result = subprocess.run([sys.executable, str(REPO / "scripts" / "render_config_reference.py"), "--check",
                             "--readme", str(stale)], capture_output=True, text=True, timeout=120)
    assert result.returncode == 1
    assert "out of date" in result.stderr


def test_the_demo_walkthrough_ends_at_15_of_15() -> None:
    text = README.read_text()
    demo = text.split("## The demo", 1)[1].split("```console\n", 1)[1].split("```", 1)[0]
    assert demo.startswith("$ kubectl get synctargets")
    last = demo.rsplit("$ kubectl get deployments", 1)[1]
    assert re.search(r"^my-deployment +15/15 ", last, re.M)
