"""Encode a Swagger 2.0 document as gnostic's ``openapi.v2.Document`` protobuf.

client-go asks ``/openapi/v2`` for
``application/com.github.proto-openapi.spec.v2@v1.0+protobuf`` and hands the
body to ``proto.Unmarshal`` with the message types of google/gnostic
(``openapiv2/OpenAPIv2.proto``, package ``openapi.v2``).  This module turns the
JSON form of the document (a plain dict) into that wire format with a small
hand-written protobuf writer, so no generated code is needed at runtime.

Mapping rules, following what gnostic's own compiler produces:

* JSON maps become repeated ``Named*`` messages (``name`` = 1, ``value`` = 2),
  in the order of the dict.
* Keys starting with ``x-`` become ``vendor_extension`` entries
  (``NamedAny``) wherever the message has that field.  Their values, like
  ``default``, ``example`` and ``enum`` values, travel as YAML text in
  ``Any.yaml``; JSON is valid YAML, so the text is JSON in flow style.
* proto3 scalars holding their zero value are left out, except inside a
  ``oneof`` (``additionalProperties: false`` must still be sent).
* A value of the wrong JSON type for its field (say a number where a string
  belongs) is dropped rather than guessed at, as are unknown keys.
"""

from __future__ import annotations

import json
import re
import struct
from collections.abc import Callable, Mapping
from typing import Any

__all__ = ["encode_swagger"]

_VARINT = 0
_FIXED64 = 1
_LENGTH_DELIMITED = 2


class _Writer:
    """Collects the fields of one protobuf message in wire format."""

    __slots__ = ("buf",)

    def __init__(self) -> None:
        self.buf = bytearray()

    def _varint(self, value: int) -> None:
        value &= 0xFFFFFFFFFFFFFFFF  # negative int64 values use ten bytes
        while value >= 0x80:
            self.buf.append((value & 0x7F) | 0x80)
            value >>= 7
        self.buf.append(value)

    def _tag(self, field: int, wire_type: int) -> None:
        self._varint((field << 3) | wire_type)

    def raw(self, field: int, payload: bytes | bytearray) -> None:
        """A length-delimited field (string, bytes or embedded message)."""
        self._tag(field, _LENGTH_DELIMITED)
        self._varint(len(payload))
        self.buf += payload

    def message(self, field: int, child: _Writer) -> None:
        """An embedded message; always written, so an empty one stays present."""
        self.raw(field, child.buf)

    def string(self, field: int, value: Any) -> None:
        if isinstance(value, str) and value:
            self.raw(field, _utf8(value))

    def strings(self, field: int, values: Any) -> None:
        if isinstance(values, str):
            values = [values]
        if isinstance(values, list):
            for value in values:
                if isinstance(value, str):
                    self.raw(field, _utf8(value))

    def boolean(self, field: int, value: Any, *, in_oneof: bool = False) -> None:
        if isinstance(value, bool) and (value or in_oneof):
            self._tag(field, _VARINT)
            self._varint(int(value))

    def int64(self, field: int, value: Any) -> None:
        if isinstance(value, float) and value.is_integer():
            value = int(value)
        if isinstance(value, int) and not isinstance(value, bool) and value:
            self._tag(field, _VARINT)
            self._varint(value)

    def double(self, field: int, value: Any) -> None:
        if isinstance(value, (int, float)) and not isinstance(value, bool) and value:
            self._tag(field, _FIXED64)
            self.buf += struct.pack("<d", float(value))


def _utf8(text: str) -> bytes:
    # Go's proto.Unmarshal rejects invalid UTF-8 in proto3 strings, and lone
    # surrogates cannot be encoded, so they become "?".
    return text.encode("utf-8", "replace")


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


# --- shared small messages -------------------------------------------------


def _any(value: Any) -> _Writer:
    """``openapi.v2.Any``: ``value`` (google.protobuf.Any) = 1 is never used,
    ``yaml`` = 2 carries the value."""
    out = _Writer()
    out.string(2, _yaml_text(value))
    return out


def _vendor_extensions(out: _Writer, field: int, data: Mapping[str, Any]) -> None:
    """Every ``x-`` key of ``data`` as a ``NamedAny`` in ``field``."""
    for key, value in data.items():
        if isinstance(key, str) and key.startswith("x-"):
            named = _Writer()
            named.string(1, key)
            named.message(2, _any(value))
            out.message(field, named)


def _named(out: _Writer, field: int, data: Any, encode: Callable[[Any], _Writer | None],
           *, skip_extensions: bool = False) -> None:
    """A JSON map as repeated ``Named*`` messages (name = 1, value = 2)."""
    if not isinstance(data, Mapping):
        return
    for key, value in data.items():
        if not isinstance(key, str) or (skip_extensions and key.startswith("x-")):
            continue
        body = encode(value)
        if body is None:
            continue
        named = _Writer()
        named.string(1, key)
        named.message(2, body)
        out.message(field, named)


def _anys(out: _Writer, field: int, values: Any) -> None:
    if isinstance(values, list):
        for value in values:
            out.message(field, _any(value))


def _external_docs(data: Any) -> _Writer | None:
    if not isinstance(data, Mapping):
        return None
    out = _Writer()
    out.string(1, data.get("description"))
    out.string(2, data.get("url"))
    _vendor_extensions(out, 3, data)
    return out


def _optional_message(out: _Writer, field: int, body: _Writer | None) -> None:
    if body is not None:
        out.message(field, body)


def _json_reference(data: Mapping[str, Any]) -> _Writer:
    out = _Writer()
    out.string(1, data.get("$ref"))
    out.string(2, data.get("description"))
    return out


# --- schemas ---------------------------------------------------------------


def _xml(data: Any) -> _Writer | None:
    if not isinstance(data, Mapping):
        return None
    out = _Writer()
    out.string(1, data.get("name"))
    out.string(2, data.get("namespace"))
    out.string(3, data.get("prefix"))
    out.boolean(4, data.get("attribute"))
    out.boolean(5, data.get("wrapped"))
    _vendor_extensions(out, 6, data)
    return out


def _additional_properties(value: Any) -> _Writer | None:
    """``AdditionalPropertiesItem``: oneof schema = 1 / boolean = 2."""
    out = _Writer()
    if isinstance(value, bool):
        out.boolean(2, value, in_oneof=True)
    elif isinstance(value, Mapping):
        out.message(1, _schema_message(value))
    else:
        return None
    return out


def _schema(data: Any) -> _Writer | None:
    """``openapi.v2.Schema``; None when data is not an object."""
    return _schema_message(data) if isinstance(data, Mapping) else None


def _schema_message(data: Mapping[str, Any]) -> _Writer:
    """``openapi.v2.Schema`` of an object."""
    out = _Writer()
    out.string(1, data.get("$ref"))
    out.string(2, data.get("format"))
    out.string(3, data.get("title"))
    out.string(4, data.get("description"))
    if "default" in data:
        out.message(5, _any(data["default"]))
    out.double(6, data.get("multipleOf"))
    out.double(7, data.get("maximum"))
    out.boolean(8, data.get("exclusiveMaximum"))
    out.double(9, data.get("minimum"))
    out.boolean(10, data.get("exclusiveMinimum"))
    out.int64(11, data.get("maxLength"))
    out.int64(12, data.get("minLength"))
    out.string(13, data.get("pattern"))
    out.int64(14, data.get("maxItems"))
    out.int64(15, data.get("minItems"))
    out.boolean(16, data.get("uniqueItems"))
    out.int64(17, data.get("maxProperties"))
    out.int64(18, data.get("minProperties"))
    out.strings(19, data.get("required") if isinstance(data.get("required"), list) else None)
    _anys(out, 20, data.get("enum"))
    if "additionalProperties" in data:
        _optional_message(out, 21, _additional_properties(data["additionalProperties"]))
    if "type" in data:
        type_item = _Writer()  # TypeItem { repeated string value = 1 }
        type_item.strings(1, data["type"])
        if type_item.buf:
            out.message(22, type_item)
    items = data.get("items")
    if isinstance(items, Mapping):
        items = [items]
    if isinstance(items, list):
        items_item = _Writer()  # ItemsItem { repeated Schema schema = 1 }
        for item in items:
            _optional_message(items_item, 1, _schema(item))
        out.message(23, items_item)
    if isinstance(data.get("allOf"), list):
        for part in data["allOf"]:
            _optional_message(out, 24, _schema(part))
    if isinstance(data.get("properties"), Mapping):
        properties = _Writer()  # Properties { repeated NamedSchema additional_properties = 1 }
        _named(properties, 1, data["properties"], _schema)
        out.message(25, properties)
    out.string(26, data.get("discriminator"))
    out.boolean(27, data.get("readOnly"))
    _optional_message(out, 28, _xml(data.get("xml")))
    _optional_message(out, 29, _external_docs(data.get("externalDocs")))
    if "example" in data:
        out.message(30, _any(data["example"]))
    _vendor_extensions(out, 31, data)
    return out


# --- parameters ------------------------------------------------------------


def _primitive_fields(out: _Writer, data: Mapping[str, Any], first: int) -> None:
    """The run of fields shared, in this order, by ``PrimitivesItems``,
    ``Header`` and the non-body parameter sub-schemas: ``type`` at ``first``
    through ``multiple_of`` at ``first + 16``."""
    out.string(first, data.get("type"))
    out.string(first + 1, data.get("format"))
    _optional_message(out, first + 2, _primitives_items(data.get("items")))
    out.string(first + 3, data.get("collectionFormat"))
    if "default" in data:
        out.message(first + 4, _any(data["default"]))
    out.double(first + 5, data.get("maximum"))
    out.boolean(first + 6, data.get("exclusiveMaximum"))
    out.double(first + 7, data.get("minimum"))
    out.boolean(first + 8, data.get("exclusiveMinimum"))
    out.int64(first + 9, data.get("maxLength"))
    out.int64(first + 10, data.get("minLength"))
    out.string(first + 11, data.get("pattern"))
    out.int64(first + 12, data.get("maxItems"))
    out.int64(first + 13, data.get("minItems"))
    out.boolean(first + 14, data.get("uniqueItems"))
    _anys(out, first + 15, data.get("enum"))
    out.double(first + 16, data.get("multipleOf"))


def _primitives_items(data: Any) -> _Writer | None:
    if not isinstance(data, Mapping):
        return None
    out = _Writer()
    _primitive_fields(out, data, 1)
    _vendor_extensions(out, 18, data)
    return out


def _non_body_sub_schema(data: Mapping[str, Any], *, allow_empty_value: bool) -> _Writer:
    """Query/FormData sub-schemas have ``allow_empty_value`` = 5 and start the
    primitive run at 6; Header/Path sub-schemas start it at 5."""
    out = _Writer()
    out.boolean(1, data.get("required"))
    out.string(2, data.get("in"))
    out.string(3, data.get("description"))
    out.string(4, data.get("name"))
    if allow_empty_value:
        out.boolean(5, data.get("allowEmptyValue"))
        _primitive_fields(out, data, 6)
        _vendor_extensions(out, 23, data)
    else:
        _primitive_fields(out, data, 5)
        _vendor_extensions(out, 22, data)
    return out


# NonBodyParameter oneof member per "in", and whether it has allow_empty_value.
_NON_BODY = {
    "header": (1, False),
    "formData": (2, True),
    "query": (3, True),
    "path": (4, False),
}


def _parameter(data: Any) -> _Writer | None:
    """``Parameter``: oneof body_parameter = 1 / non_body_parameter = 2."""
    if not isinstance(data, Mapping):
        return None
    where = data.get("in")
    out = _Writer()
    if where == "body":
        body = _Writer()
        body.string(1, data.get("description"))
        body.string(2, data.get("name"))
        body.string(3, where)
        body.boolean(4, data.get("required"))
        _optional_message(body, 5, _schema(data.get("schema")))
        _vendor_extensions(body, 6, data)
        out.message(1, body)
    elif where in _NON_BODY:
        member, allow_empty_value = _NON_BODY[where]
        non_body = _Writer()
        non_body.message(member, _non_body_sub_schema(data, allow_empty_value=allow_empty_value))
        out.message(2, non_body)
    else:
        return None
    return out


def _parameters_item(data: Any) -> _Writer | None:
    """``ParametersItem``: oneof parameter = 1 / json_reference = 2."""
    if not isinstance(data, Mapping):
        return None
    out = _Writer()
    if "$ref" in data:
        out.message(2, _json_reference(data))
        return out
    parameter = _parameter(data)
    if parameter is None:
        return None
    out.message(1, parameter)
    return out


def _parameters_items(out: _Writer, field: int, values: Any) -> None:
    if isinstance(values, list):
        for value in values:
            _optional_message(out, field, _parameters_item(value))


# --- responses -------------------------------------------------------------


def _header(data: Any) -> _Writer | None:
    if not isinstance(data, Mapping):
        return None
    out = _Writer()
    _primitive_fields(out, data, 1)
    out.string(18, data.get("description"))
    _vendor_extensions(out, 19, data)
    return out


def _response(data: Any) -> _Writer | None:
    if not isinstance(data, Mapping):
        return None
    out = _Writer()
    out.string(1, data.get("description"))
    schema = _schema(data.get("schema"))
    if schema is not None:
        schema_item = _Writer()  # SchemaItem: oneof schema = 1 / file_schema = 2
        schema_item.message(1, schema)
        out.message(2, schema_item)
    if isinstance(data.get("headers"), Mapping):
        headers = _Writer()  # Headers { repeated NamedHeader additional_properties = 1 }
        _named(headers, 1, data["headers"], _header)
        out.message(3, headers)
    if isinstance(data.get("examples"), Mapping):
        examples = _Writer()  # Examples { repeated NamedAny additional_properties = 1 }
        _named(examples, 1, data["examples"], _any)
        out.message(4, examples)
    _vendor_extensions(out, 5, data)
    return out


def _response_value(data: Any) -> _Writer | None:
    """``ResponseValue``: oneof response = 1 / json_reference = 2."""
    if not isinstance(data, Mapping):
        return None
    out = _Writer()
    if "$ref" in data:
        out.message(2, _json_reference(data))
    else:
        response = _response(data)
        assert response is not None
        out.message(1, response)
    return out


def _responses(data: Any) -> _Writer | None:
    if not isinstance(data, Mapping):
        return None
    out = _Writer()
    _named(out, 1, data, _response_value, skip_extensions=True)
    _vendor_extensions(out, 2, data)
    return out


# --- operations and paths --------------------------------------------------


def _string_array(scopes: Any) -> _Writer:
    out = _Writer()  # StringArray { repeated string value = 1 }
    out.strings(1, scopes if isinstance(scopes, list) else None)
    return out


def _security_requirements(out: _Writer, field: int, values: Any) -> None:
    """``repeated SecurityRequirement``, each a map of scheme name -> scopes
    (``NamedStringArray``)."""
    if isinstance(values, list):
        for requirement in values:
            _optional_message(out, field, _map_message(requirement, _string_array))


def _operation(data: Any) -> _Writer | None:
    if not isinstance(data, Mapping):
        return None
    out = _Writer()
    out.strings(1, data.get("tags"))
    out.string(2, data.get("summary"))
    out.string(3, data.get("description"))
    _optional_message(out, 4, _external_docs(data.get("externalDocs")))
    out.string(5, data.get("operationId"))
    out.strings(6, data.get("produces"))
    out.strings(7, data.get("consumes"))
    _parameters_items(out, 8, data.get("parameters"))
    _optional_message(out, 9, _responses(data.get("responses")))
    out.strings(10, data.get("schemes"))
    out.boolean(11, data.get("deprecated"))
    _security_requirements(out, 12, data.get("security"))
    _vendor_extensions(out, 13, data)
    return out


_PATH_ITEM_OPERATIONS = {"get": 2, "put": 3, "post": 4, "delete": 5, "options": 6, "head": 7, "patch": 8}


def _path_item(data: Any) -> _Writer | None:
    if not isinstance(data, Mapping):
        return None
    out = _Writer()
    out.string(1, data.get("$ref"))
    for method, field in _PATH_ITEM_OPERATIONS.items():
        _optional_message(out, field, _operation(data.get(method)))
    _parameters_items(out, 9, data.get("parameters"))
    _vendor_extensions(out, 10, data)
    return out


def _paths(data: Any) -> _Writer | None:
    if not isinstance(data, Mapping):
        return None
    out = _Writer()
    _vendor_extensions(out, 1, data)
    _named(out, 2, data, _path_item, skip_extensions=True)
    return out


# --- document-level pieces -------------------------------------------------


def _info(data: Any) -> _Writer | None:
    if not isinstance(data, Mapping):
        return None
    out = _Writer()
    out.string(1, data.get("title"))
    out.string(2, data.get("version"))
    out.string(3, data.get("description"))
    out.string(4, data.get("termsOfService"))
    contact = data.get("contact")
    if isinstance(contact, Mapping):
        body = _Writer()
        body.string(1, contact.get("name"))
        body.string(2, contact.get("url"))
        body.string(3, contact.get("email"))
        _vendor_extensions(body, 4, contact)
        out.message(5, body)
    license_ = data.get("license")
    if isinstance(license_, Mapping):
        body = _Writer()
        body.string(1, license_.get("name"))
        body.string(2, license_.get("url"))
        _vendor_extensions(body, 3, license_)
        out.message(6, body)
    _vendor_extensions(out, 7, data)
    return out


def _oauth2_scopes(data: Any) -> _Writer:
    out = _Writer()  # Oauth2Scopes { repeated NamedString additional_properties = 1 }
    if isinstance(data, Mapping):
        for name, description in data.items():
            if isinstance(name, str):
                named = _Writer()
                named.string(1, name)
                named.string(2, description)
                out.message(1, named)
    return out


# (type, flow) -> (SecurityDefinitionsItem oneof member, the member's fields in
# field-number order); vendor_extension follows the last of them.
_SECURITY_LAYOUTS: dict[tuple[Any, Any], tuple[int, tuple[str, ...]]] = {
    ("basic", None): (1, ("type", "description")),
    ("apiKey", None): (2, ("type", "name", "in", "description")),
    ("oauth2", "implicit"): (3, ("type", "flow", "scopes", "authorizationUrl", "description")),
    ("oauth2", "password"): (4, ("type", "flow", "scopes", "tokenUrl", "description")),
    ("oauth2", "application"): (5, ("type", "flow", "scopes", "tokenUrl", "description")),
    ("oauth2", "accessCode"): (6, ("type", "flow", "scopes", "authorizationUrl", "tokenUrl", "description")),
}


def _security_definitions_item(data: Any) -> _Writer | None:
    """``SecurityDefinitionsItem``: the oneof member follows ``type`` (and
    ``flow`` for oauth2); each member message lists its own fields in order."""
    if not isinstance(data, Mapping):
        return None
    kind, flow = data.get("type"), data.get("flow")
    layout = _SECURITY_LAYOUTS.get((kind, flow if kind == "oauth2" else None))
    if layout is None:
        return None
    member, fields = layout
    body = _Writer()
    for number, key in enumerate(fields, start=1):
        if key == "scopes":
            body.message(number, _oauth2_scopes(data.get(key)))
        else:
            body.string(number, data.get(key))
    _vendor_extensions(body, len(fields) + 1, data)
    out = _Writer()
    out.message(member, body)
    return out


def _tag(data: Any) -> _Writer | None:
    if not isinstance(data, Mapping):
        return None
    out = _Writer()
    out.string(1, data.get("name"))
    out.string(2, data.get("description"))
    _optional_message(out, 3, _external_docs(data.get("externalDocs")))
    _vendor_extensions(out, 4, data)
    return out


def _map_message(data: Any, encode: Callable[[Any], _Writer | None]) -> _Writer | None:
    """A message whose only field is ``repeated Named* additional_properties = 1``."""
    if not isinstance(data, Mapping):
        return None
    out = _Writer()
    _named(out, 1, data, encode)
    return out


def encode_swagger(doc: dict) -> bytes:
    """Encode the Swagger 2.0 document ``doc`` as an ``openapi.v2.Document``
    protobuf message (the body served for
    ``application/com.github.proto-openapi.spec.v2@v1.0+protobuf``)."""
    out = _Writer()
    out.string(1, doc.get("swagger"))
    _optional_message(out, 2, _info(doc.get("info")))
    out.string(3, doc.get("host"))
    out.string(4, doc.get("basePath"))
    out.strings(5, doc.get("schemes"))
    out.strings(6, doc.get("consumes"))
    out.strings(7, doc.get("produces"))
    _optional_message(out, 8, _paths(doc.get("paths")))
    _optional_message(out, 9, _map_message(doc.get("definitions"), _schema))
    _optional_message(out, 10, _map_message(doc.get("parameters"), _parameter))
    _optional_message(out, 11, _map_message(doc.get("responses"), _response))
    _security_requirements(out, 12, doc.get("security"))
    _optional_message(out, 13, _map_message(doc.get("securityDefinitions"), _security_definitions_item))
    if isinstance(doc.get("tags"), list):
        for tag in doc["tags"]:
            _optional_message(out, 14, _tag(tag))
    _optional_message(out, 15, _external_docs(doc.get("externalDocs")))
    _vendor_extensions(out, 16, doc)
    return bytes(out.buf)
