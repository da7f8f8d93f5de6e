"""What the repository declares: the packages under libs/ and services/, their console scripts and
local dependencies, and which of them `make install` installs (SERVICES in the Makefile)."""

from __future__ import annotations

import re
import tomllib
from dataclasses import dataclass
from pathlib import Path

from packaging.requirements import Requirement
from packaging.utils import canonicalize_name

REPO = Path(__file__).resolve().parents[2]


@dataclass(frozen=True)
class Package:
    directory: str  # relative to the repository root
    name: str  # canonical distribution name
    scripts: frozenset[str]
    dependencies: frozenset[str]  # canonical names


def packages() -> dict[str, Package]:
    """Every package of the repository, by canonical name."""
    found: dict[str, Package] = {}
    for pyproject in sorted([*REPO.glob("libs/*/pyproject.toml"), *REPO.glob("services/*/pyproject.toml")]):
        project = tomllib.loads(pyproject.read_text())["project"]
        name = canonicalize_name(project["name"])
        deps = frozenset(canonicalize_name(Requirement(d).name) for d in project.get("dependencies", []))
        found[name] = Package(str(pyproject.parent.relative_to(REPO)), name,
                              frozenset(project.get("scripts", {})), deps)
    return found


def local_closure(name: str, index: dict[str, Package]) -> set[str]:
    """`name` and every package of this repository it depends on, directly or not."""
    seen: set[str] = set()
    todo = [name]
    while todo:
        current = todo.pop()
        if current in seen or current not in index:
            continue
        seen.add(current)
        todo.extend(index[current].dependencies)
    return seen


def make_install_dirs() -> list[str]:
    """The directories `make install` installs: the Makefile's SERVICES."""
    match = re.search(r"^SERVICES\s*:?=\s*(.+)$", (REPO / "Makefile").read_text(), re.M)
    assert match, "the Makefile declares no SERVICES"
    return match.group(1).split()
