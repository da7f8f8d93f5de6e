"""The strategy of one of kube's own types that kcp serves as a CRD imported from physical clusters.

To its users an imported Deployment is kube's Deployment, so a write gets kube's defaults and kube's
validation (`kubetypes`, the same rules kcp-sim-cluster serves its built-ins with), on top of what any
custom resource gets. Two things differ from a built-in:

- the served schema may be a reduced one (the lowest common denominator of several clusters' schemas,
  or an older release's): a default for a field it lacks is pruned again, so kcp never stores a field
  some cluster it syncs to cannot take (kube's validation still reads the object with every default,
  so it does not ask for a field that is not served);
- the CRD's schema validation still runs first (it is all that checks a value's type, which kube's
  decoder would refuse: an object with a value of the wrong type gets the schema's causes alone), and
  where kube's validation reports a field, the schema's causes on that field (or within it, or on the
  part that holds it) are dropped: the 422 a client reads is kube's.

A type kube serves at more than one version (an HPA at autoscaling/v2 and v1) is imported at one; kcp
serves the others too (`other_version_resources`), as kube does: the same objects, converted.
"""

from __future__ import annotations

import dataclasses

from kcp_apiserver.apiextensions.customtypeschema import CustomTypeSchema
from kcp_apiserver.apimachinery.jsonvalues import json_copy
from kcp_apiserver.apimachinery.status import Cause
from kcp_apiserver.kubetypes.kinds import Converter, KubeType, OtherVersion, kube_type, other_versions
from kcp_apiserver.registry import builtinschemas
from kcp_apiserver.registry.resource import Column, Obj, Resource
from kcp_apiserver.registry.strategy import Strategy
from kcpcommon.kubetypes import is_imported_kube_type

TYPE_INVALID = "FieldValueTypeInvalid"


class ImportedKubeStrategy(Strategy):
    """kube's defaults and validation over a served CRD schema (which may lack some of kube's fields)."""

    def __init__(self, rules: KubeType, schema: CustomTypeSchema) -> None:
        self._rules = rules
        self._schema = schema
        self._prunes_defaults = False  # set once a default was not kept: validation then reads a defaulted copy

    def prepare_for_create(self, obj: Obj) -> None:
        self._default(obj)

    def prepare_for_update(self, obj: Obj, old: Obj) -> None:
        self._default(obj)

    def _default(self, obj: Obj) -> None:
        if self._rules.default is not None:
            self._rules.default(obj)
            if self._schema.prune(obj):
                self._prunes_defaults = True

    def _as_kube_holds(self, obj: Obj) -> Obj:
        """obj with all of kube's defaults, also those the served schema does not keep: kube's validation
        requires some of them (a container's imagePullPolicy), and cannot require what is not served."""
        if not self._prunes_defaults or self._rules.default is None:
            return obj
        view = json_copy(obj)
        self._rules.default(view)
        return view

    def validate(self, obj: Obj) -> list[Cause]:
        return self._validate(obj, None)

    def validate_update(self, obj: Obj, old: Obj) -> list[Cause]:
        return self._validate(obj, old)

    def validate_subresource_update(self, subresource: str, obj: Obj, old: Obj) -> list[Cause]:
        """A status write (the syncer's) cannot change the spec, so kube does not validate the spec again: an
        object stored before kube's rules applied still gets its status. A pod's binding is what may set its
        nodeName."""
        if subresource == "status":
            return self._schema.validate(obj, old)
        if subresource == "binding":  # sets the pod's nodeName, which an update may not: checked as a new pod
            return self._validate(obj, None)
        return self._validate(obj, old)

    def _validate(self, obj: Obj, old: Obj | None) -> list[Cause]:
        schema = self._schema.validate(obj, old)
        if any(c.reason == TYPE_INVALID for c in schema):
            return schema  # kube would not have decoded it, so its validation never sees such an object
        view = self._as_kube_holds(obj)
        kube = self._rules.validate(view) if self._rules.validate is not None else []
        if old is not None and self._rules.validate_update is not None:
            kube += self._rules.validate_update(view, self._as_kube_holds(old))
        return _kube_first(kube, schema)


def _kube_first(kube: list[Cause], schema: list[Cause]) -> list[Cause]:
    """kube's causes, then the schema's on parts of the object kube said nothing about (a list-map's
    duplicate item, `containers[1]`, is kube's duplicate `containers[1].name`)."""
    if not kube:
        return schema
    fields = [c.field for c in kube]
    return kube + [c for c in schema if not any(_related(c.field, f) for f in fields)]


def _related(a: str, b: str) -> bool:
    """One field path is the other or lies within it."""
    short, long = sorted((a, b), key=len)
    return long == short or (long.startswith(short) and long[len(short)] in ".[")


def imported_kube_strategy(crd: Obj, version: str, schema: CustomTypeSchema) -> Strategy | None:
    """kube's strategy for a version of an imported CRD of one of kube's types; None for any other CRD."""
    if not is_imported_kube_type(crd):
        return None
    spec = crd["spec"]
    rules = kube_type(spec["group"], version, spec["names"]["kind"])
    return ImportedKubeStrategy(rules, schema) if rules is not None else None


def other_version_resources(crd: Obj, served: list[Resource]) -> list[Resource]:
    """The versions kube also serves an imported type at, which its CRD does not: each one a resource over the
    same storage, described by kube's own schema of that version (its OpenAPI, pruning, strategic merge), its
    objects converted to the imported version's shape on the way in (so the imported version's defaults and
    validation judge them, as kube judges every version on its internal type) and back on the way out."""
    if not is_imported_kube_type(crd):
        return []
    versions = {res.version for res in served}
    out = []
    for res in served:
        if res.storage_version not in ("", res.version):
            continue  # only the stored version converts straight to and from the others
        for other in other_versions(res.group, res.version, res.kind):
            if other.version in versions:
                continue
            release = builtinschemas.newest_release()
            definition = builtinschemas.definition_for(res.group, other.version, res.kind, release)
            if definition is not None:
                out.append(_other_version(res, other, definition, release))
                versions.add(other.version)
    return out


def _other_version(res: Resource, other: OtherVersion, definition: str, release: str) -> Resource:
    return dataclasses.replace(
        res, version=other.version, definition=definition, release=release, schema=None, type_schema=None,
        schema_digest="", storage_version=res.storage_version or res.version, deprecation_warning=None,
        to_storage=other.to_imported, from_storage=other.from_imported,
        columns=tuple(_read_as_imported(column, other.to_imported) for column in res.columns))


def _read_as_imported(column: Column, to_imported: Converter) -> Column:
    """The CRD's printer columns name the imported version's fields: a cell reads the object in that shape."""
    def cell(obj: Obj) -> object:
        return column.cell(to_imported(json_copy(obj)))

    return dataclasses.replace(column, cell=cell)
