"""One version's schema as kube validates it (ValidateCustomResourceDefinitionValidation and
ValidateCustomResourceDefinitionOpenAPISchema): the root, structural rules and defaults, then a walk
over every node for unsupported OpenAPI, list and map extensions and x-kubernetes-validations rules,
which must compile (celrules) as they run on every write of an object."""

from __future__ import annotations

import re
from collections.abc import Callable
from dataclasses import dataclass, field, replace
from typing import Any

from kcp_apiserver.apiextensions.celrules import rule_errors
from kcp_apiserver.apiextensions.defaultsvalidation import has_unpruned_defaults, validate_defaults
from kcp_apiserver.apiextensions.fields import META_FIELDS, Obj, get, get_str, not_supported, schema_has
from kcp_apiserver.apiextensions.goregexp import PatternBudget
from kcp_apiserver.apiextensions.structural import GO_FIELDS, go_zero, structural_init_error, validate_structural
from kcp_apiserver.apimachinery.status import Cause
from kcp_apiserver.apimachinery.validation import forbidden, invalid, required

OPENAPI_TYPES = ("array", "boolean", "integer", "number", "object", "string")
VALIDATION_RULE_REASONS = ("FieldValueDuplicate", "FieldValueForbidden", "FieldValueInvalid", "FieldValueRequired")


@dataclass(frozen=True)
class SchemaOptions:
    """kube's validationOptions for schemas: an update never tightens rules that the stored CRD already breaks."""

    require_valid_property_type: bool = True
    require_pruned_defaults: bool = True
    require_atomic_set_type: bool = True
    require_map_list_keys_map_set: bool = True
    # what compiling this CRD's patterns may still cost; one per validation, shared by its versions
    pattern_budget: PatternBudget = field(default_factory=PatternBudget, compare=False)


def schema_options(old_schemas: list[Obj]) -> SchemaOptions:
    """The options for an update, from the schemas of the stored CRD."""
    def any_node(pred: Callable[[Obj], bool]) -> bool:
        return any(schema_has(s, pred) for s in old_schemas)

    return SchemaOptions(
        require_valid_property_type=not any_node(
            lambda n: bool(get_str(n, "type")) and get_str(n, "type") not in OPENAPI_TYPES),
        require_pruned_defaults=not any(has_unpruned_defaults(s) for s in old_schemas),
        require_atomic_set_type=not any_node(non_atomic_set),
        require_map_list_keys_map_set=not any_node(lambda n: bool(map_list_keys_map_set(n, ""))),
    )


def non_atomic_set(s: Obj) -> bool:
    items = get(s, "items")
    if get(s, "x-kubernetes-list-type") != "set" or not isinstance(items, dict):
        return False
    if get_str(items, "type") == "array":
        return get(items, "x-kubernetes-list-type") not in (None, "atomic")
    if get_str(items, "type") == "object":
        return get(items, "x-kubernetes-map-type") != "atomic"
    return False


# -- CustomResourceValidation ------------------------------------------------------------------

_ALLOWED_AT_STATUS_ROOT = ("Description", "Type", "Format", "Title", "Maximum", "ExclusiveMaximum", "Minimum",
                           "ExclusiveMinimum", "MaxLength", "MinLength", "Pattern", "MaxItems", "MinItems",
                           "UniqueItems", "MultipleOf", "Required", "Items", "Properties", "ExternalDocs", "Example",
                           "XPreserveUnknownFields", "XValidations")


def _status_root_errors(schema: Obj, path: str) -> list[Cause]:
    """With a status subresource, status is validated as properties[status]; the root may only hold
    what still applies once status is split off."""
    for go_name, key, kind in GO_FIELDS:
        value = schema.get(key)
        if go_zero(value, kind):
            continue
        if go_name == "Type":
            if value != "object":
                return [invalid(f"{path}.type", value, 'only "object" is allowed as the type at the root of the '
                                                       'schema if the status subresource is enabled')]
            continue
        if go_name not in _ALLOWED_AT_STATUS_ROOT:
            return [invalid(path, schema, f"only [{' '.join(_ALLOWED_AT_STATUS_ROOT)}] fields are allowed at the "
                                          "root of the schema if the status subresource is enabled")]
    return []


def validate_validation(validation: Obj | None, status_enabled: bool, opts: SchemaOptions, path: str) -> list[Cause]:
    """ValidateCustomResourceDefinitionValidation for one schema (a version's or the hoisted one)."""
    schema = get(validation, "openAPIV3Schema")
    if schema is None:
        return []
    spath = f"{path}.openAPIV3Schema"
    causes: list[Cause] = []
    if status_enabled:
        causes += _status_root_errors(schema, spath)
    if schema.get("nullable") is True:
        causes.append(forbidden(f"{spath}.nullable", "nullable cannot be true at the root"))
    init_errs: list[Cause] = []
    if (err := structural_init_error(schema)) is not None:
        init_errs.append(invalid(spath, "", err))
    elif structural := validate_structural(schema, spath, opts.pattern_budget):
        causes += structural
    else:
        causes += validate_defaults(schema, spath, opts.require_pruned_defaults)
    schema_errs: list[Cause] = []
    cel_errs: list[Cause] = []
    _walk(schema, spath, _SSV(require_valid_type=opts.require_valid_property_type), True, opts, schema_errs,
          cel_errs)
    causes += schema_errs + cel_errs
    if not causes:
        causes += init_errs
    return causes


# -- ValidateCustomResourceDefinitionOpenAPISchema ----------------------------------------------

@dataclass(frozen=True)
class _SSV:
    """kube's specStandardValidatorV3: what the walk may allow where it is in the schema."""

    allow_defaults: bool = True
    disallow_reason: str = ""
    inside_meta: bool = False
    require_valid_type: bool = True

    def without_defaults(self, reason: str) -> _SSV:
        return replace(self, allow_defaults=False, disallow_reason=reason)

    def in_meta(self) -> _SSV:
        return replace(self, inside_meta=True)


def _ssv_errors(s: Obj, path: str, ssv: _SSV) -> list[Cause]:
    causes: list[Cause] = []
    kind = get_str(s, "type")
    if ssv.require_valid_type and kind and kind not in OPENAPI_TYPES:
        causes.append(not_supported(f"{path}.type", kind, OPENAPI_TYPES))
    if s.get("default") is not None and not ssv.allow_defaults:
        causes.append(forbidden(f"{path}.default", "must not be set" + (f" {ssv.disallow_reason}"
                                                                         if ssv.disallow_reason else "")))
    if get_str(s, "id"):
        causes.append(forbidden(f"{path}.id", "id is not supported"))
    if s.get("additionalItems") is not None:
        causes.append(forbidden(f"{path}.additionalItems", "additionalItems is not supported"))
    if get(s, "patternProperties"):
        causes.append(forbidden(f"{path}.patternProperties", "patternProperties is not supported"))
    if get(s, "definitions"):
        causes.append(forbidden(f"{path}.definitions", "definitions is not supported"))
    if s.get("dependencies") is not None:
        causes.append(forbidden(f"{path}.dependencies", "dependencies is not supported"))
    if s.get("$ref") is not None:
        causes.append(forbidden(f"{path}.$ref", "$ref is not supported"))
    if kind == "null":
        causes.append(forbidden(f"{path}.type", "type cannot be set to null, use nullable as an alternative"))
    if isinstance(s.get("items"), list) and s["items"]:
        causes.append(forbidden(f"{path}.items", "items must be a schema object and not an array"))
    if ssv.inside_meta and s.get("x-kubernetes-embedded-resource") is True:
        causes.append(forbidden(f"{path}.x-kubernetes-embedded-resource", "must not be used inside of resource meta"))
    return causes


def _walk(s: Obj, path: str, ssv: _SSV, is_root: bool, opts: SchemaOptions, errs: list[Cause], cel: list[Cause]) -> None:
    """Per-node OpenAPI rules, list/map extensions and x-kubernetes-validations, as kube walks them."""
    errs += _ssv_errors(s, path, ssv)
    if s.get("uniqueItems") is True:
        errs.append(forbidden(f"{path}.uniqueItems", "uniqueItems cannot be set to true since the runtime "
                                                     "complexity becomes quadratic"))
    extra = s.get("additionalProperties")
    props = get(s, "properties") or {}
    if extra is not None:
        if props and (extra is False or isinstance(extra, dict)):
            errs.append(forbidden(f"{path}.additionalProperties", "additionalProperties and properties are mutual "
                                                                  "exclusive"))
        if isinstance(extra, dict):
            sub = ssv.without_defaults("inside additionalProperties applying to object metadata") \
                if ssv.inside_meta else ssv
            _walk(extra, f"{path}.additionalProperties", sub, False, opts, errs, cel)
    for name, prop in props.items():
        sub = ssv
        if (is_root or s.get("x-kubernetes-embedded-resource") is True) and name in META_FIELDS:
            sub = sub.in_meta()
            if is_root:
                sub = sub.without_defaults(f"in top-level {name}")
        _walk(prop, f"{path}.properties[{name}]", sub, False, opts, errs, cel)
    if isinstance(get(s, "not"), dict):
        _walk(s["not"], f"{path}.not", ssv, False, opts, errs, cel)
    for key in ("allOf", "oneOf", "anyOf"):
        for i, sub_schema in enumerate(get(s, key) or []):
            _walk(sub_schema, f"{path}.{key}[{i}]", ssv, False, opts, errs, cel)
    for name, sub_schema in (get(s, "definitions") or {}).items():
        _walk(sub_schema, f"{path}.definitions[{name}]", ssv, False, opts, errs, cel)
    items = s.get("items")
    if isinstance(items, dict):
        _walk(items, f"{path}.items", ssv, False, opts, errs, cel)
    elif isinstance(items, list):
        for i, sub_schema in enumerate(items):
            _walk(sub_schema, f"{path}.items[{i}]", ssv, False, opts, errs, cel)
    for name, dep in (get(s, "dependencies") or {}).items():
        if isinstance(dep, dict):
            _walk(dep, f"{path}.dependencies[{name}]", ssv, False, opts, errs, cel)
    errs += _list_and_map_errors(s, path, opts)
    _validation_rules(s, path, errs, cel)


def _list_and_map_errors(s: Obj, path: str, opts: SchemaOptions) -> list[Cause]:
    causes: list[Cause] = []
    kind = get_str(s, "type")
    if s.get("x-kubernetes-preserve-unknown-fields") is False:
        causes.append(invalid(f"{path}.x-kubernetes-preserve-unknown-fields", False, "must be true or undefined"))
    map_type = s.get("x-kubernetes-map-type")
    if map_type is not None and kind != "object":
        detail = "must be object if x-kubernetes-map-type is specified"
        causes.append(required(f"{path}.type", detail) if not kind else invalid(f"{path}.type", kind, detail))
    if map_type is not None and map_type not in ("atomic", "granular"):
        causes.append(not_supported(f"{path}.x-kubernetes-map-type", map_type, ("atomic", "granular")))
    list_type = s.get("x-kubernetes-list-type")
    items = s.get("items")
    if list_type is not None and kind != "array":
        detail = "must be array if x-kubernetes-list-type is specified"
        causes.append(required(f"{path}.type", detail) if not kind else invalid(f"{path}.type", kind, detail))
    elif opts.require_atomic_set_type and list_type == "set" and isinstance(items, dict):
        detail = "must be atomic as item of a list with x-kubernetes-list-type=set"
        if get_str(items, "type") == "array" and items.get("x-kubernetes-list-type") not in (None, "atomic"):
            causes.append(invalid(f"{path}.items.x-kubernetes-list-type", items["x-kubernetes-list-type"], detail))
        elif get_str(items, "type") == "object" and items.get("x-kubernetes-map-type") != "atomic":
            # kube reports the items' list type here (usually unset), not the map type
            causes.append(invalid(f"{path}.items.x-kubernetes-map-type", items.get("x-kubernetes-list-type"), detail))
    if list_type is not None and list_type not in ("atomic", "set", "map"):
        causes.append(not_supported(f"{path}.x-kubernetes-list-type", list_type, ("atomic", "set", "map")))
    keys = s.get("x-kubernetes-list-map-keys") or []
    if keys:
        detail = "must be map if x-kubernetes-list-map-keys is non-empty"
        if list_type is None:
            causes.append(required(f"{path}.x-kubernetes-list-type", detail))
        elif list_type != "map":
            causes.append(invalid(f"{path}.x-kubernetes-list-type", list_type, detail))
    if list_type == "map":
        if not keys:
            causes.append(required(f"{path}.x-kubernetes-list-map-keys", "must not be empty if x-kubernetes-list-type "
                                                                         "is map"))
        if items is None:
            causes.append(required(f"{path}.items", "must have a schema if x-kubernetes-list-type is map"))
        elif not isinstance(items, dict):
            causes.append(invalid(f"{path}.items", items, "must only have a single schema if x-kubernetes-list-type "
                                                          "is map"))
        elif get_str(items, "type") != "object":
            causes.append(invalid(f"{path}.items.type", get_str(items, "type"), "must be object if parent array's "
                                                                           "x-kubernetes-list-type is map"))
        else:
            item_props = get(items, "properties") or {}
            seen: set[str] = set()
            for key in keys:
                if key in item_props:
                    if get_str(item_props[key], "type") in ("array", "object"):
                        causes.append(invalid(f"{path}.items.properties[{key}].type", "object",
                                              "must be a scalar type if parent array's x-kubernetes-list-type is "
                                              "map"))
                else:
                    causes.append(invalid(f"{path}.x-kubernetes-list-map-keys", keys,
                                          "entries must all be names of item properties"))
                if key in seen:
                    causes.append(invalid(f"{path}.x-kubernetes-list-map-keys", keys,
                                          "must not contain duplicate entries"))
                seen.add(key)
    if opts.require_map_list_keys_map_set:
        causes += map_list_keys_map_set(s, path)
    return causes


def map_list_keys_map_set(s: Obj, path: str) -> list[Cause]:
    """Set and map lists are merged by identity, so their items and keys must always be present."""
    items = get(s, "items")
    list_type = get(s, "x-kubernetes-list-type")
    if not isinstance(items, dict) or list_type not in ("set", "map"):
        return []
    causes = []
    if items.get("nullable") is True:
        causes.append(forbidden(f"{path}.items.nullable", f"cannot be nullable when x-kubernetes-list-type is "
                                                          f"{list_type}"))
    if list_type == "map":
        required_keys = set(get(items, "required") or [])
        item_props = get(items, "properties") or {}
        for key in get(s, "x-kubernetes-list-map-keys") or []:
            prop = item_props.get(key)
            if not isinstance(prop, dict):
                continue
            if key not in required_keys and prop.get("default") is None:
                causes.append(required(f"{path}.items.properties[{key}].default",
                                       "this property is in x-kubernetes-list-map-keys, so it must have a default or "
                                       "be a required property"))
            if prop.get("nullable") is True:
                causes.append(forbidden(f"{path}.items.properties[{key}].nullable",
                                        "this property is in x-kubernetes-list-map-keys, so it cannot be nullable"))
    return causes


_NEWLINES = re.compile(r"[\n\r]+")


def _validation_rules(s: Obj, path: str, errs: list[Cause], cel: list[Cause]) -> None:
    """kube's static checks on x-kubernetes-validations, then each rule must compile."""
    for i, rule in enumerate(get(s, "x-kubernetes-validations") or []):
        rpath = f"{path}.x-kubernetes-validations[{i}]"
        text, message = get_str(rule, "rule"), get_str(rule, "message")
        if not text.strip():
            errs.append(required(f"{rpath}.rule", "rule is not specified"))
        elif message and not message.strip():
            errs.append(invalid(f"{rpath}.message", message, "must be non-empty if specified"))
        elif _NEWLINES.search(message.strip()):
            errs.append(invalid(f"{rpath}.message", message, "must not contain line breaks"))
        elif _NEWLINES.search(text.strip()) and not message.strip():
            errs.append(required(f"{rpath}.message", "message must be specified if rule contains line breaks"))
        expression = get_str(rule, "messageExpression")
        if expression and not expression.strip():
            errs.append(required(f"{rpath}.messageExpression", "messageExpression must be non-empty if specified"))
        reason = get(rule, "reason")
        if reason is not None and reason not in VALIDATION_RULE_REASONS:
            errs.append(not_supported(f"{rpath}.reason", reason, VALIDATION_RULE_REASONS))
        field_path = get_str(rule, "fieldPath")
        if field_path and not field_path.strip():
            errs.append(invalid(f"{rpath}.fieldPath", field_path, "must be non-empty if specified"))
        if _NEWLINES.search(field_path):
            errs.append(invalid(f"{rpath}.fieldPath", field_path, "must not contain line breaks"))
        for part, detail in rule_errors(rule):
            cel.append(invalid(f"{rpath}.{part}", get_str(rule, part) if part != "optionalOldSelf" else True, detail))


def schema_uses_cel(schema: Any) -> bool:
    """Whether any node of a schema carries x-kubernetes-validations rules."""
    return schema_has(schema, lambda n: bool(get(n, "x-kubernetes-validations")))
