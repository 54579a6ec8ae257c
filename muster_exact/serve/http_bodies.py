"""The HTTP API's request bodies: the shape here, the values in the library (the backend).

Each field is taken as sent (``Any``: no coercion, no default filled in) and documented in the
OpenAPI schema with the type the library accepts; the backend validates it, so HTTP, MCP and the
library refuse the same input with the same message.
"""

from __future__ import annotations

from typing import Annotated, Any

from pydantic import BaseModel, ConfigDict, WithJsonSchema

from muster_exact.core.limits import (
    MAX_ID_CHARS,
    MAX_QUERY_CHARS,
    MAX_RECORD_CHARS,
    MAX_RECORDS_PER_CALL,
    MAX_UNITS,
)
from muster_exact.derive.declared import FORMATS

_TEXT = {"type": "string", "minLength": 1}
_NAME = {"type": ["string", "null"], "minLength": 1, "maxLength": MAX_ID_CHARS}
_RECORD = {
    "anyOf": [
        {**_TEXT, "maxLength": MAX_RECORD_CHARS},
        {
            "type": "object",
            "required": ["text"],
            "properties": {
                "text": {**_TEXT, "maxLength": MAX_RECORD_CHARS},
                "speaker": {"type": ["string", "number", "null"]},
                "role": {"type": ["string", "number", "null"]},
                "time": {"type": ["string", "number", "null"]},
                "id": {"type": ["string", "integer"], "minLength": 1, "maxLength": MAX_ID_CHARS},
                "metadata": {"description": "any JSON value; kept, not shown"},
            },
        },
    ]
}
_FIELDS = {
    "type": "object",
    "minProperties": 1,
    "description": "the fields to change (a JSON merge patch, RFC 7396): a field given replaces the "
    "stored one, metadata merges key by key, null removes a field (never the text)",
    "properties": {
        "text": {**_TEXT, "maxLength": MAX_RECORD_CHARS},
        "speaker": {"type": ["string", "number", "null"]},
        "time": {"type": ["string", "number", "null"]},
        "metadata": {"description": "any JSON value; an object merges into the stored one"},
    },
}
_LINES = {
    "type": "array",
    "maxItems": MAX_RECORDS_PER_CALL,
    "items": {
        "type": "object",
        "required": ["namespace", "record"],
        "properties": {
            "namespace": {"type": "string", "minLength": 1, "maxLength": MAX_ID_CHARS},
            "record": {"type": "object", "required": ["text", "id"]},
            "request_id": {"type": ["string", "null"]},
        },
    },
}
_RECORDS = {"type": "array", "items": _RECORD, "minItems": 1, "maxItems": MAX_RECORDS_PER_CALL}
Records = Annotated[Any, WithJsonSchema(_RECORDS)]  # a list: the backend says so, as MCP's does
Name = Annotated[Any, WithJsonSchema(_NAME)]
Query = Annotated[Any, WithJsonSchema({**_TEXT, "maxLength": MAX_QUERY_CHARS})]
Units = Annotated[Any, WithJsonSchema({"type": ["integer", "null"], "minimum": 1, "maximum": MAX_UNITS})]


class AddIn(BaseModel):
    model_config = ConfigDict(extra="forbid")
    records: Records
    request_id: Name = None
    namespace: Name = None


Ids = Annotated[
    Any,
    WithJsonSchema(
        {
            "type": ["array", "null"],
            "items": {"type": ["string", "integer"], "minLength": 1, "maxLength": MAX_ID_CHARS},
            "minItems": 1,
            "maxItems": MAX_RECORDS_PER_CALL,
        }
    ),
]


class DeleteIn(BaseModel):
    """Record ids, or the request id of an add, or both: ids with this delete's own request id
    (a retry of it is answered as done)."""

    model_config = ConfigDict(extra="forbid")
    ids: Ids = None
    request_id: Name = None
    namespace: Name = None


_WHERE = {
    "type": ["object", "null"],
    "description": "only records that match are candidates: speaker (a name or a list), time "
    '({"from": ISO 8601, "to": ISO 8601}), metadata (equality on each key)',
    "properties": {
        "speaker": {"anyOf": [{"type": "string"}, {"type": "array", "items": {"type": "string"}}]},
        "time": {"type": "object", "properties": {"from": {"type": "string"}, "to": {"type": "string"}}},
        "metadata": {"type": "object"},
    },
    "additionalProperties": False,
}


class QueryIn(BaseModel):
    # A missing query is no query (None): the library refuses it as MCP and Python callers see it.
    model_config = ConfigDict(extra="forbid", json_schema_extra={"required": ["query"]})
    query: Query = None
    units: Units = None
    namespace: Name = None
    where: Annotated[Any, WithJsonSchema(_WHERE)] = None


class UpdateIn(BaseModel):
    """The record that replaces the one the path names (its id stays)."""

    model_config = ConfigDict(extra="forbid")
    record: Annotated[Any, WithJsonSchema(_RECORD)]
    namespace: Name = None


class PatchIn(BaseModel):
    """The fields to change in the record the path names; the others are kept (RFC 7396)."""

    model_config = ConfigDict(extra="forbid")
    fields: Annotated[Any, WithJsonSchema(_FIELDS)]
    namespace: Name = None


class ImportIn(BaseModel):
    """Export lines (``GET /v1/export``, ``muster export``), each to its own namespace."""

    model_config = ConfigDict(extra="forbid")
    lines: Annotated[Any, WithJsonSchema(_LINES)]


class DeclaredIn(BaseModel):
    """A declared-record envelope (``format``, ``records``) and a query; nothing is stored."""

    model_config = ConfigDict(extra="forbid")
    format: Annotated[Any, WithJsonSchema({"type": "string", "enum": FORMATS.names()})]
    records: Annotated[Any, WithJsonSchema(_RECORDS)]  # the envelope reader checks it: one message
    query: Query
    units: Units = None
