"""One strategy shape for kube's types: kube's defaults on every write (kube defaults whatever it decodes),
an initial status on create, kube's validation on create and on update. The rules are kcp_apiserver's
`kubetypes` (kcp applies the same ones to the types it imports); the initial status is the simulator's."""

from __future__ import annotations

from kcp_apiserver.embedding import Cause, Defaulter, KubeType, Obj, Strategy, kube_type


class KubeStrategy(Strategy):
    def __init__(self, rules: KubeType, *, on_create: Defaulter | None = None) -> None:
        self._rules = rules
        self._on_create = on_create

    def prepare_for_create(self, obj: Obj) -> None:
        if self._rules.default is not None:
            self._rules.default(obj)
        if self._on_create is not None:
            self._on_create(obj)

    def prepare_for_update(self, obj: Obj, old: Obj) -> None:
        if self._rules.default is not None:
            self._rules.default(obj)

    def validate(self, obj: Obj) -> list[Cause]:
        return self._rules.validate(obj) if self._rules.validate is not None else []

    def validate_update(self, obj: Obj, old: Obj) -> list[Cause]:
        causes = self.validate(obj)
        if self._rules.validate_update is not None:
            causes += self._rules.validate_update(obj, old)
        return causes


def kube_strategy(group: str, version: str, kind: str, release: str, *, on_create: Defaulter | None = None,
                  cls: type[KubeStrategy] = KubeStrategy) -> KubeStrategy:
    """The strategy of one of kube's types as `release` (MAJOR.MINOR) defines it."""
    rules = kube_type(group, version, kind, int(release.split(".")[1]))
    if rules is None:
        raise LookupError(f"kube has no rules for {kind} in {group or 'core'}/{version}")
    return cls(rules, on_create=on_create)
