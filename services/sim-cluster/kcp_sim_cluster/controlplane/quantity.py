"""Kubernetes resource quantities (`500m`, `1.5Gi`, `2e3`) as exact numbers.

The scheduler compares requests against allocatable; kube does it in integers (millicores for
cpu, bytes for memory, rounding up), so do we.
"""

from __future__ import annotations

import math
import re
from fractions import Fraction

_SUFFIXES = {
    "": Fraction(1), "n": Fraction(1, 10**9), "u": Fraction(1, 10**6), "m": Fraction(1, 1000),
    "k": Fraction(10**3), "M": Fraction(10**6), "G": Fraction(10**9), "T": Fraction(10**12),
    "P": Fraction(10**15), "E": Fraction(10**18),
    "Ki": Fraction(2**10), "Mi": Fraction(2**20), "Gi": Fraction(2**30), "Ti": Fraction(2**40),
    "Pi": Fraction(2**50), "Ei": Fraction(2**60),
}
_QUANTITY = re.compile(r"^([+-]?(?:[0-9]+(?:\.[0-9]*)?|\.[0-9]+))(?:([eE][+-]?[0-9]+)|(Ki|Mi|Gi|Ti|Pi|Ei|[numkMGTPE])?)$")


def parse_quantity(value: str | int | float) -> Fraction:
    """The exact value of a quantity; raises ValueError for text kube would refuse."""
    if isinstance(value, bool):
        raise ValueError(f"quantities must match the regular expression: {value!r}")
    if isinstance(value, int):
        return Fraction(value)
    if isinstance(value, float):
        return Fraction(value)
    match = _QUANTITY.match(value.strip())
    if match is None:
        raise ValueError(f"quantities must match the regular expression: {value!r}")
    number, exponent, suffix = match.groups()
    base = Fraction(number)
    if exponent:
        return base * Fraction(10) ** int(exponent[1:])
    return base * _SUFFIXES[suffix or ""]


def milli_value(value: str | int | float) -> int:
    """Thousandths, rounded up (kube's MilliValue): how cpu is counted."""
    return math.ceil(parse_quantity(value) * 1000)


def int_value(value: str | int | float) -> int:
    """The value rounded up to an integer (kube's Value): how memory and pod counts are counted."""
    return math.ceil(parse_quantity(value))
