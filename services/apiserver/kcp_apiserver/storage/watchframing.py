"""Kube's JSON watch event framing, written in one place: `{"type":T,"object":O}` and a newline.

The watch cache frames stored objects (encoded once, shared by every watcher) and the watch
endpoint frames errors and bookmarks; both go through here so the wire form cannot drift.
"""

from __future__ import annotations

from typing import Any

import orjson

ADDED, MODIFIED, DELETED, BOOKMARK, ERROR = "ADDED", "MODIFIED", "DELETED", "BOOKMARK", "ERROR"
INITIAL_EVENTS_END = "k8s.io/initial-events-end"  # kube's annotation on the bookmark that ends a watch-list


def frame(type_: str, object_json: bytes) -> bytes:
    """One event around an object that is already JSON."""
    return b'{"type":"' + type_.encode() + b'","object":' + object_json + b"}\n"


def event(type_: str, obj: Any) -> bytes:
    return frame(type_, orjson.dumps(obj))


def error(status: dict[str, Any]) -> bytes:
    """An ERROR event carrying a Status (410 Expired makes clients relist)."""
    return event(ERROR, status)


def bookmark(kind: str, api_version: str, revision: int, *, initial_events_end: bool = False) -> bytes:
    """A BOOKMARK: an object of the watched kind carrying only a resourceVersion (and, after a
    watch-list's initial events, kube's initial-events-end annotation)."""
    meta: dict[str, Any] = {"resourceVersion": str(revision)}
    if initial_events_end:
        meta["annotations"] = {INITIAL_EVENTS_END: "true"}
    return event(BOOKMARK, {"kind": kind, "apiVersion": api_version, "metadata": meta})
