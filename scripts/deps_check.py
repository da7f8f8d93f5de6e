"""What newer releases would change: the project's packages installed in a scratch venv without the pins.

`constraints.txt` pins every distribution `make install` puts in .venv, so CI and every machine run the
same releases. This check (run it on a schedule, or before `make lock`) installs the packages with only
their pyproject ranges, lists each distribution whose newest allowed release differs from its pin, then
runs the unit tests there. Exit status: 0 when the unit tests pass on the newest releases, 1 when not.

    python scripts/deps_check.py [--no-tests] [--keep DIR]
"""

from __future__ import annotations

import argparse
import subprocess
import sys
import tempfile
import tomllib
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
CONSTRAINTS = REPO / "constraints.txt"


def read_pins(path: Path) -> dict[str, str]:
    """`name==version` lines of a constraints or freeze file, by canonical name."""
    pins: dict[str, str] = {}
    for raw in path.read_text().splitlines():
        line = raw.split("#", 1)[0].strip()
        if "==" in line:
            name, version = line.split("==", 1)
            pins[canonical(name)] = version.strip()
    return pins


def canonical(name: str) -> str:
    """PEP 503's normal form, so `PyYAML`, `pyyaml` and `py_yaml` compare equal."""
    return "-".join(name.replace("_", "-").replace(".", "-").lower().split("-"))


def local_packages() -> list[Path]:
    """The project's packages in `make install`'s order (the Makefile's SERVICES line)."""
    for line in (REPO / "Makefile").read_text().splitlines():
        if line.startswith("SERVICES"):
            return [REPO / d for d in line.split(":=", 1)[1].split()]
    raise SystemExit("Makefile has no SERVICES line")


def local_names() -> set[str]:
    return {canonical(tomllib.loads((d / "pyproject.toml").read_text())["project"]["name"]) for d in local_packages()}


def changes(pinned: dict[str, str], newest: dict[str, str]) -> list[tuple[str, str, str]]:
    """(name, pinned, newest) for every distribution that differs: upgraded, new ("-" pinned) or gone."""
    rows = []
    for name in sorted(set(pinned) | set(newest)):
        old, new = pinned.get(name, "-"), newest.get(name, "-")
        if old != new:
            rows.append((name, old, new))
    return rows


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--no-tests", action="store_true", help="only list the version changes")
    parser.add_argument("--keep", metavar="DIR", help="build the scratch venv here and keep it")
    args = parser.parse_args()
    with tempfile.TemporaryDirectory(prefix="kcp-deps-check-") as tmp:
        venv = Path(args.keep or tmp) / "venv"
        python = venv / "bin" / "python"
        subprocess.run([sys.executable, "-m", "venv", str(venv)], check=True)
        editable = [arg for d in local_packages() for arg in ("-e", str(d))]
        subprocess.run([str(python), "-m", "pip", "install", "-q", "--upgrade", *editable,
                        "-r", str(REPO / "requirements-test.txt")], check=True)
        freeze = subprocess.run([str(python), "-m", "pip", "freeze", "--exclude-editable"], check=True,
                                capture_output=True, text=True).stdout
        newest = {canonical(n): v for n, _, v in (line.partition("==") for line in freeze.splitlines()) if v}
        for name in local_names():
            newest.pop(name, None)
        rows = changes(read_pins(CONSTRAINTS), newest)
        print(f"{len(rows)} distribution(s) differ from constraints.txt:" if rows else "constraints.txt is current")
        for name, old, new in rows:
            print(f"  {name:32} {old:>20} -> {new}")
        if args.no_tests:
            return 0
        tests = [str(d / "tests") for d in local_packages() if (d / "tests").is_dir()]
        result = subprocess.run([str(python), "-m", "pytest", "-q", "-p", "no:cacheprovider", *tests], cwd=REPO)
        print("unit tests on the newest releases:", "pass" if result.returncode == 0 else "FAIL")
        return 0 if result.returncode == 0 else 1


if __name__ == "__main__":
    sys.exit(main())
