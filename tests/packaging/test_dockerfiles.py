"""Every service's Dockerfile, checked without a container engine: parsed with dockerfile-parse, then
held to issue 14's rules (slim Python base, non-root user, a HEALTHCHECK on /healthz, COPY sources
that exist, the entrypoint a console script `make install` provides, and nothing copied that the
service's package metadata does not need)."""

from __future__ import annotations

import json
import shlex
from pathlib import Path, PurePosixPath

import pytest
from dockerfile_parse import DockerfileParser
from repo_layout import REPO, local_closure, make_install_dirs, packages

DOCKERFILES = sorted(REPO.glob("services/*/Dockerfile"))
SERVICES = sorted(p.name for p in REPO.glob("services/*") if (p / "pyproject.toml").exists())


def parse(path: Path) -> list[dict]:
    parser = DockerfileParser(path=str(path))
    return parser.structure


def instructions(path: Path, name: str) -> list[str]:
    return [item["value"] for item in parse(path) if item["instruction"] == name]


def exec_form(value: str) -> list[str]:
    """An exec-form (JSON array) instruction's words; a shell form is split as the shell would."""
    try:
        words = json.loads(value)
    except ValueError:
        return shlex.split(value)
    assert isinstance(words, list)
    return [str(w) for w in words]


def service_of(path: Path) -> str:
    return path.parent.name


def test_every_service_has_a_dockerfile() -> None:
    assert SERVICES, "no services found"
    assert [p.parent.name for p in DOCKERFILES] == SERVICES


@pytest.mark.parametrize("path", DOCKERFILES, ids=service_of)
def test_slim_python_base(path: Path) -> None:
    froms = instructions(path, "FROM")
    assert froms, "no FROM"
    image = froms[-1].split()[0]
    repository, _, tag = image.partition(":")
    assert repository in ("python", "docker.io/library/python"), image
    assert tag.endswith("-slim") or "-slim-" in tag, f"{image}: not a slim Python image"


@pytest.mark.parametrize("path", DOCKERFILES, ids=service_of)
def test_runs_as_a_non_root_user(path: Path) -> None:
    users = instructions(path, "USER")
    assert users, "no USER: the process would run as root"
    user = users[-1].split(":")[0].strip()
    assert user not in ("root", "0"), user
    created = " ".join(instructions(path, "RUN"))
    assert user.isdigit() or f" {user}" in created, f"USER {user} is never created"


@pytest.mark.parametrize("path", DOCKERFILES, ids=service_of)
def test_healthcheck_probes_healthz(path: Path) -> None:
    checks = instructions(path, "HEALTHCHECK")
    assert len(checks) == 1, "exactly one HEALTHCHECK"
    options, _, command = checks[0].partition("CMD")
    assert command, "HEALTHCHECK without CMD"
    assert "/healthz" in command
    assert "--interval" in options and "--timeout" in options


@pytest.mark.parametrize("path", DOCKERFILES, ids=service_of)
def test_every_copy_source_exists(path: Path) -> None:
    copies = instructions(path, "COPY") + instructions(path, "ADD")
    assert copies, "nothing copied"
    for value in copies:
        words = [w for w in exec_form(value) if not w.startswith("--")]
        assert len(words) >= 2, value
        for source in words[:-1]:
            assert (REPO / source).exists(), f"COPY {source}: no such path in the build context (the repo root)"


@pytest.mark.parametrize("path", DOCKERFILES, ids=service_of)
def test_entrypoint_is_a_console_script_make_install_provides(path: Path) -> None:
    entrypoints = instructions(path, "ENTRYPOINT")
    assert len(entrypoints) == 1
    command = exec_form(entrypoints[0])
    assert entrypoints[0].lstrip().startswith("["), "ENTRYPOINT in exec form, so signals reach the process"
    index = packages()
    own = next(p for p in index.values() if p.directory == f"services/{service_of(path)}")
    assert command[0] in own.scripts, f"{command[0]} is not a console script of {own.directory}/pyproject.toml"
    assert own.directory in make_install_dirs(), f"make install does not install {own.directory}"


@pytest.mark.parametrize("path", DOCKERFILES, ids=service_of)
def test_installs_from_package_metadata_copying_only_what_it_needs(path: Path) -> None:
    index = packages()
    by_dir = {p.directory: p for p in index.values()}
    own = by_dir[f"services/{service_of(path)}"]
    needed = {index[n].directory for n in local_closure(own.name, index)}
    copied = set()
    for value in instructions(path, "COPY") + instructions(path, "ADD"):
        words = [w for w in exec_form(value) if not w.startswith("--")]
        for source in words[:-1]:
            source = source.rstrip("/")
            if source == "constraints.txt":  # the pins, which every install goes through
                continue
            assert source in by_dir, f"COPY {source}: not a package directory (copy packages, not the tree)"
            copied.add(source)
    assert copied == needed, f"copies {sorted(copied)}, the package metadata needs {sorted(needed)}"
    installs = " ".join(v for v in instructions(path, "RUN") if "pip install" in v)
    for directory in needed:
        assert f"/app/{directory}" in installs, f"{directory} is copied but not pip-installed"
    assert "-r " not in installs and "requirements" not in installs, "dependencies come from pyproject metadata"
    assert "-c /app/constraints.txt" in installs, "the image installs the releases CI tested (constraints.txt)"


def test_the_build_context_leaves_out_each_packages_tests_and_build_metadata() -> None:
    patterns = [line.strip() for line in (REPO / ".dockerignore").read_text().splitlines()
                if line.strip() and not line.startswith("#")]
    for package in packages().values():
        for left_out in (f"{package.directory}/tests", f"{package.directory}/{package.name.replace('-', '_')}.egg-info"):
            assert any(PurePosixPath(left_out).match(pattern) for pattern in patterns), f"{left_out} is sent to the build"
