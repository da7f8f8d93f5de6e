"""A type's REST strategy: what differs between types when they are created, updated and
deleted, beside the generic store (kube's RESTCreateStrategy, RESTUpdateStrategy and
RESTDeleteStrategy). The store calls these hooks and holds no type's special case itself.
"""

from __future__ import annotations

from collections.abc import Callable

from kcp_apiserver.apimachinery.status import Cause
from kcp_apiserver.registry.resource import Obj

Preparer = Callable[[Obj, Obj | None], None]
Validator = Callable[[Obj, Obj | None], list[Cause]]


class Strategy:
    """The generic store's defaults; a type overrides the hooks it needs."""

    return_deleted_object = False  # DELETE answers with the object rather than a Status (kube's CRD store)

    def prepare_for_create(self, obj: Obj) -> None:
        """Defaults and server-set fields of a new object, before validation."""

    def prepare_for_update(self, obj: Obj, old: Obj) -> None:
        """Server-set fields an update may not change, before validation."""

    def validate(self, obj: Obj) -> list[Cause]:
        return []

    def validate_update(self, obj: Obj, old: Obj) -> list[Cause]:
        return self.validate(obj)

    def validate_subresource_update(self, subresource: str, obj: Obj, old: Obj) -> list[Cause]:
        """A write through a subresource other than status (a pod's binding sets what an update may not)."""
        return self.validate_update(obj, old)

    def prepare_for_delete(self, obj: Obj) -> None:
        """The object as it becomes deleting, when finalizers hold it."""

    def finalizers(self, obj: Obj) -> list[str]:
        """What must finish before the object can go."""
        return list(obj["metadata"].get("finalizers") or [])

    def grace_period(self, obj: Obj, requested: int | None) -> int:
        """Seconds a DELETE leaves the object deleting before it may go (kube's CheckGracefulDelete; `requested`:
        the DeleteOptions' gracePeriodSeconds). 0: no graceful deletion, as for most types."""
        return 0


DEFAULT = Strategy()


class FunctionStrategy(Strategy):
    """A strategy from two plain functions `prepare(obj, old)` and `validate(obj, old)` (old None on create)."""

    def __init__(self, prepare: Preparer | None = None, validate: Validator | None = None) -> None:
        self._prepare = prepare
        self._validate = validate

    def prepare_for_create(self, obj: Obj) -> None:
        if self._prepare is not None:
            self._prepare(obj, None)

    def prepare_for_update(self, obj: Obj, old: Obj) -> None:
        if self._prepare is not None:
            self._prepare(obj, old)

    def validate(self, obj: Obj) -> list[Cause]:
        return self._validate(obj, None) if self._validate is not None else []

    def validate_update(self, obj: Obj, old: Obj) -> list[Cause]:
        return self._validate(obj, old) if self._validate is not None else []
