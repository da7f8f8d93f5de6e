"""The controllers without a quality test of their own type-check as `make lint` checks them
(mypy with the service's own configuration, run from the service's folder)."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[2]
# one mypy cache for every package's check: kcpcommon and the apiserver are read once, not once per package
MYPY_CACHE = ".mypy_cache"


@pytest.mark.parametrize("service, package", [("cluster-controller", "kcp_cluster_controller"),
                                              ("deployment-splitter", "kcp_deployment_splitter")])
def test_the_service_type_checks(service: str, package: str) -> None:
    folder = REPO / "services" / service
    result = subprocess.run([sys.executable, "-m", "mypy", "--config-file", "pyproject.toml",
                             "--cache-dir", str(REPO / MYPY_CACHE), package],
                            capture_output=True, text=True, timeout=300, cwd=folder)
    assert result.returncode == 0, result.stdout + result.stderr
