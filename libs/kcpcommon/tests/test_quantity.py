"""kube's Quantity grammar: what it accepts, what it refuses, and the integers it counts in."""

from fractions import Fraction

import pytest

from kcpcommon.quantity import (
    KUBE_EXPRESSION,
    canonical_decimal_si,
    canonical_quantity,
    format_quantity,
    int_value,
    milli_value,
    parse_quantity,
    try_parse_quantity,
)


@pytest.mark.parametrize(("text", "value"), [
    ("16Gi", 16 * 2**30), ("500m", Fraction(1, 2)), ("1e3", 1000), ("2E-3", Fraction(2, 1000)),
    ("0.1m", Fraction(1, 10000)), ("1.", 1), (".5", Fraction(1, 2)), ("+3k", 3000), ("-1", -1),
    ("1E", 10**18), ("5n", Fraction(5, 10**9)), ("7u", Fraction(7, 10**6)), (" 2Mi ", 2 * 2**20), ("0", 0),
])
def test_accepts_what_kube_accepts(text: str, value: Fraction) -> None:
    assert parse_quantity(text) == value


@pytest.mark.parametrize("text", ["1e3Ki", "1Ki2", "1KiB", "1K", "1k8", ".", "", "e3", "1e", "1.2.3", "Gi", "1 Gi",
                                  "1mi", "abc"])
def test_refuses_what_kube_refuses_with_kubes_message(text: str) -> None:
    with pytest.raises(ValueError) as refused:
        parse_quantity(text)
    assert str(refused.value) == f"quantities must match the regular expression '{KUBE_EXPRESSION}'"
    assert try_parse_quantity(text) is None


def test_numbers_are_quantities_and_booleans_are_not() -> None:
    assert parse_quantity(3) == 3 and parse_quantity(0.5) == Fraction(1, 2)
    assert try_parse_quantity(True) is None and try_parse_quantity(None) is None


def test_counts_round_up_as_kube_does() -> None:
    assert milli_value("500m") == 500 and milli_value("1.5") == 1500 and milli_value(2) == 2000
    assert milli_value("0.1m") == 1
    assert int_value("1Gi") == 2**30 and int_value("1G") == 10**9 and int_value("2e3") == 2000
    assert int_value("100m") == 1


def test_format_prints_binary_units_for_sizes_and_millis_for_fractions() -> None:
    assert format_quantity(Fraction(8), "cpu") == "8"
    assert format_quantity(Fraction(16896 * 2**20), "memory") == "16896Mi"
    assert format_quantity(Fraction(3, 2), "cpu") == "1500m"
    assert format_quantity(Fraction(1000), "pods") == "1000"


@pytest.mark.parametrize(("value", "text"), [
    ("0.1", "100m"), ("128", "128"), ("1000", "1k"), ("1500", "1500"), ("0.0015", "1500u"), ("1e-10", "1n"),
    ("0", "0"), ("-0.5", "-500m"), ("2.5e6", "2500k"),
])
def test_canonical_decimal_text_is_kubes(value: str, text: str) -> None:
    assert canonical_decimal_si(Fraction(value)) == text


@pytest.mark.parametrize(("text", "stored"), [
    # what a kube-apiserver reads back (Quantity.String()): the family written is kept
    ("0.5", "500m"), ("1000m", "1"), ("500m", "500m"), ("1.5", "1500m"), ("0", "0"), ("0Mi", "0"), ("1500", "1500"),
    ("1000", "1k"), ("2000k", "2M"), ("100u", "100u"), ("-0.5", "-500m"), (" 1k ", "1k"),
    ("1024Mi", "1Gi"), ("1Ki", "1Ki"), ("1536Mi", "1536Mi"), ("1.5Gi", "1536Mi"), ("2048Ki", "2Mi"),
    ("0.5Ki", "512"), ("1023Ki", "1023Ki"), ("1.5Ki", "1536"), ("0.1Ki", "102400m"), ("1048576Ei", "1048576Ei"),
    ("1e3", "1e3"), ("1E3", "1e3"), ("1e4", "10e3"), ("1e1", "10"), ("1e-3", "1e-3"), ("1.5e3", "1500"),
])
def test_canonical_text_is_what_kube_stores(text: str, stored: str) -> None:
    assert canonical_quantity(text) == stored
