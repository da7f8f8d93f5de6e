"""A daemon's version is its installed distribution's."""

import tomllib
from pathlib import Path

from kcpcommon.version import UNKNOWN, package_version

LIB = Path(__file__).resolve().parents[1]


def test_version_is_the_pyprojects() -> None:
    declared = tomllib.loads((LIB / "pyproject.toml").read_text())["project"]["version"]
    assert package_version("kcpcommon") == declared


def test_a_distribution_not_installed_has_the_unknown_version() -> None:
    assert package_version("kcp-no-such-daemon") == UNKNOWN
