"""Encode a Swagger 2.0 document as gnostic's ``openapi.v2.Document`` protobuf.

client-go asks ``/openapi/v2`` for
``application/com.github.proto-openapi.spec.v2@v1.0+protobuf`` and hands the
body to ``proto.Unmarshal`` with the message types of google/gnostic (package
``openapi.v2``). The messages are declared in ``openapi_v2.proto`` beside this
module and generated into ``openapi_v2_pb2`` (committed; ``make proto``); this
module fills them from the JSON form of the document (a plain dict).

Mapping rules, following what gnostic's own compiler produces:

* JSON maps become repeated ``Named*`` messages (``name``, ``value``), in the
  order of the dict.
* Keys starting with ``x-`` become ``vendor_extension`` entries (``NamedAny``)
  wherever the message has that field. Their values, like ``default``,
  ``example`` and ``enum`` values, travel as YAML text in ``Any.yaml``; JSON is
  valid YAML, so the text is JSON in flow style.
* proto3 scalars holding their zero value are left out (protobuf does that),
  except inside a ``oneof`` (``additionalProperties: false`` must still be
  sent). An object that is present stays present even when empty.
* A value of the wrong JSON type for its field (say a number where a string
  belongs) is dropped rather than guessed at, as are unknown keys.
"""

from __future__ import annotations

import json
import re
from collections.abc import Callable, Mapping
from typing import Any

from kcp_apiserver.endpoints import openapi_v2_pb2 as pb

__all__ = ["encode_swagger"]

_INT64 = range(-(1 << 63), 1 << 63)


# --- values of the wrong JSON type are dropped --------------------------------


def _text(value: Any) -> str:
    """A string field's value: "" (left out) unless `value` is a string. Go's proto.Unmarshal rejects
    invalid UTF-8, and lone surrogates cannot be encoded, so they become "?"."""
    if not isinstance(value, str):
        return ""
    if value.isascii():
        return value
    try:
        value.encode()
    except UnicodeEncodeError:
        return value.encode("utf-8", "replace").decode()
    return value


def _texts(values: Any) -> list[str]:
    if isinstance(values, str):
        values = [values]
    return [_text(v) for v in values if isinstance(v, str)] if isinstance(values, list) else []


def _flag(value: Any) -> bool:
    return value if isinstance(value, bool) else False


def _int64(value: Any) -> int:
    if isinstance(value, float) and value.is_integer():
        value = int(value)
    return value if isinstance(value, int) and not isinstance(value, bool) and value in _INT64 else 0


def _double(value: Any) -> float:
    return float(value) if isinstance(value, (int, float)) and not isinstance(value, bool) else 0.0


# Characters allowed raw in JSON strings but not raw in YAML (non-printable
# ones and extra line breaks), plus lone surrogates that YAML cannot escape.
_YAML_UNSAFE = re.compile("[\x7f-\x9f\u2028\u2029\ufeff\ufffe\uffff\ud800-\udfff]")


def _yaml_escape(match: re.Match[str]) -> str:
    char = match.group()
    if "\ud800" <= char <= "\udfff":
        return "\\ufffd"
    return f"\\u{ord(char):04x}"


def _yaml_text(value: Any) -> str:
    """A JSON value as YAML text: flow-style JSON that every YAML parser reads."""
    text = json.dumps(value, ensure_ascii=False, separators=(", ", ": "))
    return _YAML_UNSAFE.sub(_yaml_escape, text)


# --- shared small messages ------------------------------------------------------


def _vendor_extensions(out: Any, data: Mapping[str, Any]) -> None:
    """Every ``x-`` key of ``data`` as a ``NamedAny`` in ``out.vendor_extension``."""
    for key, value in data.items():
        if isinstance(key, str) and key.startswith("x-"):
            out.vendor_extension.add(name=key).value.yaml = _yaml_text(value)


def _named(entries: Any, data: Any, fill: Callable[[Any, Any], bool], *, skip_extensions: bool = False) -> None:
    """A JSON map as repeated ``Named*`` messages; `fill(message, value)` says False for a value it
    cannot carry, and that entry is left out."""
    if not isinstance(data, Mapping):
        return
    for key, value in data.items():
        if not isinstance(key, str) or (skip_extensions and key.startswith("x-")):
            continue
        entry = entries.add(name=_text(key))
        entry.value.SetInParent()
        if not fill(entry.value, value):
            del entries[-1]


def _anys(out: Any, values: Any) -> None:
    if isinstance(values, list):
        for value in values:
            out.add(yaml=_yaml_text(value))


def _external_docs(out: pb.ExternalDocs, data: Any) -> bool:
    if not isinstance(data, Mapping):
        return False
    out.SetInParent()
    out.description = _text(data.get("description"))
    out.url = _text(data.get("url"))
    _vendor_extensions(out, data)
    return True


def _json_reference(out: pb.JsonReference, data: Mapping[str, Any]) -> None:
    out.SetInParent()
    out._ref = _text(data.get("$ref"))
    out.description = _text(data.get("description"))


# --- schemas ----------------------------------------------------------------------


def _xml(out: pb.Xml, data: Any) -> None:
    if not isinstance(data, Mapping):
        return
    out.SetInParent()
    out.name = _text(data.get("name"))
    out.namespace = _text(data.get("namespace"))
    out.prefix = _text(data.get("prefix"))
    out.attribute = _flag(data.get("attribute"))
    out.wrapped = _flag(data.get("wrapped"))
    _vendor_extensions(out, data)



def _bounds(out: Any, get: Callable[[str], Any]) -> None:
    """The value bounds a Schema and a PrimitivesItems share (same field names in both messages)."""
    out.maximum = _double(get("maximum"))
    out.exclusive_maximum = _flag(get("exclusiveMaximum"))
    out.minimum = _double(get("minimum"))
    out.exclusive_minimum = _flag(get("exclusiveMinimum"))
    out.max_length = _int64(get("maxLength"))
    out.min_length = _int64(get("minLength"))
    out.pattern = _text(get("pattern"))
    out.max_items = _int64(get("maxItems"))
    out.min_items = _int64(get("minItems"))
    out.unique_items = _flag(get("uniqueItems"))

def _schema(out: pb.Schema, data: Any) -> bool:
    """``openapi.v2.Schema``; False when data is not an object."""
    if not isinstance(data, Mapping):
        return False
    out.SetInParent()
    get = data.get
    out._ref = _text(get("$ref"))
    out.format = _text(get("format"))
    out.title = _text(get("title"))
    out.description = _text(get("description"))
    if "default" in data:
        out.default.yaml = _yaml_text(data["default"])
    out.multiple_of = _double(get("multipleOf"))
    _bounds(out, get)
    out.max_properties = _int64(get("maxProperties"))
    out.min_properties = _int64(get("minProperties"))
    if isinstance(get("required"), list):
        out.required.extend(_texts(data["required"]))
    _anys(out.enum, get("enum"))
    additional = get("additionalProperties")
    if isinstance(additional, bool):
        out.additional_properties.boolean = additional
    elif isinstance(additional, Mapping):
        _schema(out.additional_properties.schema, additional)
    types = _texts(get("type"))
    if types:
        out.type.value.extend(types)
    items = get("items")
    if isinstance(items, Mapping):
        items = [items]
    if isinstance(items, list):
        out.items.SetInParent()
        for item in items:
            if isinstance(item, Mapping):
                _schema(out.items.schema.add(), item)
    if isinstance(get("allOf"), list):
        for part in data["allOf"]:
            if isinstance(part, Mapping):
                _schema(out.all_of.add(), part)
    if isinstance(get("properties"), Mapping):
        out.properties.SetInParent()
        _named(out.properties.additional_properties, data["properties"], _schema)
    out.discriminator = _text(get("discriminator"))
    out.read_only = _flag(get("readOnly"))
    _xml(out.xml, get("xml"))
    _external_docs(out.external_docs, get("externalDocs"))
    if "example" in data:
        out.example.yaml = _yaml_text(data["example"])
    _vendor_extensions(out, data)
    return True


# --- parameters -------------------------------------------------------------------


_Primitives = pb.PrimitivesItems | pb.Header | pb.HeaderParameterSubSchema | pb.PathParameterSubSchema | \
    pb.QueryParameterSubSchema | pb.FormDataParameterSubSchema


def _primitive_fields(out: _Primitives, data: Mapping[str, Any]) -> None:
    """The run of fields (`type` through `multiple_of`) that ``PrimitivesItems``, ``Header`` and the
    non-body parameter sub-schemas share, under the same names."""
    get = data.get
    out.type = _text(get("type"))
    out.format = _text(get("format"))
    _primitives_items(out.items, get("items"))
    out.collection_format = _text(get("collectionFormat"))
    if "default" in data:
        out.default.yaml = _yaml_text(data["default"])
    _bounds(out, get)
    _anys(out.enum, get("enum"))
    out.multiple_of = _double(get("multipleOf"))
    _vendor_extensions(out, data)


def _primitives_items(out: pb.PrimitivesItems, data: Any) -> None:
    if isinstance(data, Mapping):
        out.SetInParent()
        _primitive_fields(out, data)


def _non_body_sub_schema(out: pb.NonBodyParameter, where: str, data: Mapping[str, Any]) -> None:
    """The oneof member for the parameter's location; query and formData also carry allowEmptyValue."""
    sub: pb.HeaderParameterSubSchema | pb.PathParameterSubSchema | pb.QueryParameterSubSchema | \
        pb.FormDataParameterSubSchema
    if where == "header":
        sub = out.header_parameter_sub_schema
    elif where == "path":
        sub = out.path_parameter_sub_schema
    else:
        sub = out.query_parameter_sub_schema if where == "query" else out.form_data_parameter_sub_schema
        sub.allow_empty_value = _flag(data.get("allowEmptyValue"))
    sub.SetInParent()
    sub.required = _flag(data.get("required"))
    setattr(sub, "in", where)
    sub.description = _text(data.get("description"))
    sub.name = _text(data.get("name"))
    _primitive_fields(sub, data)


_NON_BODY = frozenset({"header", "formData", "query", "path"})


def _parameter(out: pb.Parameter, data: Any) -> bool:
    """``Parameter``: oneof body_parameter / non_body_parameter, by ``in``."""
    if not isinstance(data, Mapping):
        return False
    where = data.get("in")
    if where == "body":
        body = out.body_parameter
        body.SetInParent()
        body.description = _text(data.get("description"))
        body.name = _text(data.get("name"))
        setattr(body, "in", where)
        body.required = _flag(data.get("required"))
        _schema(body.schema, data.get("schema"))
        _vendor_extensions(body, data)
        return True
    if where in _NON_BODY:
        _non_body_sub_schema(out.non_body_parameter, where, data)
        return True
    return False


def _parameters_items(out: Any, values: Any) -> None:
    """``repeated ParametersItem``: oneof parameter / json_reference (a ``$ref``)."""
    if not isinstance(values, list):
        return
    for value in values:
        if not isinstance(value, Mapping):
            continue
        item = out.add()
        if "$ref" in value:
            _json_reference(item.json_reference, value)
        elif not _parameter(item.parameter, value):
            del out[-1]


# --- responses --------------------------------------------------------------------


def _header(out: pb.Header, data: Any) -> bool:
    if not isinstance(data, Mapping):
        return False
    _primitive_fields(out, data)
    out.description = _text(data.get("description"))
    return True


def _example(out: pb.Any, value: Any) -> bool:
    out.yaml = _yaml_text(value)
    return True


def _response(out: pb.Response, data: Any) -> bool:
    if not isinstance(data, Mapping):
        return False
    out.SetInParent()
    out.description = _text(data.get("description"))
    _schema(out.schema.schema, data.get("schema"))
    if isinstance(data.get("headers"), Mapping):
        out.headers.SetInParent()
        _named(out.headers.additional_properties, data["headers"], _header)
    if isinstance(data.get("examples"), Mapping):
        out.examples.SetInParent()
        _named(out.examples.additional_properties, data["examples"], _example)
    _vendor_extensions(out, data)
    return True


def _response_value(out: pb.ResponseValue, data: Any) -> bool:
    """``ResponseValue``: oneof response / json_reference (a ``$ref``)."""
    if not isinstance(data, Mapping):
        return False
    if "$ref" in data:
        _json_reference(out.json_reference, data)
        return True
    return _response(out.response, data)


def _responses(out: pb.Responses, data: Any) -> None:
    if isinstance(data, Mapping):
        out.SetInParent()
        _named(out.response_code, data, _response_value, skip_extensions=True)
        _vendor_extensions(out, data)


# --- operations and paths ---------------------------------------------------------


def _string_array(out: pb.StringArray, scopes: Any) -> bool:
    if isinstance(scopes, list):
        out.value.extend(_texts(scopes))
    return True


def _security_requirements(out: Any, values: Any) -> None:
    """``repeated SecurityRequirement``, each a map of scheme name -> scopes."""
    if isinstance(values, list):
        for requirement in values:
            if isinstance(requirement, Mapping):
                _named(out.add().additional_properties, requirement, _string_array)


def _operation(out: pb.Operation, data: Any) -> None:
    if not isinstance(data, Mapping):
        return
    out.SetInParent()
    out.tags.extend(_texts(data.get("tags")))
    out.summary = _text(data.get("summary"))
    out.description = _text(data.get("description"))
    _external_docs(out.external_docs, data.get("externalDocs"))
    out.operation_id = _text(data.get("operationId"))
    out.produces.extend(_texts(data.get("produces")))
    out.consumes.extend(_texts(data.get("consumes")))
    _parameters_items(out.parameters, data.get("parameters"))
    _responses(out.responses, data.get("responses"))
    out.schemes.extend(_texts(data.get("schemes")))
    out.deprecated = _flag(data.get("deprecated"))
    _security_requirements(out.security, data.get("security"))
    _vendor_extensions(out, data)


_PATH_ITEM_OPERATIONS = ("get", "put", "post", "delete", "options", "head", "patch")


def _path_item(out: pb.PathItem, data: Any) -> bool:
    if not isinstance(data, Mapping):
        return False
    out._ref = _text(data.get("$ref"))
    for method in _PATH_ITEM_OPERATIONS:
        _operation(getattr(out, method), data.get(method))
    _parameters_items(out.parameters, data.get("parameters"))
    _vendor_extensions(out, data)
    return True


# --- document-level pieces --------------------------------------------------------


def _info(out: pb.Info, data: Any) -> None:
    if not isinstance(data, Mapping):
        return
    out.SetInParent()
    out.title = _text(data.get("title"))
    out.version = _text(data.get("version"))
    out.description = _text(data.get("description"))
    out.terms_of_service = _text(data.get("termsOfService"))
    contact = data.get("contact")
    if isinstance(contact, Mapping):
        out.contact.SetInParent()
        out.contact.name = _text(contact.get("name"))
        out.contact.url = _text(contact.get("url"))
        out.contact.email = _text(contact.get("email"))
        _vendor_extensions(out.contact, contact)
    license_ = data.get("license")
    if isinstance(license_, Mapping):
        out.license.SetInParent()
        out.license.name = _text(license_.get("name"))
        out.license.url = _text(license_.get("url"))
        _vendor_extensions(out.license, license_)
    _vendor_extensions(out, data)


# (type, flow) -> the SecurityDefinitionsItem oneof member that holds it
_SECURITY_MEMBERS: dict[tuple[Any, Any], str] = {
    ("basic", None): "basic_authentication_security",
    ("apiKey", None): "api_key_security",
    ("oauth2", "implicit"): "oauth2_implicit_security",
    ("oauth2", "password"): "oauth2_password_security",
    ("oauth2", "application"): "oauth2_application_security",
    ("oauth2", "accessCode"): "oauth2_access_code_security",
}
# JSON key -> field, for the fields the members may have
_SECURITY_FIELDS = {"type": "type", "flow": "flow", "name": "name", "in": "in", "authorizationUrl": "authorization_url",
                    "tokenUrl": "token_url", "description": "description"}


def _security_definitions_item(out: pb.SecurityDefinitionsItem, data: Any) -> bool:
    """The oneof member follows ``type`` (and ``flow`` for oauth2)."""
    if not isinstance(data, Mapping):
        return False
    kind, flow = data.get("type"), data.get("flow")
    member_name = _SECURITY_MEMBERS.get((kind, flow if kind == "oauth2" else None))
    if member_name is None:
        return False
    member = getattr(out, member_name)
    member.SetInParent()
    fields = member.DESCRIPTOR.fields_by_name
    for key, field in _SECURITY_FIELDS.items():
        if field in fields:
            setattr(member, field, _text(data.get(key)))
    if "scopes" in fields:
        member.scopes.SetInParent()
        scopes = data.get("scopes")
        if isinstance(scopes, Mapping):
            for name, description in scopes.items():
                if isinstance(name, str):
                    member.scopes.additional_properties.add(name=_text(name), value=_text(description))
    _vendor_extensions(member, data)
    return True


def _tag(out: pb.Tag, data: Mapping[str, Any]) -> None:
    out.name = _text(data.get("name"))
    out.description = _text(data.get("description"))
    _external_docs(out.external_docs, data.get("externalDocs"))
    _vendor_extensions(out, data)


def _map(out: Any, data: Any, fill: Callable[[Any, Any], bool]) -> None:
    """A message whose only field is ``repeated Named* additional_properties``, present when data is a map."""
    if isinstance(data, Mapping):
        out.SetInParent()
        _named(out.additional_properties, data, fill)


def encode_swagger(doc: dict[str, Any]) -> bytes:
    """Encode the Swagger 2.0 document ``doc`` as an ``openapi.v2.Document``
    protobuf message (the body served for
    ``application/com.github.proto-openapi.spec.v2@v1.0+protobuf``)."""
    out = pb.Document()
    out.swagger = _text(doc.get("swagger"))
    _info(out.info, doc.get("info"))
    out.host = _text(doc.get("host"))
    out.base_path = _text(doc.get("basePath"))
    out.schemes.extend(_texts(doc.get("schemes")))
    out.consumes.extend(_texts(doc.get("consumes")))
    out.produces.extend(_texts(doc.get("produces")))
    paths = doc.get("paths")
    if isinstance(paths, Mapping):
        out.paths.SetInParent()
        _vendor_extensions(out.paths, paths)
        _named(out.paths.path, paths, _path_item, skip_extensions=True)
    _map(out.definitions, doc.get("definitions"), _schema)
    _map(out.parameters, doc.get("parameters"), _parameter)
    _map(out.responses, doc.get("responses"), _response)
    _security_requirements(out.security, doc.get("security"))
    _map(out.security_definitions, doc.get("securityDefinitions"), _security_definitions_item)
    if isinstance(doc.get("tags"), list):
        for tag in doc["tags"]:
            if isinstance(tag, Mapping):
                _tag(out.tags.add(), tag)
    _external_docs(out.external_docs, doc.get("externalDocs"))
    _vendor_extensions(out, doc)
    return out.SerializeToString()
