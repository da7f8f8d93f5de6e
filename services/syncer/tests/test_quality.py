"""Quality gates that `make test` enforces for kcp-syncer: mypy --strict, ruff, and that it imports no service."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

from typecheck import mypy

SERVICE = Path(__file__).resolve().parents[1]
REPO = SERVICE.parents[1]


def _env() -> dict[str, str]:
    """Only the libraries beside the package: importing another service would fail here."""
    paths = [str(SERVICE), str(REPO / "libs" / "kcpcommon"), str(REPO / "libs" / "kcpsyncer")]
    return {**os.environ, "PYTHONPATH": os.pathsep.join(paths)}


def test_the_package_is_mypy_strict_clean() -> None:
    result = mypy("--strict", "--config-file", SERVICE / "pyproject.toml", SERVICE / "kcp_syncer", cwd=SERVICE,
                  env=_env())
    assert result.returncode == 0, result.stdout + result.stderr


def test_the_package_and_its_tests_are_ruff_clean() -> None:
    result = subprocess.run([sys.executable, "-m", "ruff", "check", "--no-cache", str(SERVICE)],
                            capture_output=True, text=True, timeout=120, cwd=SERVICE)
    assert result.returncode == 0, result.stdout + result.stderr


def test_the_daemon_imports_with_the_libraries_alone_and_answers_help() -> None:
    """Services never import each other: with only the libraries (kcpcommon, kcpsyncer) on the path, the CLI
    loads and prints its flags."""
    result = subprocess.run([sys.executable, "-m", "kcp_syncer", "--help"], capture_output=True, text=True,
                            timeout=60, env=_env())
    assert result.returncode == 0, result.stderr
    for flag in ("--from-kubeconfig", "--to-kubeconfig", "--sync-target", "--logical-cluster", "--resources",
                 "--health-port"):
        assert flag in result.stdout


def test_the_daemon_imports_no_other_service() -> None:
    lint_imports = Path(sys.executable).with_name("lint-imports")
    result = subprocess.run([str(lint_imports), "--no-cache", str(SERVICE / "pyproject.toml")], capture_output=True,
                            text=True, timeout=120, cwd=SERVICE)
    assert result.returncode == 0, result.stdout + result.stderr
    assert "0 broken" in result.stdout
