"""goregexp: CRD `pattern`s compiled in Go's RE2 dialect and matched in linear time.

Expected errors are Go's regexp.Compile texts (Go >= 1.22, as kube 1.30+ is built with).
"""

from __future__ import annotations

import json
import subprocess
import sys
import textwrap

import pytest

from kcp_apiserver.apiextensions.compiledschema import compile_schema
from kcp_apiserver.apiextensions.goregexp import compile_go_regexp, go_regexp, go_regexp_error

CATASTROPHIC = "^(a+)+$"


@pytest.mark.parametrize(("pattern", "error"), [
    ("^(?=a)", "invalid or unsupported Perl syntax: `(?=`"),
    ("a(?!b)", "invalid or unsupported Perl syntax: `(?!`"),
    ("(?>a)", "invalid or unsupported Perl syntax: `(?>`"),
    ("(?<=a)b", "invalid named capture: `(?<=a)b`"),  # Go 1.22 reads `(?<` as a named capture
    ("(?<!a)b>c", "invalid named capture: `(?<!a)b>`"),
    ("(?P<é>a)", "invalid named capture: `(?P<é>`"),
    (r"(a)\1", r"invalid escape sequence: `\1`"),
    (r"a\Z", r"invalid escape sequence: `\Z`"),
    (r"a\C", r"invalid escape sequence: `\C`"),
    ("x(abc", "missing closing ): `x(abc`"),
    ("ab)c", "unexpected ): `ab)c`"),
    ("x[ab", "missing closing ]: `[ab`"),
    ("[z-a]", "invalid character class range: `z-a`"),
    ("[[:foo:]]", "invalid character class range: `[:foo:]`"),
    (r"\p{Foo}", r"invalid character class range: `\p{Foo}`"),
    ("*a", "missing argument to repetition operator: `*`"),
    ("a**", "invalid nested repetition operator: `**`"),
    ("a{1001}", "invalid repeat count: `{1001}`"),
    ("(a{1000}){1000}", "invalid repeat count: `{1000}`"),
    ("a\\", "trailing backslash at end of expression: ``"),
    ("(" * 1000 + "a" + ")" * 1000, "expression nests too deeply: `" + "(" * 1000 + "a" + ")" * 1000 + "`"),
])
def test_patterns_go_refuses_are_refused_with_go_wording(pattern: str, error: str) -> None:
    assert go_regexp_error(pattern) == f"error parsing regexp: {error}"
    assert go_regexp(pattern) is None


@pytest.mark.parametrize(("pattern", "value", "matches"), [
    (r"^a\z", "a", True),
    (r"^a\z", "a\n", False),
    ("^a$", "a\n", False),  # Go: `$` is the end of text without (?m)
    ("(?m)^a$", "a\nb", True),
    (r"^\p{L}+$", "héllo", True),
    (r"^\pL+$", "hé1", False),
    (r"^\w+$", "é", False),  # Perl classes are ASCII in Go
    (r"^\d+$", "١٢", False),
    (r"\Qa.b\E", "xa.by", True),
    (r"\Qa.b\E", "axb", False),
    ("a(?i)b", "aB", True),
    ("a(?i)b", "Ab", False),
    ("^[[:alpha:]]+$", "abc", True),
    ("(?P<n>x)(?<m>y)", "xy", True),
    (r"\12", "\n", True),  # octal, not a backreference
    ("^x$", "\ud800", False),  # a lone surrogate is U+FFFD, as Go's JSON decoder makes it
    ("b", "abc", True),  # MatchString searches; anchors come only from the pattern
])
def test_patterns_go_accepts_match_as_go_does(pattern: str, value: str, matches: bool) -> None:
    assert go_regexp_error(pattern) == ""
    assert compile_go_regexp(pattern).search(value) is matches


def test_a_pattern_is_compiled_once() -> None:
    assert compile_go_regexp("^[a-z]+$") is compile_go_regexp("^[a-z]+$")


def test_huge_programs_are_refused_as_too_large() -> None:
    """RE2 expands counted repetition byte by byte: `\\pL{300}` is 360,000 instructions, 0.6 s to build."""
    assert go_regexp_error(r"\pL{1000}") == r"error parsing regexp: expression too large: `\pL{1000}`"
    assert go_regexp_error(r"\pL{300}") == r"error parsing regexp: expression too large: `\pL{300}`"
    assert go_regexp_error(r"^\p{L}{1,63}$") == ""


def validate_in_child(prop: dict[str, object], value: str) -> list[str]:
    """Messages of validating spec.v; in a child process, so that a backtracking engine fails the test
    by its timeout instead of hanging it."""
    script = textwrap.dedent(f"""
        import json
        from kcp_apiserver.apiextensions.compiledschema import compile_schema
        schema = {{"type": "object", "properties": {{"spec": {{"type": "object", "properties": {{"v": {prop!r}}}}}}}}}
        obj = {{"apiVersion": "e.com/v1", "kind": "W", "metadata": {{"name": "w"}}, "spec": {{"v": {value!r}}}}}
        print(json.dumps([c.message for c in compile_schema(schema).validate(obj)]))
    """)
    done = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True, timeout=20, check=True)
    return list(json.loads(done.stdout))


def test_catastrophic_pattern_is_answered_in_linear_time() -> None:
    """Backtracking engines take ~2^40 steps here."""
    value = "a" * 40 + "!"
    assert validate_in_child({"type": "string", "pattern": CATASTROPHIC}, value) == [
        f'Invalid value: "{value}": spec.v in body should match \'{CATASTROPHIC}\'']


def test_email_format_is_checked_in_linear_time() -> None:
    """`format: email` used a backtracking `(?:[...]+|...)*`: `a-a-a-...!` took exponential time."""
    assert len(validate_in_child({"type": "string", "format": "email"}, "a-" * 3000 + "!")) == 1
    assert validate_in_child({"type": "string", "format": "email"}, "Ünï Cödé <a@b.example>") == []


def test_schema_validation_uses_go_dialect() -> None:
    schema = {"type": "object", "properties": {"spec": {"type": "object", "properties": {
        "v": {"type": "string", "pattern": r"^[a-z]+\z"}}}}}
    compiled = compile_schema(schema)

    def obj(v: str) -> dict[str, object]:
        return {"apiVersion": "e.com/v1", "kind": "W", "metadata": {"name": "w"}, "spec": {"v": v}}

    assert compiled.validate(obj("abc")) == []
    assert [c.field for c in compiled.validate(obj("abc\n"))] == ["spec.v"]

