"""Every package of the repository declares import contracts and keeps them: its own layers, and no import of
another daemon (services import kcpcommon and the libraries under libs/; only kcp-sim-cluster reuses the
API server's package)."""

from __future__ import annotations

import subprocess
import sys
import tomllib
from pathlib import Path

import pytest
from repo_layout import REPO, packages

# the one service that may import another: the simulator is assembled from the API server's package
MAY_IMPORT = {"kcp_sim_cluster": {"kcp_apiserver"}}
PACKAGES = sorted(packages().values(), key=lambda p: p.directory)


def module_of(directory: str) -> str:
    """The importable package a distribution directory holds (its one package beside pyproject.toml)."""
    found = [p.parent.name for p in (REPO / directory).glob("*/__init__.py") if p.parent.name != "tests"]
    assert len(found) == 1, f"{directory} holds {found}"
    return found[0]


SERVICES = {module_of(p.directory) for p in PACKAGES if p.directory.startswith("services/")}


def config(directory: str) -> dict:  # type: ignore[type-arg]
    return tomllib.loads((REPO / directory / "pyproject.toml").read_text()).get("tool", {}).get("importlinter", {})


@pytest.mark.parametrize("package", PACKAGES, ids=lambda p: p.directory)
def test_declares_its_layers_and_forbids_other_daemons(package) -> None:  # type: ignore[no-untyped-def]
    module = module_of(package.directory)
    linter = config(package.directory)
    contracts = linter.get("contracts", [])
    roots = linter.get("root_packages") or [linter.get("root_package")]
    assert module in roots and contracts, f"{package.directory} declares no import contracts"
    assert any(c["type"] == "layers" for c in contracts), f"{package.directory} declares no layers"
    forbidden = {m for c in contracts if c["type"] == "forbidden" and module in c["source_modules"]
                 for m in c["forbidden_modules"]}
    assert SERVICES - {module} - MAY_IMPORT.get(module, set()) <= forbidden, (
        f"{package.directory} may import other services: forbid {sorted(SERVICES - {module} - forbidden)}")


@pytest.mark.parametrize("package", PACKAGES, ids=lambda p: p.directory)
def test_keeps_its_contracts(package) -> None:  # type: ignore[no-untyped-def]
    directory = REPO / package.directory
    lint_imports = Path(sys.executable).with_name("lint-imports")
    result = subprocess.run([str(lint_imports), str(directory / "pyproject.toml")], cwd=directory,
                            capture_output=True, text=True, timeout=180)
    assert result.returncode == 0, result.stdout + result.stderr
    assert " 0 broken" in result.stdout


def test_the_simulator_reaches_the_api_server_only_through_its_embedding_surface() -> None:
    """kcp_apiserver.embedding is the one module of the API server the simulator may import: its contract
    forbids every other subpackage, so one added to the API server later is forbidden too."""
    apiserver = REPO / "services/apiserver/kcp_apiserver"
    internals = {f"kcp_apiserver.{p.parent.name}" for p in apiserver.glob("*/__init__.py")}
    internals |= {f"kcp_apiserver.{p.stem}" for p in apiserver.glob("*.py") if p.stem not in ("__init__", "embedding")}
    linter = config("services/sim-cluster")
    assert "kcp_apiserver" in linter.get("root_packages", []), "kcp_apiserver's subpackages are not in the graph"
    forbidden = {m for c in linter["contracts"] if c["type"] == "forbidden" and "kcp_sim_cluster" in c["source_modules"]
                 for m in c["forbidden_modules"]}
    assert internals and internals <= forbidden, f"the simulator may import {sorted(internals - forbidden)}"
