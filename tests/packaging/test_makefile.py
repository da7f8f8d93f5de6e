"""The Makefile's targets, read with `make -n` (what each would run) and, for the container targets,
run for real where no container engine answers: they stop naming the missing engine."""

from __future__ import annotations

import os
import shutil
import subprocess
from pathlib import Path

import pytest
from repo_layout import REPO

TARGETS = ["install", "run", "stop", "demo", "test", "e2e", "bench", "lint", "images", "images-test", "compose-e2e", "helm-lint", "clean",
           "e2e-k3s"]


def make(*args: str, path: str | None = None) -> subprocess.CompletedProcess[str]:
    env = {**os.environ, "PATH": path} if path is not None else None
    return subprocess.run([shutil.which("make") or "make", "-C", str(REPO), *args], capture_output=True, text=True,
                          timeout=60, env=env)


@pytest.mark.parametrize("target", TARGETS)
def test_target_exists_and_is_documented(target: str) -> None:
    text = (REPO / "Makefile").read_text()
    assert f"\n{target}:" in text
    assert f"## {target}:" in text or target in ("install", "test", "e2e")


def test_run_starts_the_suite_and_passes_sim_and_ports() -> None:
    result = make("-n", "--assume-old=install", "run", "SIM=0", "PORT=7000")
    assert result.returncode == 0, result.stderr
    assert "scripts/run_suite.py --root-dir .kcp --port 7000 --sims 0 --sim-port 7443" in result.stdout


def test_bench_runs_every_benchmark() -> None:
    result = make("-n", "--assume-old=install", "bench")
    assert result.returncode == 0, result.stderr
    assert "bench/bench_*.py bench/fanout_*.py" in result.stdout and "$PWD/.venv/bin" in result.stdout
    benches = sorted(p.name for p in (REPO / "bench").glob("*.py") if p.name.startswith(("bench_", "fanout_")))
    assert len(benches) >= 3


def test_lint_runs_ruff_and_mypy_on_every_package() -> None:
    result = make("-n", "--assume-old=install", "lint")
    assert result.returncode == 0, result.stderr
    assert "ruff check ." in result.stdout
    assert "mypy --config-file" in result.stdout


def test_helm_lint_lints_the_chart() -> None:
    result = make("-n", "--assume-old=tools", "helm-lint")
    assert "helm lint --strict deploy/helm/kcp" in result.stdout


def only_make(tmp_path: Path, extra: dict[str, str]) -> str:
    """A PATH with make and the given fake programs, nothing else."""
    bin_dir = tmp_path / "bin"
    bin_dir.mkdir()
    (bin_dir / "make").symlink_to(shutil.which("make") or "/usr/bin/make")
    for name, script in extra.items():
        (bin_dir / name).write_text(f"#!/bin/sh\n{script}\n")
        (bin_dir / name).chmod(0o755)
    return str(bin_dir)


@pytest.mark.parametrize("target", ["images", "e2e-k3s"])
def test_without_any_engine_the_container_targets_name_it(tmp_path: Path, target: str) -> None:
    result = make(target, path=only_make(tmp_path, {}))
    assert result.returncode != 0
    assert "no container engine: neither docker nor podman is installed" in result.stderr


@pytest.mark.parametrize("target", ["images", "e2e-k3s"])
def test_an_engine_whose_daemon_is_down_is_named(tmp_path: Path, target: str) -> None:
    result = make(target, path=only_make(tmp_path, {"podman": "exit 125"}))
    assert result.returncode != 0
    assert "podman is installed but its daemon does not answer" in result.stderr


def test_images_builds_every_service_with_a_working_engine(tmp_path: Path) -> None:
    log = tmp_path / "builds"
    path = only_make(tmp_path, {"docker": f'[ "$1" = info ] && exit 0; echo "$@" >> {log}'})
    result = make("images", path=path)
    assert result.returncode == 0, result.stderr
    calls = log.read_text().splitlines()
    services = sorted(p.parent.name for p in REPO.glob("services/*/Dockerfile"))
    # the classic builder on the host's network: no BuildKit image to pull, pip reaches the index as the host does
    assert [c for c in calls if "services/" in c] == [
        f"build --network host -f services/{s}/Dockerfile -t kcp-{s}:latest ." for s in services]
    # the base images the engine already has (the fake answers every inspect) are not made again
    assert "image inspect python:3.11-slim" in calls and not [c for c in calls if c.startswith("import")]


def test_compose_e2e_without_docker_says_so_in_one_line(tmp_path: Path) -> None:
    result = make("compose-e2e", path=only_make(tmp_path, {}))
    assert result.returncode != 0
    assert result.stderr.splitlines()[0].startswith("make compose-e2e: no docker: none answers")
