"""The strategy of one of kube's own types that kcp serves as a CRD imported from physical clusters.

To its users an imported Deployment is kube's Deployment, so a write gets kube's defaults and kube's
validation (`kubetypes`, the same rules kcp-sim-cluster serves its built-ins with), on top of what any
custom resource gets. Two things differ from a built-in:

- the served schema may be a reduced one (the lowest common denominator of several clusters' schemas,
  or an older release's): a default for a field it lacks is pruned again, so kcp never stores a field
  some cluster it syncs to cannot take;
- the CRD's schema validation still runs (it is all that checks a value's type, which kube's decoder
  would refuse), but where kube's validation already reports a field, the schema's cause for the same
  field is dropped: the 422 a client reads is kube's, cause for cause.
"""

from __future__ import annotations

from kcp_apiserver.apiextensions.typeschema import CustomTypeSchema
from kcp_apiserver.apimachinery.status import Cause
from kcp_apiserver.kubetypes.kinds import KubeType, kube_type
from kcp_apiserver.registry.resource import Obj
from kcp_apiserver.registry.strategy import Strategy
from kcpcommon.kubetypes import is_imported_kube_type


class ImportedKubeStrategy(Strategy):
    def __init__(self, rules: KubeType, schema: CustomTypeSchema) -> None:
        self._rules = rules
        self._schema = schema

    def prepare_for_create(self, obj: Obj) -> None:
        self._default(obj)

    def prepare_for_update(self, obj: Obj, old: Obj) -> None:
        self._default(obj)

    def _default(self, obj: Obj) -> None:
        if self._rules.default is not None:
            self._rules.default(obj)
            self._schema.prune(obj)

    def validate(self, obj: Obj) -> list[Cause]:
        kube = self._rules.validate(obj) if self._rules.validate is not None else []
        return _kube_first(kube, self._schema.validate(obj, None))

    def validate_update(self, obj: Obj, old: Obj) -> list[Cause]:
        kube = self._rules.validate(obj) if self._rules.validate is not None else []
        if self._rules.validate_update is not None:
            kube += self._rules.validate_update(obj, old)
        return _kube_first(kube, self._schema.validate(obj, old))


def _kube_first(kube: list[Cause], schema: list[Cause]) -> list[Cause]:
    """kube's causes, then the schema's on fields kube said nothing about."""
    if not kube:
        return schema
    fields = {c.field for c in kube}
    return kube + [c for c in schema if c.field not in fields]


def imported_kube_strategy(crd: Obj, version: str, schema: CustomTypeSchema) -> Strategy | None:
    """kube's strategy for a version of an imported CRD of one of kube's types; None for any other CRD."""
    if not is_imported_kube_type(crd):
        return None
    spec = crd["spec"]
    rules = kube_type(spec["group"], version, spec["names"]["kind"])
    return ImportedKubeStrategy(rules, schema) if rules is not None else None
