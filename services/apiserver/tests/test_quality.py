"""Quality gates that `make test` enforces: the layers of the request path, types and lint."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

from typecheck import mypy

SERVICE = Path(__file__).resolve().parents[1]


def test_imports_keep_to_the_layers_of_the_request_path() -> None:
    lint_imports = Path(sys.executable).with_name("lint-imports")
    result = subprocess.run([str(lint_imports), str(SERVICE / "pyproject.toml")], capture_output=True, text=True,
                            timeout=120, cwd=SERVICE)
    assert result.returncode == 0, result.stdout + result.stderr
    assert "0 broken" in result.stdout


def test_the_package_type_checks() -> None:
    result = mypy("--config-file", SERVICE / "pyproject.toml", SERVICE / "kcp_apiserver", cwd=SERVICE)
    assert result.returncode == 0, result.stdout + result.stderr


def test_the_package_and_its_tests_are_ruff_clean() -> None:
    result = subprocess.run([sys.executable, "-m", "ruff", "check", "--no-cache", str(SERVICE)],
                            capture_output=True, text=True, timeout=120, cwd=SERVICE)
    assert result.returncode == 0, result.stdout + result.stderr


def test_the_in_process_benchmark_still_runs(tmp_path: Path) -> None:
    """The benchmarks reach into the package; a refactor that breaks them must fail here, not at bench time."""
    script = SERVICE.parents[1] / "bench" / "bench_crds.py"
    result = subprocess.run([sys.executable, str(script), "--schema-only", "--schema-objects", "20",
                             "--out", str(tmp_path)], capture_output=True, text=True, timeout=120)
    assert result.returncode == 0, result.stdout + result.stderr
    assert list(tmp_path.glob("crds-*.json"))


def test_the_server_does_not_load_the_kubernetes_client() -> None:
    """kubernetes_asyncio costs ~35 MiB of RSS per serving process; only the daemons that call an API need it."""
    probe = "import sys, kcp_apiserver.server.cli; print(sorted(m for m in sys.modules if m.startswith('kubernetes_asyncio'))[:3])"
    result = subprocess.run([sys.executable, "-c", probe], capture_output=True, text=True, timeout=120, cwd=SERVICE)
    assert result.returncode == 0, result.stderr
    assert result.stdout.strip() == "[]", f"loaded by an import: {result.stdout}"
