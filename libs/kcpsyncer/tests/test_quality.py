"""Quality gates that `make test` enforces for the syncer library: mypy --strict, ruff, and its import contracts
(it builds on kcpcommon and imports no service; the engine wires the concerns, which do not import it)."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

from typecheck import mypy

LIBRARY = Path(__file__).resolve().parents[1]  # libs/kcpsyncer


def run(*args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run([sys.executable, "-m", *args], cwd=LIBRARY, capture_output=True, text=True, timeout=240,
                          check=False)


def test_the_package_is_mypy_strict_clean() -> None:
    result = mypy("--config-file", LIBRARY / "pyproject.toml", LIBRARY / "kcpsyncer", cwd=LIBRARY)
    assert result.returncode == 0, result.stdout + result.stderr
    assert "Success: no issues found" in result.stdout


def test_the_package_and_its_tests_are_ruff_clean() -> None:
    result = run("ruff", "check", "--no-cache", str(LIBRARY))
    assert result.returncode == 0, result.stdout + result.stderr


def test_the_import_contracts_are_kept() -> None:
    lint_imports = Path(sys.executable).with_name("lint-imports")
    result = subprocess.run([str(lint_imports), "--no-cache", str(LIBRARY / "pyproject.toml")], capture_output=True,
                            text=True, timeout=120, cwd=LIBRARY)
    assert result.returncode == 0, result.stdout + result.stderr
    assert "0 broken" in result.stdout

