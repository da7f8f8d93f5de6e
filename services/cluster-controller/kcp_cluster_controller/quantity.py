"""Enough of kube's resource.Quantity to add Nodes' capacities: parse to an exact Fraction, print back."""

from __future__ import annotations

import re
from fractions import Fraction

_SUFFIX: dict[str, int | Fraction] = {"": 1, "n": Fraction(1, 10**9), "u": Fraction(1, 10**6), "m": Fraction(1, 1000), "k": 10**3,
           "M": 10**6, "G": 10**9, "T": 10**12, "P": 10**15, "E": 10**18,
           "Ki": 2**10, "Mi": 2**20, "Gi": 2**30, "Ti": 2**40, "Pi": 2**50, "Ei": 2**60}
_QUANTITY = re.compile(r"^([+-]?[0-9.]+)(?:[eE]([+-]?[0-9]+))?([a-zA-Z]*)$")


def parse_quantity(text: str) -> Fraction:
    match = _QUANTITY.match(text.strip())
    if match is None or match.group(3) not in _SUFFIX:
        raise ValueError(f"not a quantity: {text!r}")
    number, exponent, suffix = match.groups()
    value = Fraction(number) * _SUFFIX[suffix]
    return value * Fraction(10 ** int(exponent)) if exponent and int(exponent) >= 0 else \
        value / Fraction(10 ** -int(exponent)) if exponent else value


def format_quantity(value: Fraction, name: str = "") -> str:
    """Whole numbers as they are (binary units for memory-like sizes that divide evenly); else millis."""
    if value.denominator == 1:
        whole = int(value)
        if name in ("memory", "ephemeral-storage") or name.startswith("hugepages-"):
            for suffix in ("Ei", "Pi", "Ti", "Gi", "Mi", "Ki"):
                unit = _SUFFIX[suffix]
                assert isinstance(unit, int)
                if whole and whole % unit == 0:
                    return f"{whole // unit}{suffix}"
        return str(whole)
    return f"{int(value * 1000)}m"
