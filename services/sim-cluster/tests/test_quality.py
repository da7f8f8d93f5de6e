"""Quality gates that `make test` enforces for kcp-sim-cluster: its import contracts, types and lint."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

from typecheck import mypy

SERVICE = Path(__file__).resolve().parents[1]
REPO = SERVICE.parents[1]


def _env() -> dict[str, str]:
    """The package found from this tree, installed or not."""
    paths = [str(SERVICE), str(REPO / "services" / "apiserver"), str(REPO / "libs" / "kcpcommon")]
    return {**os.environ, "PYTHONPATH": os.pathsep.join([*paths, os.environ.get("PYTHONPATH", "")])}


def test_imports_keep_to_the_contracts() -> None:
    lint_imports = Path(sys.executable).with_name("lint-imports")
    result = subprocess.run([str(lint_imports), "--config", str(SERVICE / "pyproject.toml")], capture_output=True,
                            text=True, timeout=120, cwd=SERVICE, env=_env())
    assert result.returncode == 0, result.stdout + result.stderr
    assert "0 broken" in result.stdout


def test_the_package_type_checks() -> None:
    result = mypy("--config-file", SERVICE / "pyproject.toml", SERVICE / "kcp_sim_cluster", cwd=SERVICE, env=_env())
    assert result.returncode == 0, result.stdout + result.stderr


def test_the_package_and_its_tests_are_ruff_clean() -> None:
    result = subprocess.run([sys.executable, "-m", "ruff", "check", "--no-cache", str(SERVICE)],
                            capture_output=True, text=True, timeout=120, cwd=SERVICE)
    assert result.returncode == 0, result.stdout + result.stderr


def test_the_package_imports_alone() -> None:
    """The console script's module imports in a fresh interpreter (no test fixture hides a cycle)."""
    result = subprocess.run([sys.executable, "-c", "import kcp_sim_cluster.cli, kcp_sim_cluster.controlplane"],
                            capture_output=True, text=True, timeout=60, env=_env())
    assert result.returncode == 0, result.stderr


def test_the_simulated_cluster_does_not_load_the_kubernetes_client() -> None:
    """kubernetes_asyncio costs ~35 MiB of RSS; the sim's control plane records its Events in-process (only the
    agent mode, which calls an API server, needs the client)."""
    probe = ("import sys, kcp_sim_cluster.cli, kcp_sim_cluster.config, kcp_sim_cluster.controlplane.plane; "
             "print(sorted(m for m in sys.modules if m.startswith('kubernetes_asyncio'))[:3])")
    result = subprocess.run([sys.executable, "-c", probe], capture_output=True, text=True, timeout=120, env=_env())
    assert result.returncode == 0, result.stderr
    assert result.stdout.strip() == "[]", f"loaded by an import: {result.stdout}"
