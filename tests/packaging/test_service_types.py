"""The controllers without a quality test of their own type-check as `make lint` checks them
(mypy with the service's own configuration, run from the service's folder)."""

from __future__ import annotations

from pathlib import Path

import pytest
from typecheck import mypy

REPO = Path(__file__).resolve().parents[2]


@pytest.mark.parametrize("service, package", [("cluster-controller", "kcp_cluster_controller"),
                                              ("deployment-splitter", "kcp_deployment_splitter")])
def test_the_service_type_checks(service: str, package: str) -> None:
    folder = REPO / "services" / service
    result = mypy("--config-file", "pyproject.toml", package, cwd=folder)
    assert result.returncode == 0, result.stdout + result.stderr
