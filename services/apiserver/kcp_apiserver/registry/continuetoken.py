"""List continue tokens: kube's encoding, and kube's 400s for every token a client can forge.

A token is unpadded URL-safe base64 of `{"v": "meta.k8s.io/v1", "rv": <revision>, "start": <key>}`,
as kube's storage writes it. Decoding follows Go's `json.Unmarshal` into kube's `continueToken`
struct (`rv` an int64), so a forged token gets the message kube-apiserver gives it.
"""

from __future__ import annotations

import base64
import binascii
import json
import posixpath
import re
from typing import Any

import orjson

from kcp_apiserver.apimachinery import gojson
from kcp_apiserver.apimachinery import status as st

VERSION = "meta.k8s.io/v1"
_INVALID = "invalid continue token: continue key is not valid"
_STRUCT = "continueToken"
_BASE64 = re.compile(r"[A-Za-z0-9_-]*")


def encode_continue(revision: int, start_key: str) -> str:
    raw = orjson.dumps({"v": VERSION, "rv": revision, "start": start_key})
    return base64.urlsafe_b64encode(raw).decode().rstrip("=")


class _Number(str):
    """A JSON number's literal text: Go judges range and integrality on the text."""


def decode_continue(token: str) -> tuple[int, str]:
    """(revision, start key) of a continue token; revision 0 means "the latest", as a negative rv asks.

    Raises kube's 400 `invalid continue token: continue key is not valid: ...`."""
    data = _base64(token)
    syntax = gojson.syntax_error(data)
    if syntax is not None:
        raise _invalid(syntax)
    try:
        fields = json.loads(data, parse_int=_Number, parse_float=_Number, parse_constant=_Number)
    except (ValueError, RecursionError) as exc:  # Go read it; Python did not (invalid UTF-8)
        raise _invalid(str(exc)) from None
    if fields is None:
        fields = {}
    if not isinstance(fields, dict):
        raise _invalid(f"json: cannot unmarshal {_go_type(fields)} into Go value of type storage.{_STRUCT}")
    version = _string_field(fields, "v")
    revision = _revision(fields.get("rv"))
    start = _string_field(fields, "start")
    if version != VERSION:
        raise st.bad_request(f"{_INVALID}: server does not recognize this encoded version {version}")
    if revision == 0:
        raise st.bad_request(f"{_INVALID}: incorrect encoded start resourceVersion (version {VERSION})")
    if not start:
        raise st.bad_request(f"{_INVALID}: encoded start key empty (version {VERSION})")
    key = start if start.startswith("/") else "/" + start
    if posixpath.normpath(key) != key:
        raise _invalid(start)  # a key that climbs out of its list (path traversal)
    return max(revision, 0), key


def _base64(token: str) -> bytes:
    """Unpadded URL-safe base64 as kube writes it; padded tokens (older servers) are read too."""
    body = token.rstrip("=")
    bad = _BASE64.match(body)
    end = bad.end() if bad is not None else 0
    if end < len(body):
        raise _invalid(f"illegal base64 data at input byte {end}")
    if len(body) % 4 == 1:
        raise _invalid(f"illegal base64 data at input byte {len(body) - 1}")
    try:
        return base64.urlsafe_b64decode(body + "=" * (-len(body) % 4))
    except (binascii.Error, ValueError) as exc:
        raise _invalid(str(exc)) from None


def _string_field(fields: dict[str, Any], name: str) -> str:
    value = fields.get(name)
    if value is None:
        return ""
    if not isinstance(value, str) or isinstance(value, _Number):
        raise _field_type(name, value, "string")
    return value


def _revision(value: Any) -> int:
    """`rv` as Go reads it into an int64: integers in range only."""
    if value is None:
        return 0
    if not isinstance(value, _Number):
        raise _field_type("rv", value, "int64")
    try:
        revision = int(value)
    except ValueError:
        raise _field_type("rv", value, "int64") from None
    if not -(2**63) <= revision < 2**63:
        raise _field_type("rv", value, "int64")
    return revision


def _go_type(value: Any) -> str:
    if isinstance(value, _Number):
        return f"number {value}"
    return gojson.type_name(value)


def _field_type(name: str, value: Any, go_type: str) -> st.APIError:
    return _invalid(f"json: cannot unmarshal {_go_type(value)} into Go struct field {_STRUCT}.{name} of type {go_type}")


def _invalid(detail: str) -> st.APIError:
    return st.bad_request(f"{_INVALID}: {detail}")


__all__ = ["decode_continue", "encode_continue"]
