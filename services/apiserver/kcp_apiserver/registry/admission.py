"""The admission chain: mutating plugins in order, then validating plugins in order.

The registry calls the chain once per write with the object as it will be stored
(after the type's strategy prepared it) and the stored one it replaces; a plugin
refuses by raising an `APIError`. Plugins join through `ServerConfig`.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Protocol, runtime_checkable

from kcp_apiserver.apimachinery.request import RequestContext
from kcp_apiserver.registry.resource import Obj, Resource

CREATE, UPDATE, DELETE = "CREATE", "UPDATE", "DELETE"


@dataclass(slots=True)
class Attributes:
    """What admission sees of one write, as kube's admission.Attributes."""

    ctx: RequestContext
    resource: Resource
    operation: str  # CREATE, UPDATE or DELETE
    namespace: str
    name: str
    obj: Obj | None  # the new object (None on DELETE)
    old: Obj | None  # the stored object (None on CREATE)
    subresource: str = ""

    @property
    def cluster(self) -> str:
        return self.ctx.cluster


@runtime_checkable
class MutatingPlugin(Protocol):
    async def admit(self, attrs: Attributes) -> None: ...


@runtime_checkable
class ValidatingPlugin(Protocol):
    async def validate(self, attrs: Attributes) -> None: ...


class AdmissionChain:
    """Every plugin that mutates runs before any that validates, each in the order configured."""

    def __init__(self, plugins: Sequence[object] = ()) -> None:
        self.mutating = [p for p in plugins if isinstance(p, MutatingPlugin)]
        self.validating = [p for p in plugins if isinstance(p, ValidatingPlugin)]
        unknown = [p for p in plugins if p not in self.mutating and p not in self.validating]
        if unknown:
            raise TypeError(f"admission plugins must have admit() or validate(): {unknown!r}")

    async def __call__(self, attrs: Attributes) -> None:
        for mutating in self.mutating:
            await mutating.admit(attrs)
        for validating in self.validating:
            await validating.validate(attrs)
