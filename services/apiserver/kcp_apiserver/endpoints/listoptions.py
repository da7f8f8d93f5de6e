"""kube's ListOptions rules for list and watch requests, with its messages.

A bad combination is 422 Invalid on `ListOptions.meta.k8s.io`, one cause per broken rule, exactly as
kube-apiserver's ValidateListOptions reports it; a value that is not a boolean is 400.
"""

from __future__ import annotations

from dataclasses import dataclass

from multidict import MultiMapping

from kcp_apiserver.apimachinery import status as st

NOT_OLDER_THAN, EXACT = "NotOlderThan", "Exact"
_TRUE = ("1", "t", "T", "TRUE", "true", "True")
_FALSE = ("0", "f", "F", "FALSE", "false", "False")


@dataclass(frozen=True)
class WatchOptions:
    resource_version: str
    send_initial_events: bool | None  # None: not given (the legacy rules for initial events apply)
    allow_bookmarks: bool


def parse_bool(query: MultiMapping[str], name: str) -> bool | None:
    """A boolean query parameter as Go's strconv.ParseBool reads it; None when absent."""
    value = query.get(name)
    if value is None:
        return None
    if value in _TRUE:
        return True
    if value in _FALSE:
        return False
    raise st.bad_request(f'invalid value for {name}: strconv.ParseBool: parsing "{value}": invalid syntax')


def _forbidden(field: str, detail: str) -> st.Cause:
    return st.Cause("FieldValueForbidden", f"Forbidden: {detail}", field)


def _not_supported(field: str, value: str, supported: tuple[str, ...]) -> st.Cause:
    values = ", ".join(f'"{v}"' for v in supported)
    return st.Cause("FieldValueNotSupported", f'Unsupported value: "{value}": supported values: {values}', field)


def _raise(causes: list[st.Cause]) -> None:
    if causes:
        raise st.invalid("ListOptions", "", causes, "meta.k8s.io")


def validate_list(query: MultiMapping[str]) -> None:
    causes: list[st.Cause] = []
    match = query.get("resourceVersionMatch", "")
    rv = query.get("resourceVersion", "")
    if match:
        if not rv:
            causes.append(_forbidden("resourceVersionMatch",
                                     "resourceVersionMatch is forbidden unless resourceVersion is provided"))
        if query.get("continue"):
            causes.append(_forbidden("resourceVersionMatch",
                                     "resourceVersionMatch is forbidden when continue is provided"))
        if match not in (EXACT, NOT_OLDER_THAN):
            causes.append(_not_supported("resourceVersionMatch", match, (EXACT, NOT_OLDER_THAN, "")))
        if match == EXACT and rv == "0":
            causes.append(_forbidden("resourceVersionMatch",
                                     'resourceVersionMatch "exact" is forbidden for resourceVersion "0"'))
    if parse_bool(query, "sendInitialEvents") is not None:
        causes.append(_forbidden("sendInitialEvents", "sendInitialEvents is forbidden for list"))
    _raise(causes)


def validate_watch(query: MultiMapping[str]) -> WatchOptions:
    """Watch rules: sendInitialEvents needs resourceVersionMatch=NotOlderThan, which needs sendInitialEvents.

    Bookmarks are not required: without allowWatchBookmarks a watch-list just gets no bookmark
    marking the end of its initial events, as kube does.
    """
    causes: list[st.Cause] = []
    match = query.get("resourceVersionMatch", "")
    send_initial = parse_bool(query, "sendInitialEvents")
    bookmarks = parse_bool(query, "allowWatchBookmarks")
    if send_initial is not None and match != NOT_OLDER_THAN:
        causes.append(_forbidden("resourceVersionMatch",
                                 f"sendInitialEvents requires setting resourceVersionMatch to {NOT_OLDER_THAN}"))
    if match:
        if send_initial is None:
            causes.append(_forbidden("resourceVersionMatch",
                                     "resourceVersionMatch is forbidden for watch unless sendInitialEvents is "
                                     "provided"))
        if match != NOT_OLDER_THAN:
            causes.append(_not_supported("resourceVersionMatch", match, (NOT_OLDER_THAN,)))
        if query.get("continue"):
            causes.append(_forbidden("resourceVersionMatch",
                                     "resourceVersionMatch is forbidden when continue is provided"))
    _raise(causes)
    return WatchOptions(query.get("resourceVersion", ""), send_initial, bool(bookmarks))
