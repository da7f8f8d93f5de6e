"""Schema `pattern`s in kube's dialect (Go's regexp, RE2 syntax), matched in linear time.

kube compiles a CRD's `pattern` with Go's `regexp.Compile` and matches values with `MatchString` (an
unanchored search). Go's regexp is RE2, so this module uses RE2 itself (google-re2): matching takes time
linear in the value, so `^(a+)+$` against 40 `a`s and a `!` answers at once instead of backtracking
for minutes and stalling every tenant of the server.

Where C++ RE2 and Go's regexp/syntax differ, Go wins:
* C++ RE2 names its errors differently; they are reworded as Go's `error parsing regexp: <code>: `<expr>``.
* Go refuses `\\C` (any byte), capture names that are not ASCII word characters, and nesting deeper
  than 1000 levels; C++ RE2 accepts them.
* Since Go 1.22 `(?<` opens a named capture, so a lookbehind `(?<=x)` is an invalid named capture in Go
  (C++ RE2 calls it an invalid Perl operator).
* One deliberate difference: RE2 compiles to byte-level programs, which counted repetition of large
  classes makes big and slow to build; a pattern past MAX_PROGRAM instructions (`\\pL{200}`, which Go
  accepts) or a CRD whose patterns pass PATTERN_BUDGET instructions is refused as "expression too large" rather than
  costing the server seconds of CPU and hundreds of MiB.
Shared: `$` is the end of text unless `(?m)`; `\\z` is accepted and `\\Z` refused; `\\d \\w \\s \\b` are
ASCII; `\\pL`, `\\Q..\\E`, flags mid-pattern, POSIX classes; counted repetition at most 1000.

Compiled patterns are cached by text, so a pattern is compiled once however many schemas and
requests use it.
"""

from __future__ import annotations

import functools
import re

import re2

_OPTIONS = re2.Options()
_OPTIONS.log_errors = False  # a tenant's bad pattern is a 422, not a line on stderr
# RE2 compiles counted repetition into copies, byte by byte: `\p{L}{1,63}` is 75,000 instructions and
# a tenth of a second to build. One pattern may compile to MAX_PROGRAM instructions (Go allows 3.3 million
# runes' worth) and one CRD's patterns to PATTERN_BUDGET together, so that a CRD of many such patterns
# cannot hold the event loop for long. RE2's own memory stays at its default 8 MiB: below that its DFA
# no longer fits `\w{1000}` and matching 300 KB took 5 s instead of 17 ms.
MAX_PROGRAM = 100_000
PATTERN_BUDGET = 500_000

# C++ RE2's error codes, worded as Go's regexp/syntax words the same error.
_GO_WORDING = {
    "missing )": "missing closing )",
    "missing ]": "missing closing ]",
    "unexpected )": "unexpected )",
    "invalid escape sequence": "invalid escape sequence",
    "invalid character class": "invalid character class",
    "invalid character class range": "invalid character class range",
    "no argument for repetition operator": "missing argument to repetition operator",
    "bad repetition operator": "invalid nested repetition operator",
    "invalid repetition size": "invalid repeat count",
    "invalid perl operator": "invalid or unsupported Perl syntax",
    "invalid named capture group": "invalid named capture",
    "invalid UTF-8": "invalid UTF-8",
    "pattern too large - compile failed": "expression too large",
    "pattern too large - reverse compile failed": "expression too large",
}
_MAX_NESTING = 1000  # Go's maxHeight for the parse tree
_CAPTURE_NAME = re.compile(r"[A-Za-z0-9_]+")
_LONE_SURROGATE = re.compile("[\ud800-\udfff]")


class GoRegexpError(ValueError):
    """A pattern Go's regexp.Compile refuses; str() is Go's error text."""


class GoRegexp:
    """One compiled pattern; `search` is Go's MatchString."""

    __slots__ = ("_compiled", "pattern", "program_size")

    def __init__(self, pattern: str, compiled: re2._Regexp) -> None:
        self.pattern = pattern
        self._compiled = compiled
        self.program_size: int = compiled.programsize

    def search(self, value: str) -> bool:
        """Whether the pattern matches anywhere in the value, in time linear in its length."""
        return self._compiled.search(_valid_utf8(value)) is not None

    def fullmatch(self, value: str) -> bool:
        """Whether the pattern matches the whole value, in time linear in its length."""
        return self._compiled.fullmatch(_valid_utf8(value)) is not None


@functools.lru_cache(maxsize=1024)
def compile_go_regexp(pattern: str) -> GoRegexp:
    """The pattern compiled as Go would, or GoRegexpError with Go's message."""
    text = _valid_utf8(pattern)
    try:
        compiled = re2.compile(text, _OPTIONS)
    except re2.error as exc:
        raise GoRegexpError(_go_error(text, _re2_message(exc))) from None
    if problem := _go_only_problem(text):
        raise GoRegexpError(problem)
    if compiled.programsize > MAX_PROGRAM:
        raise GoRegexpError(_error("expression too large", pattern))
    return GoRegexp(pattern, compiled)


def go_regexp_error(pattern: str) -> str:
    """Why Go's regexp.Compile would refuse the pattern, or "" when it would not."""
    try:
        compile_go_regexp(pattern)
    except GoRegexpError as exc:
        return str(exc)
    return ""


class PatternBudget:
    """The RE2 instructions one CRD's patterns may still compile to; past it they are refused as too large."""

    def __init__(self, instructions: int = PATTERN_BUDGET) -> None:
        self.left = instructions

    def error(self, pattern: str) -> str:
        """go_regexp_error, and "expression too large" once the CRD's patterns have used the budget."""
        if self.left < 0:
            return _error("expression too large", pattern)
        try:
            self.left -= compile_go_regexp(pattern).program_size
        except GoRegexpError as exc:
            self.left -= MAX_PROGRAM  # a refused pattern may have cost a whole program to find out
            return str(exc)
        return _error("expression too large", pattern) if self.left < 0 else ""


def go_regexp(pattern: str) -> GoRegexp | None:
    """The compiled pattern, or None when Go refuses it (CRD validation has already said why)."""
    try:
        return compile_go_regexp(pattern)
    except GoRegexpError:
        return None


def _valid_utf8(text: str) -> str:
    """Lone surrogates (JSON `\\ud800`) become U+FFFD, as Go's JSON decoder makes them."""
    return _LONE_SURROGATE.sub("\ufffd", text) if _LONE_SURROGATE.search(text) else text


def _re2_message(exc: re2.error) -> str:
    arg = exc.args[0] if exc.args else ""
    return arg.decode("utf-8", "replace") if isinstance(arg, bytes) else str(arg)


def _error(code: str, expr: str) -> str:
    return f"error parsing regexp: {code}: `{expr}`"


def _go_error(pattern: str, message: str) -> str:
    """C++ RE2's `<code>: <expr>` as Go's error text."""
    if message.startswith("trailing \\"):
        return _error("trailing backslash at end of expression", "")
    code, _, expr = message.partition(": ")
    if code in ("invalid perl operator", "invalid named capture group") and expr.startswith(("(?<", "(?P<")):
        named = _named_capture_error(pattern)
        if named:
            return named
    return _error(_GO_WORDING.get(code, code), expr or pattern)


def _group_parens(pattern: str) -> list[int]:
    """Offsets of every `(` and `)` of a group: outside classes, not escaped, not inside `\\Q..\\E`."""
    parens, i, n = [], 0, len(pattern)
    in_class = False
    while i < n:
        c = pattern[i]
        if c == "\\":
            if not in_class and pattern.startswith("\\Q", i):
                end = pattern.find("\\E", i + 2)
                i = n if end < 0 else end + 2
                continue
            i += 2
            continue
        if in_class:
            if pattern.startswith("[:", i):
                end = pattern.find(":]", i + 2)
                i = i + 1 if end < 0 else end + 2
                continue
            if c == "]":
                in_class = False
        elif c == "[":
            in_class = True
            i += 1
            if pattern.startswith("^", i):
                i += 1
            if pattern.startswith("]", i):  # a leading ] is a literal
                i += 1
            continue
        elif c in "()":
            parens.append(i)
        i += 1
    return parens


def _named_capture_error(pattern: str) -> str:
    """Go's (>= 1.22) check of `(?P<name>` and `(?<name>`: the first bad one, or ""."""
    for at in _group_parens(pattern):
        rest = pattern[at:]
        if rest.startswith("(?P<") and len(rest) > 4:
            start = 4
        elif rest.startswith("(?<") and len(rest) > 3:
            start = 3
        else:
            continue
        end = rest.find(">")
        if end < 0:
            return _error("invalid named capture", rest)
        if not _CAPTURE_NAME.fullmatch(rest[start:end]):
            return _error("invalid named capture", rest[:end + 1])
    return ""


def _go_only_problem(pattern: str) -> str:
    """What Go refuses in a pattern C++ RE2 compiled: `\\C`, non-ASCII capture names, deep nesting."""
    if "\\C" in pattern and (at := _escape_at(pattern, "C")) >= 0:
        return _error("invalid escape sequence", pattern[at:at + 2])
    if "<" in pattern and (named := _named_capture_error(pattern)):
        return named
    if pattern.count("(") >= _MAX_NESTING:
        depth = 0
        for at in _group_parens(pattern):
            depth += 1 if pattern[at] == "(" else -1
            if depth >= _MAX_NESTING:
                return _error("expression nests too deeply", pattern)
    return ""


def _escape_at(pattern: str, letter: str) -> int:
    """Offset of the first `\\<letter>` escape outside `\\Q..\\E`, or -1."""
    i, n = 0, len(pattern)
    while i < n - 1:
        if pattern[i] == "\\":
            if pattern[i + 1] == "Q":
                end = pattern.find("\\E", i + 2)
                i = n if end < 0 else end + 2
                continue
            if pattern[i + 1] == letter:
                return i
            i += 2
            continue
        i += 1
    return -1


def linear_regexp(pattern: str) -> GoRegexp:
    """One of the server's own patterns (RE2 syntax), compiled with RE2 so that matching a tenant's value
    takes time linear in its length whatever the value: for patterns that backtrack, like `(x+)*`."""
    return GoRegexp(pattern, re2.compile(pattern, _OPTIONS))
