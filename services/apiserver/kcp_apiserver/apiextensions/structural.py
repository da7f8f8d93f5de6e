"""Structural schemas: what schema.NewStructural cannot represent and kube's ValidateStructural rules.

A structural schema states the type of every field outside of allOf/anyOf/oneOf/not, which hold
value validations only; pruning, defaulting and server-side apply rely on that shape.
"""

from __future__ import annotations

from typing import Any

from kcp_apiserver.apiextensions.fields import Obj, get, get_str
from kcp_apiserver.apiextensions.goregexp import PatternBudget
from kcp_apiserver.apimachinery.status import Cause
from kcp_apiserver.apimachinery.validation import forbidden, invalid, required

# JSONSchemaProps fields in the order of kube's internal Go struct, with how Go sees a zero value.
GO_FIELDS = (
    ("ID", "id", "str"), ("Schema", "$schema", "str"), ("Ref", "$ref", "ptr"), ("Description", "description", "str"),
    ("Type", "type", "str"), ("Nullable", "nullable", "bool"), ("Format", "format", "str"),
    ("Title", "title", "str"), ("Default", "default", "ptr"), ("Maximum", "maximum", "ptr"),
    ("ExclusiveMaximum", "exclusiveMaximum", "bool"), ("Minimum", "minimum", "ptr"),
    ("ExclusiveMinimum", "exclusiveMinimum", "bool"), ("MaxLength", "maxLength", "ptr"),
    ("MinLength", "minLength", "ptr"), ("Pattern", "pattern", "str"), ("MaxItems", "maxItems", "ptr"),
    ("MinItems", "minItems", "ptr"), ("UniqueItems", "uniqueItems", "bool"), ("MultipleOf", "multipleOf", "ptr"),
    ("Enum", "enum", "ptr"), ("MaxProperties", "maxProperties", "ptr"), ("MinProperties", "minProperties", "ptr"),
    ("Required", "required", "ptr"), ("Items", "items", "ptr"), ("AllOf", "allOf", "ptr"),
    ("OneOf", "oneOf", "ptr"), ("AnyOf", "anyOf", "ptr"), ("Not", "not", "ptr"),
    ("Properties", "properties", "ptr"), ("AdditionalProperties", "additionalProperties", "ptr"),
    ("PatternProperties", "patternProperties", "ptr"), ("Dependencies", "dependencies", "ptr"),
    ("AdditionalItems", "additionalItems", "ptr"), ("Definitions", "definitions", "ptr"),
    ("ExternalDocs", "externalDocs", "ptr"), ("Example", "example", "ptr"),
    ("XPreserveUnknownFields", "x-kubernetes-preserve-unknown-fields", "ptr"),
    ("XEmbeddedResource", "x-kubernetes-embedded-resource", "bool"),
    ("XIntOrString", "x-kubernetes-int-or-string", "bool"), ("XListMapKeys", "x-kubernetes-list-map-keys", "ptr"),
    ("XListType", "x-kubernetes-list-type", "ptr"), ("XMapType", "x-kubernetes-map-type", "ptr"),
    ("XValidations", "x-kubernetes-validations", "ptr"),
)


def go_zero(value: Any, kind: str) -> bool:
    if value is None:
        return True
    if kind == "str":
        return value == ""
    if kind == "bool":
        return value is False
    return False


# -- NewStructural: fields a structural schema cannot represent ----------------------------------

def structural_init_error(s: Obj) -> str | None:
    """The error schema.NewStructural returns; when set, kube skips the structural checks."""
    for key, name in (("id", "id"), ("$schema", "schema"), ("$ref", "$ref"), ("patternProperties", "patternProperties"),
                      ("dependencies", "dependencies"), ("definitions", "definitions")):
        if s.get(key):  # kube: len(...) > 0
            return f"OpenAPIV3Schema '{name}' is not supported"
    if s.get("additionalItems") is not None:
        return "OpenAPIV3Schema 'additionalItems' is not supported"
    if s.get("x-kubernetes-preserve-unknown-fields") is False:
        return "internal error: 'x-kubernetes-preserve-unknown-fields' must be true or undefined"
    items = s.get("items")
    if isinstance(items, list) and items:
        return "OpenAPIV3Schema 'items' must be a schema, but is an array"
    subs = [get(s, "not"), *(get(s, "allOf") or []), *(get(s, "anyOf") or []), *(get(s, "oneOf") or []),
            get(s, "additionalProperties"), items, *(get(s, "properties") or {}).values()]
    for sub in subs:
        if isinstance(sub, dict) and (err := structural_init_error(sub)) is not None:
            return err
    return None


# -- ValidateStructural -------------------------------------------------------------------------

_ROOT, _ITEM, _FIELD = "root", "item", "field"
_EMPTY_TYPE = {_ROOT: "must not be empty at the root", _ITEM: "must not be empty for specified array items",
               _FIELD: "must not be empty for specified object fields"}
_INT_OR_STRING_ANY_OF = [{"type": "integer"}, {"type": "string"}]


def validate_structural(schema: Obj, path: str, budget: PatternBudget | None = None) -> list[Cause]:
    """schema.ValidateStructural: the NonStructuralSchema rules, sorted as kube sorts them. `budget` is
    shared by every schema of one CRD, which bounds what compiling their patterns costs."""
    causes = _structural_invariants(schema, _ROOT, path, budget or PatternBudget())
    causes += _vv_completeness(schema, schema, path, path)
    return sorted(causes, key=lambda c: f"{c.field}: {c.message}")


def go_nonzero(s: Obj) -> Obj:
    """s without the keys Go would see as zero values (false, "", null)."""
    kinds = {key: kind for _, key, kind in GO_FIELDS}
    return {k: v for k, v in s.items() if not go_zero(v, kinds.get(k, "ptr"))}


def _is_int_or_string_any_of(any_of: Any) -> bool:
    return isinstance(any_of, list) and [go_nonzero(x) for x in any_of if isinstance(x, dict)] == \
        _INT_OR_STRING_ANY_OF and len(any_of) == 2


def _structural_invariants(s: Obj, lvl: str, path: str, budget: PatternBudget) -> list[Cause]:
    causes: list[Cause] = []
    kind = get_str(s, "type")
    items = get(s, "items")
    props = get(s, "properties") or {}
    extra = get(s, "additionalProperties")
    preserve = s.get("x-kubernetes-preserve-unknown-fields") is True
    embedded = s.get("x-kubernetes-embedded-resource") is True
    int_or_string = s.get("x-kubernetes-int-or-string") is True
    if kind == "array" and items is None:
        causes.append(required(f"{path}.items", "must be specified"))
    if isinstance(items, dict):
        causes += _structural_invariants(items, _ITEM, f"{path}.items", budget)
    for name, sub in props.items():
        causes += _structural_invariants(sub, _FIELD, f"{path}.properties[{name}]", budget)
    if extra is not None:
        if lvl == _ROOT:
            causes.append(forbidden(f"{path}.additionalProperties", "must not be used at the root"))
        if isinstance(extra, dict):
            causes += _structural_invariants(extra, _FIELD, f"{path}.additionalProperties", budget)
    if int_or_string and preserve:
        causes.append(invalid(f"{path}.x-kubernetes-preserve-unknown-fields", True,
                              "must be false if x-kubernetes-int-or-string is true"))
    if int_or_string and embedded:
        causes.append(invalid(f"{path}.x-kubernetes-embedded-resource", True,
                              "must be false if x-kubernetes-int-or-string is true"))
    all_of = get(s, "allOf") or []
    skip_first = bool(all_of) and isinstance(all_of[0], dict) and _is_int_or_string_any_of(get(all_of[0], "anyOf"))
    causes += _value_validation(s, _is_int_or_string_any_of(get(s, "anyOf")), skip_first, lvl, path, budget)
    if embedded and kind != "object":
        detail = "must be object if x-kubernetes-embedded-resource is true"
        causes.append(required(f"{path}.type", detail) if not kind else invalid(f"{path}.type", kind, detail))
    elif not kind and not int_or_string and not preserve:
        causes.append(required(f"{path}.type", _EMPTY_TYPE[lvl]))
    if embedded and extra is not None:
        causes.append(forbidden(f"{path}.additionalProperties", "must not be used if x-kubernetes-embedded-resource "
                                                                "is set"))
    if lvl == _ROOT and kind and kind != "object":
        causes.append(invalid(f"{path}.type", kind, "must be object at the root"))
    check_meta = lvl == _ROOT or embedded
    for name in ("kind", "apiVersion"):
        if name in props and check_meta and get_str(props[name], "type") != "string":
            causes.append(invalid(f"{path}.properties[{name}].type", get_str(props[name], "type"), "must be string"))
    if "metadata" in props:
        causes += _metadata_invariants(props["metadata"], check_meta, lvl, f"{path}.properties[metadata]")
    if embedded and not preserve and not props:
        causes.append(required(f"{path}.properties", "must not be empty if x-kubernetes-embedded-resource is true "
                                                     "without x-kubernetes-preserve-unknown-fields"))
    return causes


# What NewStructural keeps of a node: metadata at the root may hold nothing else than name/generateName.
_NOT_STRUCTURAL = ("externalDocs", "example")


def _metadata_invariants(m: Obj, check_meta: bool, lvl: str, path: str) -> list[Cause]:
    causes: list[Cause] = []
    if check_meta and get_str(m, "type") != "object":
        causes.append(invalid(f"{path}.type", get_str(m, "type"), "must be object"))
    if lvl == _ROOT:
        known = {key for _, key, _ in GO_FIELDS}  # kube's decoder drops unknown keys
        rest = {k: v for k, v in go_nonzero(m).items() if k in known}
        names = set(rest.get("properties") or {})
        if names and names <= {"name", "generateName"}:
            rest.pop("properties")
        for key in ("type", "default", *_NOT_STRUCTURAL):
            rest.pop(key, None)
        if any(not (isinstance(v, (list, dict)) and not v) for v in rest.values()):
            causes.append(forbidden(path, "must not specify anything other than name and generateName, but metadata "
                                          "is implicitly specified"))
    return causes


def _value_validation(v: Obj, skip_any_of: bool, skip_first_all_of_any_of: bool, lvl: str,
                      path: str, budget: PatternBudget) -> list[Cause]:
    causes: list[Cause] = []
    if not skip_any_of:
        for i, sub in enumerate(get(v, "anyOf") or []):
            causes += _nested(sub, False, False, lvl, f"{path}.anyOf[{i}]", budget)
    for i, sub in enumerate(get(v, "allOf") or []):
        causes += _nested(sub, skip_first_all_of_any_of and i == 0, False, lvl, f"{path}.allOf[{i}]", budget)
    for i, sub in enumerate(get(v, "oneOf") or []):
        causes += _nested(sub, False, False, lvl, f"{path}.oneOf[{i}]", budget)
    if isinstance(get(v, "not"), dict):
        causes += _nested(v["not"], False, False, lvl, f"{path}.not", budget)
    pattern = get_str(v, "pattern")
    if pattern and (err := budget.error(pattern)):
        causes.append(invalid(f"{path}.pattern", pattern, f"must be a valid regular expression, but isn't: {err}"))
    return causes


_NESTED_FORBIDDEN = (
    ("type", "str", "must be empty to be structural"),
    ("additionalProperties", "ptr", "must be undefined to be structural"),
    ("default", "ptr", "must be undefined to be structural"),
    ("title", "str", "must be empty to be structural"),
    ("description", "str", "must be empty to be structural"),
    ("nullable", "bool", "must be false to be structural"),
    ("externalDocs", "ptr", "must be undefined to be structural"),
    ("x-kubernetes-preserve-unknown-fields", "bool", "must be false to be structural"),
    ("x-kubernetes-embedded-resource", "bool", "must be false to be structural"),
    ("x-kubernetes-int-or-string", "bool", "must be false to be structural"),
    ("x-kubernetes-list-map-keys", "list", "must be empty to be structural"),
    ("x-kubernetes-list-type", "ptr", "must be undefined to be structural"),
    ("x-kubernetes-map-type", "ptr", "must be undefined to be structural"),
    ("x-kubernetes-validations", "list", "must be empty to be structural"),
)


def _nested(v: Obj, skip_any_of: bool, skip_all_of_any_of: bool, lvl: str, path: str,
            budget: PatternBudget) -> list[Cause]:
    """Inside allOf/anyOf/oneOf/not only value validations are allowed: nothing that shapes the object."""
    causes = _value_validation(v, skip_any_of, skip_all_of_any_of, lvl, path, budget)
    if isinstance(get(v, "items"), dict):
        causes += _nested(v["items"], False, False, lvl, f"{path}.items", budget)
    for name, sub in (get(v, "properties") or {}).items():
        causes += _nested(sub, False, False, _FIELD, f"{path}.properties[{name}]", budget)
    for key, kind, detail in _NESTED_FORBIDDEN:
        value = v.get(key)
        if kind == "list":
            present = bool(value)
        else:
            present = not go_zero(value, kind)
        if present:
            causes.append(forbidden(f"{path}.{key}", detail))
    if "metadata" in (get(v, "properties") or {}):
        causes.append(forbidden(f"{path}.properties[metadata]", "must not be specified in a nested context"))
    return causes


def _vv_completeness(v: Obj, s: Obj | None, spath: str, vpath: str) -> list[Cause]:
    """Fields named under allOf/anyOf/oneOf/not must exist in the structure too.

    Like kube, only the junctors of the root are followed (and what they nest); junctors deeper in
    the structure are not checked for completeness.
    """
    if s is None:
        return [required(spath, f"because it is defined in {vpath}")]
    causes: list[Cause] = []
    if isinstance(get(v, "not"), dict):
        causes += _nested_completeness(v["not"], s, spath, f"{vpath}.not")
    for key in ("allOf", "anyOf", "oneOf"):
        for i, sub in enumerate(get(v, key) or []):
            causes += _nested_completeness(sub, s, spath, f"{vpath}.{key}[{i}]")
    return causes


def _nested_completeness(v: Obj | None, s: Obj | None, spath: str, vpath: str) -> list[Cause]:
    if v is None:
        return []
    if s is None:
        return [required(spath, f"because it is defined in {vpath}")]
    causes = _vv_completeness(v, s, spath, vpath)
    items = get(s, "items")
    causes += _nested_completeness(get(v, "items") if isinstance(get(v, "items"), dict) else None,
                                   items if isinstance(items, dict) else None, f"{spath}.items", f"{vpath}.items")
    props = get(s, "properties") or {}
    for name, sub in (get(v, "properties") or {}).items():
        if name not in props:
            causes.append(required(f"{spath}.properties[{name}]",
                                   f"because it is defined in {vpath}.properties[{name}]"))
        else:
            causes += _nested_completeness(sub, props[name], f"{spath}.properties[{name}]",
                                           f"{vpath}.properties[{name}]")
    return causes
