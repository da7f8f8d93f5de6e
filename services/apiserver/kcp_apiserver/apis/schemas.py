"""An APIResourceSchema is a CRD's spec: it is validated by kube's CRD rules when written, and a binding
serves it through the same resource descriptors a CRD's types get, stored apart under the export's identity."""

from __future__ import annotations

import dataclasses
from collections.abc import Iterable

from kcp_apiserver.apiextensions.servable import servable_resources
from kcp_apiserver.apiextensions.validation import validate_crd
from kcp_apiserver.apimachinery.status import Cause
from kcp_apiserver.registry.resource import Obj, Resource

_WRAPPED = ".schema.openAPIV3Schema"
_HOISTED = "spec.validation.openAPIV3Schema"


def schema_as_crd(schema: Obj) -> Obj:
    """The accepted CRD an APIResourceSchema stands for (its versions' schemas wrapped as a CRD's are)."""
    spec = schema.get("spec") or {}
    versions = [{**v, "schema": {"openAPIV3Schema": v.get("schema")}} for v in spec.get("versions") or []]
    names = dict(spec.get("names") or {})
    if isinstance(names.get("kind"), str):  # kube's CRD defaults
        names.setdefault("singular", names["kind"].lower())
        names.setdefault("listKind", f"{names['kind']}List")
    meta = schema.get("metadata") or {}
    # its labels and annotations stay: a schema the cluster controller made of an imported kube type (the
    # imported label, its patch strategies) serves that type with kube's semantics, as the CRD does
    kept = {k: dict(meta[k]) for k in ("labels", "annotations") if isinstance(meta.get(k), dict)}
    # kcp's (and this project's import's) name for a core-group type is `<plural>.core`
    return {"metadata": {"name": f"{names.get('plural')}.{spec.get('group') or 'core'}", **kept},
            "spec": {**spec, "names": names, "versions": versions}, "status": {"acceptedNames": names}}


def schema_causes(schema: Obj) -> list[Cause]:
    """kube's CRD validation of what the schema would serve, with the fields named as the schema has them.

    The CRD's own name rule (`<plural>.<group>`) does not apply: kcp names schemas `<prefix>.<plural>.<group>`."""
    crd = schema_as_crd(schema)
    crd["status"]["storedVersions"] = [v["name"] for v in crd["spec"]["versions"]
                                       if isinstance(v, dict) and v.get("storage")]
    # kube hoists the schema all versions share to `spec.validation`, and names its fields there
    shared = "spec.versions[0].schema" if len(crd["spec"]["versions"]) == 1 else "spec.versions[*].schema"
    causes = []
    for cause in validate_crd(crd):
        if cause.field.startswith(("metadata", "status")):
            continue
        field = cause.field.replace(_WRAPPED, ".schema").replace(_HOISTED, shared)
        causes.append(dataclasses.replace(cause, field=field))
    return causes


def bound_resources(schema: Obj, identity: str, builtins: Iterable[Resource]) -> list[Resource]:
    """The resources a bound schema serves, stored under the export's identity; `Unservable` says why not."""
    return [dataclasses.replace(res, identity=identity) for res in servable_resources(schema_as_crd(schema), builtins)]
