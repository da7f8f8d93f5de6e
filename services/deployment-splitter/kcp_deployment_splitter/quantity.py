"""Enough of kube's resource.Quantity to compare requests with allocatable: text to an exact Fraction."""

from __future__ import annotations

import re
from fractions import Fraction
from typing import Any

_SUFFIX: dict[str, Fraction] = {
    "": Fraction(1), "n": Fraction(1, 10**9), "u": Fraction(1, 10**6), "m": Fraction(1, 1000),
    "k": Fraction(10**3), "M": Fraction(10**6), "G": Fraction(10**9), "T": Fraction(10**12),
    "P": Fraction(10**15), "E": Fraction(10**18), "Ki": Fraction(2**10), "Mi": Fraction(2**20),
    "Gi": Fraction(2**30), "Ti": Fraction(2**40), "Pi": Fraction(2**50), "Ei": Fraction(2**60)}
_QUANTITY = re.compile(r"^([+-]?[0-9.]+)(?:[eE]([+-]?[0-9]+))?([a-zA-Z]*)$")


def parse_quantity(value: Any) -> Fraction | None:
    """The quantity's value, or None when it is not one (an int-or-string field may hold either)."""
    if isinstance(value, bool):
        return None
    if isinstance(value, int | float | Fraction):
        return Fraction(value)
    match = _QUANTITY.match(str(value).strip())
    if match is None or match.group(3) not in _SUFFIX:
        return None
    number, exponent, suffix = match.groups()
    try:
        parsed = Fraction(number) * _SUFFIX[suffix]
    except ValueError:
        return None
    return parsed * Fraction(10) ** int(exponent) if exponent else parsed
