"""Schema `pattern`s are Go RE2 expressions: which ones kube would refuse, and the closest Python
regular expression for matching values (defaults) against them."""

from __future__ import annotations

import re

_LOOKAROUND = re.compile(r"\(\?(<?[=!]|>)")
_BACKREF = re.compile(r"\\[1-9]")
# Python's re errors that RE2 shares, worded as Go's regexp/syntax words them.
_SHARED_REGEX_ERRORS = (
    ("missing ), unterminated subpattern", "missing closing )"),
    ("unbalanced parenthesis", "unexpected )"),
    ("nothing to repeat", "missing argument to repetition operator"),
    ("multiple repeat", "invalid nested repetition operator"),
    ("unterminated character set", "missing closing ]"),
    ("bad character range", "invalid character class range"),
)


def go_regexp_error(pattern: str) -> str:
    """Why Go's RE2 (kube's regexp.Compile) would reject the pattern, or "" when it would not.

    Python's re accepts lookaround and backreferences, which RE2 refuses; RE2 accepts syntax that
    Python refuses (`\\z`, `\\p{L}`, `\\Q..\\E`, flags mid-pattern). Only errors both engines give are
    reported, so a pattern valid for kube is never refused here.
    """
    if match := _LOOKAROUND.search(pattern):
        return f"error parsing regexp: invalid or unsupported Perl syntax: `{match.group(0)}`"
    if match := _BACKREF.search(pattern):
        return f"error parsing regexp: invalid escape sequence: `{match.group(0)}`"
    try:
        re.compile(_python_regex_text(pattern))
    except re.error as exc:
        for python_msg, go_msg in _SHARED_REGEX_ERRORS:
            if str(exc).startswith(python_msg):
                return f"error parsing regexp: {go_msg}: `{pattern}`"
    return ""


def _python_regex_text(pattern: str) -> str:
    """The closest Python spelling of an RE2 pattern, for matching default values."""
    pattern = re.sub(r"\\Q(.*?)(?:\\E|$)", lambda m: re.escape(m.group(1)), pattern)
    return pattern.replace(r"\z", r"\Z")


def python_regex(pattern: str) -> re.Pattern[str] | None:
    """A compiled approximation of an RE2 pattern, or None when Python cannot express it."""
    try:
        return re.compile(_python_regex_text(pattern))
    except re.error:
        return None
