"""Quality gates that `make test` enforces for kcp-sim-cluster: its import contracts, types and lint."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

SERVICE = Path(__file__).resolve().parents[1]
REPO = SERVICE.parents[1]
# one mypy cache for every package's check: kcpcommon and the apiserver are read once, not once per package
MYPY_CACHE = ".mypy_cache"


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
    result = subprocess.run([sys.executable, "-m", "mypy", "--config-file", str(SERVICE / "pyproject.toml"),
                             "--cache-dir", str(REPO / MYPY_CACHE), str(SERVICE / "kcp_sim_cluster")],
                            capture_output=True, text=True, timeout=300, cwd=SERVICE, env=_env())
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
