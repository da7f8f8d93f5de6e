"""kube's IntOrString fields (`maxSurge: 25%`, `maxUnavailable: 1`) resolved against a total."""

from __future__ import annotations

import math


def scaled_value(value: int | str | None, total: int, *, round_up: bool) -> int:
    """An IntOrString resolved against `total` (kube's GetScaledValueFromIntOrPercent)."""
    if value is None:
        return 0
    if isinstance(value, int):
        return value
    text = str(value)
    if not text.endswith("%"):
        try:
            return int(text)
        except ValueError:
            raise ValueError("invalid value for IntOrString: invalid type: string is not a percentage") from None
    percent = int(text[:-1])
    exact = percent * total / 100
    return math.ceil(exact) if round_up else math.floor(exact)
