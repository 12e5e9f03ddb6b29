"""Whole-request error responses, built for any (api_key, version) from kio's schema.

Owns: `error_response(api_key, api_version, error_code)`, the response a broker sends when it rejects a request as
a whole (unsupported version, malformed body, a handler's `KafkaProtocolError`, an unexpected handler failure).
Every top-level `error_code` field carries the error; every other field takes its schema default, or the zero of
its type (empty arrays, empty strings, 0, null for nullable fields, recursively for nested structs).
Must not import: `kcoord.model`, the dispatcher or the connection layer.

Compared with Kafka's per-API `getErrorResponse`, partition-level arrays are left empty rather than echoed with
the error per partition; APIs that report errors only per partition (Produce, Fetch, OffsetCommit,
TxnOffsetCommit, ...) should be answered by their handler, which knows the partitions.
"""

from __future__ import annotations

import dataclasses
import datetime
import functools
import types
import typing
from typing import Final

from kio.index import load_response_schema
from kio.schema.errors import ErrorCode
from kio.static.constants import uuid_zero
from kio.static.protocol import ResponsePayload

__all__ = ("error_response", "zero_entity")

_T = typing.TypeVar("_T")

_EPOCH: Final = datetime.datetime.fromtimestamp(0, tz=datetime.UTC)
_ZERO_BY_KAFKA_TYPE: Final[typing.Mapping[str, object]] = types.MappingProxyType(
    {
        "bool": False,
        "bytes": b"",
        "records": b"",
        "string": "",
        "uuid": uuid_zero,
        "float64": 0.0,
        "timedelta_i32": datetime.timedelta(0),
        "timedelta_i64": datetime.timedelta(0),
        "datetime_i64": _EPOCH,
    }
)


def _is_nullable(field_type: object) -> bool:
    return isinstance(field_type, types.UnionType) and type(None) in typing.get_args(field_type)


def _zero_value(field: dataclasses.Field[object], error_code: ErrorCode) -> object:
    field_type = field.type
    kafka_type = field.metadata.get("kafka_type")
    if kafka_type == "error_code":
        return error_code
    if typing.get_origin(field_type) is tuple:
        return ()
    if _is_nullable(field_type):
        return None
    if kafka_type is None:
        assert isinstance(field_type, type) and dataclasses.is_dataclass(field_type), field
        return _zero_entity(field_type, ErrorCode.none)
    if kafka_type in _ZERO_BY_KAFKA_TYPE:
        return _ZERO_BY_KAFKA_TYPE[kafka_type]
    assert kafka_type.startswith(("int", "uint")), f"no zero value for kafka_type {kafka_type!r} of {field.name}"
    return 0


def _zero_entity(entity_type: type[_T], error_code: ErrorCode) -> _T:
    assert dataclasses.is_dataclass(entity_type)
    values: dict[str, object] = {}
    for field in dataclasses.fields(entity_type):
        has_default = field.default is not dataclasses.MISSING or field.default_factory is not dataclasses.MISSING
        if has_default and field.metadata.get("kafka_type") != "error_code":
            continue
        values[field.name] = _zero_value(field, error_code)
    return entity_type(**values)


def error_response(api_key: int, api_version: int, error_code: ErrorCode) -> ResponsePayload:
    """The response of `api_key` at `api_version` rejecting the whole request with `error_code`.

    Raises kio's `UnknownAPIKey`/`UnknownEntity` if there is no such response schema (a caller bug: only call it
    for a request that decoded, or whose version has a schema).
    """
    return _zero_entity(load_response_schema(api_key, api_version), error_code)


@functools.cache
def _zeros(entity_type: type[object]) -> tuple[frozenset[str], dict[str, object]]:
    """The field names of `entity_type`, and the zero of each field `zero_entity` sets when not given (the fields
    without a default, and error codes); every zero is immutable (a number, a string, an empty tuple, a frozen
    entity), so one dict serves every call."""
    assert dataclasses.is_dataclass(entity_type)
    base = _zero_entity(entity_type, ErrorCode.none)
    names = frozenset(f.name for f in dataclasses.fields(entity_type))
    set_by_zero = {f.name for f in dataclasses.fields(entity_type)
                   if (f.default is dataclasses.MISSING and f.default_factory is dataclasses.MISSING)
                   or f.metadata.get("kafka_type") == "error_code"}
    return names, {name: getattr(base, name) for name in sorted(set_by_zero)}


def zero_entity(entity_type: type[_T], **values: object) -> _T:
    """An instance of a kio entity with `values` set and every other field at its default or zero.

    Handy when one handler builds responses for many versions: set what matters, let the rest default.
    """
    names, zeros = _zeros(entity_type)  # type: ignore[arg-type]
    if not names.issuperset(values):
        version = getattr(entity_type, "__version__", "?")
        raise TypeError(f"{entity_type.__qualname__} v{version} has no field(s) {sorted(set(values) - names)}")
    return entity_type(**{**zeros, **values})
