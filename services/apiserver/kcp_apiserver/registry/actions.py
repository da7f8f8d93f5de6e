"""Subresources beyond status and scale that a type declares with its descriptor (kube's "connecters"
and "creaters": a pod's binding, eviction and log).

The endpoint layer routes `.../NAME/<subresource>` to the declared handler with the decoded body
and query; the handler works through the registry like any other caller, so admission and the
watch see its writes as they see everyone's.
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable, Mapping
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

from kcp_apiserver.apimachinery.request import RequestContext

if TYPE_CHECKING:
    from kcp_apiserver.registry.resource import Obj, Resource
    from kcp_apiserver.registry.store import Registry


@dataclass(frozen=True)
class ActionCall:
    """One request to a declared subresource."""

    registry: Registry
    resource: Resource  # the parent resource (pods for pods/binding)
    cluster: str
    namespace: str
    name: str  # the parent object's name
    body: Obj | None  # the decoded body of a create; None for a get
    query: Mapping[str, str]
    ctx: RequestContext
    dry_run: bool = False


@dataclass(frozen=True)
class ActionResult:
    """What the subresource answers: an object (JSON), plain text (a log), or a response the handler
    writes itself (a followed log, an upgraded exec or port-forward connection): `respond` is called with
    the HTTP request and returns the HTTP response, so this layer stays free of HTTP types."""

    code: int = 200
    obj: Any = None
    text: str | None = None
    respond: Callable[[Any], Awaitable[Any]] | None = field(default=None, compare=False)


@dataclass(frozen=True)
class Action:
    """A declared subresource: its name, the verbs discovery lists, and its body's kind."""

    name: str
    verbs: tuple[str, ...]  # "create" (POST) and/or "get"
    handle: Callable[[ActionCall], Awaitable[ActionResult]] = field(compare=False, hash=False)
    kind: tuple[str, str, str] | None = None  # (group, version, kind) of the body, for discovery
    connect: bool = False  # kube's connecter (exec, attach, portforward): options in the query, no body read
