"""DeleteOptions from a DELETE request, read as kube reads them.

The options come from the body when there is one, and from the query string
otherwise (kube never merges the two); either way they are validated before
anything is deleted, so a bad policy is refused with kube's 422 on
`DeleteOptions.meta.k8s.io`.
"""

from __future__ import annotations

from typing import Any

from multidict import MultiMapping

from kcp_apiserver.apimachinery import status as st
from kcp_apiserver.apimachinery.deleteoptions import DeleteOptions, Propagation
from kcp_apiserver.endpoints.wire import decode_object

_TRUE = ("1", "t", "T", "TRUE", "true", "True")
_FALSE = ("0", "f", "F", "FALSE", "false", "False")


def _parse_bool(value: str) -> bool:
    """Go's strconv.ParseBool, which kube's query decoding uses."""
    if value in _TRUE:
        return True
    if value in _FALSE:
        return False
    raise st.bad_request(f'strconv.ParseBool: parsing "{value}": invalid syntax')


def _from_body(body: bytes, content_type: str) -> DeleteOptions:
    decoded: Any = decode_object(body, content_type or "application/json")
    if not isinstance(decoded, dict):
        raise st.bad_request("decoded object cannot be converted to DeleteOptions")
    kind = decoded.get("kind")
    if kind not in (None, "", "DeleteOptions"):
        raise st.bad_request("decoded object cannot be converted to DeleteOptions")
    policy, orphan = decoded.get("propagationPolicy"), decoded.get("orphanDependents")
    if policy is not None and not isinstance(policy, str):
        raise st.bad_request("DeleteOptions.propagationPolicy must be a string")
    if orphan is not None and not isinstance(orphan, bool):
        raise st.bad_request("DeleteOptions.orphanDependents must be a boolean")
    preconditions = decoded.get("preconditions")
    if preconditions is not None and not isinstance(preconditions, dict):
        raise st.bad_request("DeleteOptions.preconditions must be an object")
    grace = decoded.get("gracePeriodSeconds")
    if grace is not None and (not isinstance(grace, int) or isinstance(grace, bool)):
        raise st.bad_request("DeleteOptions.gracePeriodSeconds must be an integer")
    dry_run = decoded.get("dryRun") or []
    if not isinstance(dry_run, list) or any(value != "All" for value in dry_run):
        raise st.invalid("DeleteOptions", "", [st.Cause(
            "FieldValueNotSupported", f'Unsupported value: {_go_strings(dry_run)}: supported values: "All"',
            "dryRun")], "meta.k8s.io")
    return DeleteOptions(Propagation(policy, orphan), preconditions, bool(dry_run), grace)


def _go_strings(value: Any) -> str:
    """A []string as Go's %#v prints it in a field error."""
    if isinstance(value, list):
        return "[]string{" + ", ".join(f'"{v}"' for v in value) + "}"
    return repr(value)


def _parse_int(value: str) -> int:
    """Go's strconv.ParseInt, as kube's query decoding reads gracePeriodSeconds."""
    try:
        return int(value, 10)
    except ValueError:
        raise st.bad_request(f'strconv.ParseInt: parsing "{value}": invalid syntax') from None


def _from_query(query: MultiMapping[str]) -> DeleteOptions:
    policy = query.get("propagationPolicy")
    orphan = query.get("orphanDependents")
    grace = query.get("gracePeriodSeconds")
    return DeleteOptions(Propagation(policy, _parse_bool(orphan) if orphan is not None else None),
                         grace_period=_parse_int(grace) if grace is not None else None)


def read_delete_options(body: bytes, content_type: str, query: MultiMapping[str]) -> DeleteOptions:
    """The request's DeleteOptions, validated; refuses both policies at once or an unknown one (422)."""
    options = _from_body(body, content_type) if body.strip() else _from_query(query)
    options.propagation.validate()
    return options
