"""One strategy shape for kube's types: defaults on every write (kube defaults whatever it decodes),
an initial status on create, validation on create and on update."""

from __future__ import annotations

from collections.abc import Callable

from kcp_apiserver.apimachinery.status import Cause
from kcp_apiserver.registry.resource import Obj
from kcp_apiserver.registry.strategy import Strategy

Defaulter = Callable[[Obj], None]
Validator = Callable[[Obj], list[Cause]]
UpdateValidator = Callable[[Obj, Obj], list[Cause]]


class KubeStrategy(Strategy):
    def __init__(self, default: Defaulter | None = None, validate: Validator | None = None, *,
                 validate_update: UpdateValidator | None = None, on_create: Defaulter | None = None) -> None:
        self._default = default
        self._validate = validate
        self._validate_update = validate_update
        self._on_create = on_create

    def prepare_for_create(self, obj: Obj) -> None:
        if self._default is not None:
            self._default(obj)
        if self._on_create is not None:
            self._on_create(obj)

    def prepare_for_update(self, obj: Obj, old: Obj) -> None:
        if self._default is not None:
            self._default(obj)

    def validate(self, obj: Obj) -> list[Cause]:
        return self._validate(obj) if self._validate is not None else []

    def validate_update(self, obj: Obj, old: Obj) -> list[Cause]:
        causes = self.validate(obj)
        if self._validate_update is not None:
            causes += self._validate_update(obj, old)
        return causes


def spec(obj: Obj) -> Obj:
    return member(obj, "spec")


def member(obj: Obj, key: str) -> Obj:
    """obj[key] when it is an object, else an empty one (kube would have refused to decode it)."""
    value = obj.get(key)
    return value if isinstance(value, dict) else {}
