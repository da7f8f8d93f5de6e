"""Reproducible installs: constraints.txt pins every distribution the venv holds, `make install` and the
images install through it, and a dependency whose private names the product uses has an upper bound."""

from __future__ import annotations

import ast
import importlib.metadata
import re
import sys
import tomllib

from packaging.requirements import Requirement
from packaging.utils import canonicalize_name
from repo_layout import REPO, packages

sys.path.insert(0, str(REPO / "scripts"))
import deps_check

# the installer's own distributions, which `pip freeze` leaves out as well
INSTALLER = {"pip", "setuptools", "wheel"}


def pins() -> dict[str, str]:
    return {canonicalize_name(n): v for n, v in deps_check.read_pins(REPO / "constraints.txt").items()}


def test_every_installed_distribution_is_pinned_at_its_installed_release() -> None:
    local = set(packages())
    pinned = pins()
    installed = {canonicalize_name(d.metadata["Name"]): d.version for d in importlib.metadata.distributions()}
    missing = {n: v for n, v in installed.items() if n not in local | INSTALLER and pinned.get(n) != v}
    assert not missing, f"not pinned at the installed release (run `make lock`): {missing}"


def test_make_install_installs_through_the_constraints() -> None:
    recipe = (REPO / "Makefile").read_text().split("$(VENV)/.installed:", 1)[1].split("\n\n", 1)[0]
    assert "constraints.txt" in recipe.splitlines()[0], "the venv is not rebuilt when a pin changes"
    assert "pip install" in recipe and "-c constraints.txt" in recipe


def private_imports(source: str) -> set[str]:
    """Top-level names of the modules whose private parts (`x._y`, `obj._attr` of an import) are used."""
    tree = ast.parse(source)
    found: set[str] = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.ImportFrom) and node.module and node.level == 0:
            if any(part.startswith("_") for part in node.module.split(".")[1:]):
                found.add(node.module.split(".")[0])
    return found


def test_a_dependency_used_through_private_modules_has_an_upper_bound() -> None:
    owners = importlib.metadata.packages_distributions()
    checked = 0
    for package in packages().values():
        directory = REPO / package.directory
        project = tomllib.loads((directory / "pyproject.toml").read_text())["project"]
        bounds = {canonicalize_name(r.name): r.specifier for r in map(Requirement, project.get("dependencies", []))}
        for module in directory.glob("*/**/*.py"):
            if "tests" in module.relative_to(directory).parts:
                continue
            for top in private_imports(module.read_text()):
                for dist in owners.get(top, []):
                    name = canonicalize_name(dist)
                    if name in bounds:
                        checked += 1
                        assert any(s.operator in ("<", "<=", "==", "~=") for s in bounds[name]), (
                            f"{module.relative_to(REPO)} imports {top}'s private modules: bound {name} above")
    assert checked, "no private import found: the scan no longer sees etcd3aio's, which storage uses"


def test_private_import_scan_sees_module_and_not_names() -> None:
    assert private_imports("from etcd3aio._protobuf import Compare\nfrom x.y import _z\n") == {"etcd3aio"}


def test_deps_check_lists_upgrades_new_and_gone_distributions() -> None:
    rows = deps_check.changes({"a": "1.0", "b": "2.0", "gone": "1"}, {"a": "1.0", "b": "2.1", "new": "3"})
    assert rows == [("b", "2.0", "2.1"), ("gone", "1", "-"), ("new", "-", "3")]
    assert deps_check.canonical("PyYAML") == "pyyaml" and deps_check.canonical("ruamel.yaml") == "ruamel-yaml"


def test_lock_and_deps_check_are_targets() -> None:
    text = (REPO / "Makefile").read_text()
    assert re.search(r"^lock: install$", text, re.M) and "pip freeze --exclude-editable" in text
    assert re.search(r"^deps-check:", text, re.M) and "scripts/deps_check.py" in text
