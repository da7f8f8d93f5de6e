"""kube's resource.Quantity (`500m`, `1.5Gi`, `2e3`) as exact numbers, with kube's grammar.

One parser for every daemon: the scheduler compares requests with allocatable, the splitter divides
capacity, the cluster controller sums Nodes. kube counts in integers (millicores for cpu, bytes for
memory, rounding up), so exact Fractions are kept until then. The grammar is kube's: a number, then
either one suffix (binary `Ki`..`Ei`, decimal `n`..`E`) or a decimal exponent, never both (`1e3Ki` is
refused, as kube refuses it).
"""

from __future__ import annotations

import math
import re
from fractions import Fraction
from typing import Any

BINARY_SUFFIXES = {"Ki": 2**10, "Mi": 2**20, "Gi": 2**30, "Ti": 2**40, "Pi": 2**50, "Ei": 2**60}
DECIMAL_SUFFIXES = {
    "n": Fraction(1, 10**9), "u": Fraction(1, 10**6), "m": Fraction(1, 1000), "": Fraction(1),
    "k": Fraction(10**3), "M": Fraction(10**6), "G": Fraction(10**9), "T": Fraction(10**12),
    "P": Fraction(10**15), "E": Fraction(10**18),
}
_SUFFIXES: dict[str, Fraction] = {**DECIMAL_SUFFIXES, **{k: Fraction(v) for k, v in BINARY_SUFFIXES.items()}}
# kube's own wording names this expression in its error
KUBE_EXPRESSION = "^([+-]?[0-9.]+)([eEinumkKMGTP]*[-+]?[0-9]*)$"
_QUANTITY = re.compile(
    r"([+-]?(?:[0-9]+(?:\.[0-9]*)?|\.[0-9]+))(?:[eE]([+-]?[0-9]+)|(Ki|Mi|Gi|Ti|Pi|Ei|[numkMGTPE])?)")


def parse_quantity(value: str | int | float | Fraction) -> Fraction:
    """The exact value of a quantity; ValueError with kube's message for text kube would refuse.

    Surrounding spaces are dropped, as kube's JSON decoding of a Quantity drops them."""
    if isinstance(value, int | float | Fraction) and not isinstance(value, bool):
        return Fraction(value)
    match = _QUANTITY.fullmatch(value.strip()) if isinstance(value, str) else None
    if match is None:
        raise ValueError(f"quantities must match the regular expression '{KUBE_EXPRESSION}'")
    number, exponent, suffix = match.groups()
    if exponent is not None:
        return Fraction(number) * Fraction(10) ** int(exponent)
    return Fraction(number) * _SUFFIXES[suffix or ""]


def try_parse_quantity(value: Any) -> Fraction | None:
    """The quantity's value, or None when it is not one (an int-or-string field may hold either)."""
    try:
        return parse_quantity(value)
    except ValueError:
        return None


def milli_value(value: str | int | float | Fraction) -> int:
    """Thousandths, rounded up (kube's MilliValue): how cpu is counted."""
    return math.ceil(parse_quantity(value) * 1000)


def int_value(value: str | int | float | Fraction) -> int:
    """The value rounded up to an integer (kube's Value): how memory and pod counts are counted."""
    return math.ceil(parse_quantity(value))


def format_quantity(value: Fraction, name: str = "") -> str:
    """Whole numbers as they are (binary units for memory-like sizes that divide evenly); else millis."""
    if value.denominator == 1:
        whole = int(value)
        if name in ("memory", "ephemeral-storage") or name.startswith("hugepages-"):
            for suffix, unit in reversed(BINARY_SUFFIXES.items()):
                if whole and whole % unit == 0:
                    return f"{whole // unit}{suffix}"
        return str(whole)
    return f"{math.ceil(value * 1000)}m"
