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


_DECIMAL_SI_BY_EXPONENT = {-9: "n", -6: "u", -3: "m", 0: "", 3: "k", 6: "M", 9: "G", 12: "T", 15: "P", 18: "E"}


def _mantissa_exponent(value: Fraction, top: int = 18) -> tuple[int, int]:
    """An integer and a power of ten, a multiple of 3, with as few trailing thousands as can be; precision
    below nano rounds away from zero, as kube rounds it up."""
    sign = -1 if value < 0 else 1
    mantissa = math.ceil(abs(value) * 10**9)
    exponent = -9
    while mantissa and exponent < top and mantissa % 1000 == 0:
        mantissa //= 1000
        exponent += 3
    return sign * mantissa, exponent


def canonical_decimal_si(value: Fraction) -> str:
    """kube's canonical text of a decimal quantity (a JSON number decodes as one): an integer and the
    largest SI suffix that keeps it whole (`0.1` -> `100m`, `1000` -> `1k`, `1500` -> `1500`)."""
    mantissa, exponent = _mantissa_exponent(value)
    return f"{mantissa}{_DECIMAL_SI_BY_EXPONENT[exponent]}" if mantissa else "0"


def canonical_quantity(text: str) -> str:
    """The text kube stores for a quantity (its `Quantity.String()`); ValueError as `parse_quantity`.

    kube keeps the family the user wrote: binary suffixes stay binary (`1024Mi` -> `1Gi`) unless the
    value is under 1024 or not whole (`0.5Ki` -> `512`, shown decimal rather than rounded), an
    exponent stays an exponent in steps of 3 (`1e4` -> `10e3`, `1e3` -> `1e3`), the rest is decimal
    SI (`0.5` -> `500m`, `1000m` -> `1`)."""
    value = parse_quantity(text)
    if value == 0:
        return "0"
    match = _QUANTITY.fullmatch(text.strip())
    assert match is not None  # parse_quantity accepted it
    _, exponent_text, suffix = match.groups()
    if suffix in BINARY_SUFFIXES and abs(value) >= 1024 and value.denominator == 1:
        whole, power = int(value), 0
        while power < 6 and whole % 1024 == 0:
            whole //= 1024
            power += 1
        return f"{whole}{list(BINARY_SUFFIXES)[power - 1] if power else ''}"
    if exponent_text is not None:
        mantissa, exponent = _mantissa_exponent(value, top=10**6)
        return f"{mantissa}e{exponent}" if exponent else str(mantissa)
    return canonical_decimal_si(value)
