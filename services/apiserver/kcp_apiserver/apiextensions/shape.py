"""What kube's decoder would reject before validation: JSON of the wrong type for a CRD field.

Checked first, so that every rule after it can trust the types it reads. The recursion over a
schema is bounded, so a hostile schema cannot exhaust Python's recursion limit.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from kcp_apiserver.apiextensions.fields import Obj, get, key_path, sub_path
from kcp_apiserver.apimachinery.status import Cause
from kcp_apiserver.apimachinery.validation import invalid, type_invalid

MAX_SCHEMA_DEPTH = 200  # not kube's: keeps a hostile schema from exhausting Python's recursion limit


_EXPECT: dict[str, tuple[Callable[[Any], bool], str]] = {
    "string": (lambda v: isinstance(v, str), "a string"),
    "boolean": (lambda v: isinstance(v, bool), "a boolean"),
    "integer": (lambda v: (isinstance(v, int) and not isinstance(v, bool))
                or (isinstance(v, float) and v.is_integer()), "an integer"),
    "number": (lambda v: isinstance(v, (int, float)) and not isinstance(v, bool), "a number"),
    "object": (lambda v: isinstance(v, dict), "an object"),
    "list": (lambda v: isinstance(v, list), "a list"),
    "strings": (lambda v: isinstance(v, list) and all(isinstance(x, str) for x in v), "a list of strings"),
    "objects": (lambda v: isinstance(v, list) and all(isinstance(x, dict) for x in v), "a list of objects"),
}


def _expect(obj: Any, key: str, kind: str, path: str, errs: list[Cause]) -> bool:
    """True when obj[key] is absent or of the JSON kind kube's Go type needs."""
    value = get(obj, key)
    if value is None:
        return True
    ok, what = _EXPECT[kind]
    if ok(value):
        return True
    errs.append(type_invalid(sub_path(path, key), value, what))
    return False


def _fields(obj: Any, path: str, kinds: dict[str, str], errs: list[Cause]) -> None:
    for key, kind in kinds.items():
        _expect(obj, key, kind, path, errs)


_NAMES_SHAPE = {"plural": "string", "singular": "string", "kind": "string", "listKind": "string",
                "shortNames": "strings", "categories": "strings"}
_SCHEMA_SCALARS = {
    "id": "string", "$schema": "string", "$ref": "string", "description": "string", "type": "string",
    "format": "string", "title": "string", "pattern": "string", "x-kubernetes-list-type": "string",
    "x-kubernetes-map-type": "string", "maximum": "number", "minimum": "number", "multipleOf": "number",
    "exclusiveMaximum": "boolean", "exclusiveMinimum": "boolean", "uniqueItems": "boolean", "nullable": "boolean",
    "x-kubernetes-preserve-unknown-fields": "boolean", "x-kubernetes-embedded-resource": "boolean",
    "x-kubernetes-int-or-string": "boolean", "maxLength": "integer", "minLength": "integer",
    "maxItems": "integer", "minItems": "integer", "maxProperties": "integer", "minProperties": "integer",
    "enum": "list", "required": "strings", "x-kubernetes-list-map-keys": "strings", "externalDocs": "object",
}
_RULE_SHAPE = {"rule": "string", "message": "string", "messageExpression": "string", "reason": "string",
               "fieldPath": "string", "optionalOldSelf": "boolean"}


def _schema_shape(s: Any, path: str, errs: list[Cause], depth: int = 0) -> None:
    """JSONSchemaProps field types; recursion is bounded so a hostile schema cannot crash the server."""
    if not isinstance(s, dict):
        errs.append(type_invalid(path, s, "an object"))
        return
    if depth > MAX_SCHEMA_DEPTH:
        errs.append(invalid(path, "", f"must not be nested more than {MAX_SCHEMA_DEPTH} levels deep"))
        return
    _fields(s, path, _SCHEMA_SCALARS, errs)
    for key in ("not",):
        if get(s, key) is not None:
            _schema_shape(s[key], sub_path(path, key), errs, depth + 1)
    for key in ("allOf", "anyOf", "oneOf"):
        if _expect(s, key, "list", path, errs):
            for i, sub in enumerate(get(s, key) or []):
                _schema_shape(sub, key_path(sub_path(path, key), i), errs, depth + 1)
    for key in ("properties", "patternProperties", "definitions"):
        if _expect(s, key, "object", path, errs):
            for name, sub in (get(s, key) or {}).items():
                _schema_shape(sub, key_path(sub_path(path, key), name), errs, depth + 1)
    for key in ("additionalProperties", "additionalItems"):
        value = get(s, key)
        if isinstance(value, dict):
            _schema_shape(value, sub_path(path, key), errs, depth + 1)
        elif value is not None and not isinstance(value, bool):
            errs.append(type_invalid(sub_path(path, key), value, "an object or a boolean"))
    items = get(s, "items")
    if isinstance(items, dict):
        _schema_shape(items, sub_path(path, "items"), errs, depth + 1)
    elif isinstance(items, list):
        for i, sub in enumerate(items):
            _schema_shape(sub, key_path(sub_path(path, "items"), i), errs, depth + 1)
    elif items is not None:
        errs.append(type_invalid(sub_path(path, "items"), items, "an object or a list of objects"))
    if _expect(s, "dependencies", "object", path, errs):
        for name, dep in (get(s, "dependencies") or {}).items():
            if isinstance(dep, dict):
                _schema_shape(dep, key_path(sub_path(path, "dependencies"), name), errs, depth + 1)
            elif not (isinstance(dep, list) and all(isinstance(x, str) for x in dep)):
                errs.append(type_invalid(key_path(sub_path(path, "dependencies"), name), dep,
                                         "an object or a list of strings"))
    if _expect(s, "x-kubernetes-validations", "objects", path, errs):
        for i, rule in enumerate(get(s, "x-kubernetes-validations") or []):
            _fields(rule, key_path(sub_path(path, "x-kubernetes-validations"), i), _RULE_SHAPE, errs)


def shape_errors(crd: Obj) -> list[Cause]:
    """Wrong JSON types, which kube rejects while decoding; checked first so the rules can trust types."""
    errs: list[Cause] = []
    spec = crd.get("spec")
    if spec is not None and not isinstance(spec, dict):
        return [type_invalid("spec", spec, "an object")]
    _fields(spec, "spec", {"group": "string", "scope": "string", "preserveUnknownFields": "boolean",
                           "names": "object", "versions": "objects", "conversion": "object"}, errs)
    _fields(get(spec, "names"), "spec.names", _NAMES_SHAPE, errs)
    versions = get(spec, "versions")
    for i, version in enumerate(versions if isinstance(versions, list) else []):
        vpath = f"spec.versions[{i}]"
        if not isinstance(version, dict):
            continue
        _fields(version, vpath, {"name": "string", "served": "boolean", "storage": "boolean",
                                 "deprecated": "boolean", "deprecationWarning": "string", "schema": "object",
                                 "subresources": "object", "additionalPrinterColumns": "objects",
                                 "selectableFields": "objects"}, errs)
        schema = get(get(version, "schema"), "openAPIV3Schema")
        if schema is not None:
            _schema_shape(schema, f"{vpath}.schema.openAPIV3Schema", errs)
        sub = get(version, "subresources")
        _fields(sub, f"{vpath}.subresources", {"status": "object", "scale": "object"}, errs)
        _fields(get(sub, "scale"), f"{vpath}.subresources.scale",
                {"specReplicasPath": "string", "statusReplicasPath": "string", "labelSelectorPath": "string"}, errs)
        for j, col in enumerate(get(version, "additionalPrinterColumns") or []):
            _fields(col, f"{vpath}.additionalPrinterColumns[{j}]",
                    {"name": "string", "type": "string", "format": "string", "description": "string",
                     "jsonPath": "string", "priority": "integer"}, errs)
        for j, sel in enumerate(get(version, "selectableFields") or []):
            _fields(sel, f"{vpath}.selectableFields[{j}]", {"jsonPath": "string"}, errs)
    conversion = get(spec, "conversion")
    _fields(conversion, "spec.conversion", {"strategy": "string", "webhook": "object"}, errs)
    webhook = get(conversion, "webhook")
    _fields(webhook, "spec.conversion.webhook", {"conversionReviewVersions": "strings", "clientConfig": "object"},
            errs)
    client = get(webhook, "clientConfig")
    _fields(client, "spec.conversion.webhook.clientConfig", {"url": "string", "caBundle": "string",
                                                              "service": "object"}, errs)
    _fields(get(client, "service"), "spec.conversion.webhook.clientConfig.service",
            {"namespace": "string", "name": "string", "path": "string", "port": "integer"}, errs)
    status = crd.get("status")
    if status is not None and not isinstance(status, dict):
        errs.append(type_invalid("status", status, "an object"))
    else:
        _fields(status, "status", {"storedVersions": "strings", "acceptedNames": "object"}, errs)
        _fields(get(status, "acceptedNames"), "status.acceptedNames", _NAMES_SHAPE, errs)
    return errs
