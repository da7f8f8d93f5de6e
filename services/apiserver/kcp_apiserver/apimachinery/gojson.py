"""Go's encoding/json error messages, which kube puts in the Status of an unreadable request body.

kube reads the apiVersion and kind of a body with `json.Unmarshal` before anything else, so a
malformed body fails with Go's scanner text (`invalid character 'g' looking for beginning of value`,
`unexpected end of JSON input`) and a body that is not an object with Go's type error. Clients and
tests match on that text. Only the error path runs this (a body orjson accepted is valid JSON).
"""

from __future__ import annotations

import json
import re
from typing import Any

from kcp_apiserver.apimachinery.jsonvalues import exceeds_depth

_WHITESPACE = b" \t\r\n"
_DIGITS = b"0123456789"
_HEX = b"0123456789abcdefABCDEF"
_ESCAPES = b'"\\/bfnrt'
# how Go prints the struct kube's meta factory decodes apiVersion and kind into
TYPE_META_STRUCT = 'struct { APIVersion string "json:\\"apiVersion,omitempty\\""; Kind string "json:\\"kind,omitempty\\"" }'
END_OF_INPUT = "unexpected end of JSON input"


class _SyntaxError(Exception):
    pass


def _quote_char(c: int) -> str:
    """Go's json.quoteChar: the byte as a rune in single quotes, escaped as strconv.Quote does."""
    if c == 0x27:
        return "'\\''"
    if c == 0x22:
        return "'\"'"
    named = {0x07: "\\a", 0x08: "\\b", 0x0C: "\\f", 0x0A: "\\n", 0x0D: "\\r", 0x09: "\\t", 0x0B: "\\v",
             0x5C: "\\\\"}
    if c in named:
        return f"'{named[c]}'"
    if c < 0x20 or c == 0x7F:
        return f"'\\x{c:02x}'"
    if 0x80 <= c <= 0xA0 or c == 0xAD:  # not printable as runes: strconv.Quote writes \u00XX
        return f"'\\u{c:04x}'"
    return f"'{chr(c)}'"


class _Scanner:
    """A recursive descent over the bytes with the messages of Go's scanner states."""

    def __init__(self, data: bytes) -> None:
        self.data = data
        self.i = 0

    def fail(self, context: str, *, inside_token: bool = False) -> _SyntaxError:
        """At the end of input Go's scanner is fed one space: inside a token that is the bad character."""
        if self.i < len(self.data):
            return _SyntaxError(f"invalid character {_quote_char(self.data[self.i])} {context}")
        if inside_token:
            return _SyntaxError(f"invalid character ' ' {context}")
        return _SyntaxError(END_OF_INPUT)

    def peek(self) -> int | None:
        return self.data[self.i] if self.i < len(self.data) else None

    def skip_space(self) -> None:
        while self.i < len(self.data) and self.data[self.i] in _WHITESPACE:
            self.i += 1

    def document(self) -> None:
        self.skip_space()
        self.value()
        self.skip_space()
        if self.i < len(self.data):
            raise self.fail("after top-level value")

    def value(self) -> None:
        c = self.peek()
        if c == 0x7B:
            self.object()
        elif c == 0x5B:
            self.array()
        elif c == 0x22:
            self.string()
        elif c is not None and (c == 0x2D or c in _DIGITS):
            self.number()
        elif c is not None and c in b"tfn":
            self.literal({0x74: b"true", 0x66: b"false", 0x6E: b"null"}[c])
        else:
            raise self.fail("looking for beginning of value")

    def object(self) -> None:
        self.i += 1
        self.skip_space()
        if self.peek() == 0x7D:
            self.i += 1
            return
        while True:
            if self.peek() != 0x22:
                raise self.fail("looking for beginning of object key string")
            self.string()
            self.skip_space()
            if self.peek() != 0x3A:
                raise self.fail("after object key")
            self.i += 1
            self.skip_space()
            self.value()
            self.skip_space()
            c = self.peek()
            if c == 0x2C:
                self.i += 1
                self.skip_space()
            elif c == 0x7D:
                self.i += 1
                return
            else:
                raise self.fail("after object key:value pair")

    def array(self) -> None:
        self.i += 1
        self.skip_space()
        if self.peek() == 0x5D:
            self.i += 1
            return
        while True:
            self.value()
            self.skip_space()
            c = self.peek()
            if c == 0x2C:
                self.i += 1
                self.skip_space()
            elif c == 0x5D:
                self.i += 1
                return
            else:
                raise self.fail("after array element")

    def string(self) -> None:
        self.i += 1
        while True:
            c = self.peek()
            if c is None:
                raise self.fail("")
            if c == 0x22:
                self.i += 1
                return
            if c == 0x5C:
                self.i += 1
                e = self.peek()
                if e == 0x75:
                    for _ in range(4):
                        self.i += 1
                        h = self.peek()
                        if h is None or h not in _HEX:
                            raise self.fail("in \\u hexadecimal character escape", inside_token=True)
                elif e is None or e not in _ESCAPES:
                    raise self.fail("in string escape code", inside_token=True)
            elif c < 0x20:
                raise self.fail("in string literal")
            self.i += 1

    def digits(self) -> None:
        while (c := self.peek()) is not None and c in _DIGITS:
            self.i += 1

    def number(self) -> None:
        if self.peek() == 0x2D:
            self.i += 1
            c = self.peek()
            if c is None or c not in _DIGITS:
                raise self.fail("in numeric literal", inside_token=True)
        if self.peek() == 0x30:
            self.i += 1
        else:
            self.digits()
        if self.peek() == 0x2E:
            self.i += 1
            c = self.peek()
            if c is None or c not in _DIGITS:
                raise self.fail("after decimal point in numeric literal", inside_token=True)
            self.digits()
        if self.peek() in (0x65, 0x45):
            self.i += 1
            if self.peek() in (0x2B, 0x2D):
                self.i += 1
            c = self.peek()
            if c is None or c not in _DIGITS:
                raise self.fail("in exponent of numeric literal", inside_token=True)
            self.digits()

    def literal(self, word: bytes) -> None:
        self.i += 1
        for expected in word[1:]:
            if self.peek() != expected:
                raise self.fail(f"in literal {word.decode()} (expecting {_quote_char(expected)})", inside_token=True)
            self.i += 1


def syntax_error(data: bytes) -> str | None:
    """Go's json.Unmarshal message for malformed JSON, or None when Go reads the syntax fine."""
    try:
        _Scanner(data).document()
    except _SyntaxError as exc:
        return str(exc)
    except RecursionError:
        return "exceeded max depth"
    return None


def type_name(value: Any) -> str:
    """How Go's UnmarshalTypeError names a JSON value's type."""
    if isinstance(value, bool):
        return "bool"
    if isinstance(value, (int, float)):
        return "number"
    if isinstance(value, str):
        return "string"
    if isinstance(value, list):
        return "array"
    return "object"


class DecodeError(ValueError):
    """JSON that Go reads but kube refuses to decode (too deep, a number no float64 holds)."""


_LONE_SURROGATE = re.compile("[\ud800-\udfff]")


def marshal(value: Any) -> str:
    """JSON as Go's json.Marshal writes an unstructured value: map keys sorted, <, > and & escaped."""
    text = json.dumps(value, sort_keys=True, separators=(",", ":"), ensure_ascii=False)
    return text.replace("<", "\\u003c").replace(">", "\\u003e").replace("&", "\\u0026")


def go_string(value: str) -> str:
    """A string as Go decodes it: a lone UTF-16 surrogate escape (`"\\ud800"`) becomes U+FFFD."""
    return _LONE_SURROGATE.sub("\ufffd", value)


def _go_float(text: str) -> float:
    value = float(text)
    if value in (float("inf"), float("-inf")):
        raise DecodeError(f"json: cannot unmarshal number {text} into Go value of type float64")
    return value


def _go_int(text: str) -> int | float:
    """Integers beyond int64 decode as float64, as kube's decoders (and orjson) do."""
    value = int(text)
    return value if -(2**63) <= value < 2**63 else _go_float(text)


def _not_json(name: str) -> Any:
    raise ValueError(f"{name} is not a JSON value")


def _go_values(value: Any) -> Any:
    if isinstance(value, dict):
        return {go_string(k): _go_values(v) for k, v in value.items()}
    if isinstance(value, list):
        return [_go_values(v) for v in value]
    return go_string(value) if isinstance(value, str) else value


def loads(text: str | bytes, max_depth: int) -> Any:
    """Decode JSON that orjson refuses but Go reads (lone surrogates, huge numbers) into values orjson can
    encode again. Raises DecodeError (too deep, out of range) or ValueError (not JSON)."""
    try:
        value = json.loads(text, parse_int=_go_int, parse_float=_go_float, parse_constant=_not_json)
    except RecursionError:
        raise DecodeError("exceeded max depth") from None
    if exceeds_depth(value, max_depth):
        raise DecodeError("exceeded max depth")
    return _go_values(value)


__all__ = ["END_OF_INPUT", "TYPE_META_STRUCT", "DecodeError", "go_string", "loads", "syntax_error", "type_name"]
