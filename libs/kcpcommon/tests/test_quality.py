"""Quality gates that `make test` enforces: kcpcommon is `mypy --strict` clean, ruff clean and keeps its layers.

Ruff reads the repository's one configuration, ruff.toml at the root.
"""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

from typecheck import mypy

LIBRARY = Path(__file__).resolve().parents[1]  # libs/kcpcommon
PACKAGE = LIBRARY / "kcpcommon"

RUFF = ["check", "--no-cache"]  # the rules are the repository's ruff.toml


def run(*args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run([sys.executable, "-m", *args], cwd=LIBRARY, capture_output=True, text=True, timeout=240,
                          check=False)


def test_the_package_is_mypy_strict_clean() -> None:
    result = mypy("--strict", PACKAGE, cwd=LIBRARY)
    assert result.returncode == 0, result.stdout + result.stderr
    assert "Success: no issues found" in result.stdout


def test_the_package_and_its_tests_are_ruff_clean() -> None:
    result = run("ruff", *RUFF, str(LIBRARY))
    assert result.returncode == 0, result.stdout + result.stderr


def test_imports_keep_to_the_layers() -> None:
    lint_imports = Path(sys.executable).with_name("lint-imports")
    result = subprocess.run([str(lint_imports), str(LIBRARY / "pyproject.toml")], cwd=LIBRARY, capture_output=True,
                            text=True, timeout=120, check=False)
    assert result.returncode == 0, result.stdout + result.stderr
    assert "0 broken" in result.stdout
