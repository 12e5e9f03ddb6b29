"""Building kio response entities for whatever version a request came in, and converting kio's field types.

Owns: `build` (an entity of one schema version from keyword values, dropping fields that version does not have, every
other field at its default or zero), `item_type` (the element type of an array field or the type of a struct field,
so one handler serves many versions), the error-name ↔ `ErrorCode` mapping, and the ms ↔ timedelta/datetime
conversions of kio's `timedelta_i32`/`datetime_i64` fields.
Must not import: `kcoord.model`, any coordinator.

Kafka answers fields a version lacks by leaving them out; `build` does the same, so handlers pass the union of the
fields of every version they serve.
"""

from __future__ import annotations

import dataclasses
import datetime
import functools
import typing
from collections.abc import Callable
from typing import Any, Final, ParamSpec, TypeVar

from kio.index import load_response_schema
from kio.schema.errors import ErrorCode
from kio.static.protocol import ResponsePayload

from .responses import zero_entity

__all__ = ("AUTHORIZED_OPERATIONS_OMITTED", "build", "class_cache", "code", "datetime_of_ms", "field_names",
           "item_type", "ms_of", "response_schema", "timedelta_of_ms")

_T = TypeVar("_T")
_P = ParamSpec("_P")
_EPOCH: Final = datetime.datetime.fromtimestamp(0, tz=datetime.UTC)
#: Kafka's `authorized_operations` value when the client did not ask for them (Integer.MIN_VALUE)
AUTHORIZED_OPERATIONS_OMITTED: Final = -2_147_483_648


def class_cache(function: Callable[_P, _T]) -> Callable[_P, _T]:
    """`functools.cache` that keeps `function`'s signature.

    typeshed types the cached wrapper's arguments as `Hashable`, and mypy does not count a class (`type[X]`) as
    `Hashable` (it checks the class's unbound `__hash__` against the protocol), so every call with a schema class
    would be an error. Classes are hashable at run time, which is all the cache needs.
    """
    return typing.cast(Callable[_P, _T], functools.cache(function))


@class_cache
def field_names(entity_type: type[Any]) -> frozenset[str]:
    return frozenset(f.name for f in dataclasses.fields(entity_type))


@class_cache
def _field_types(entity_type: type[Any]) -> dict[str, Any]:
    return {f.name: f.type for f in dataclasses.fields(entity_type)}


def build(entity_type: type[_T], **values: object) -> _T:
    """An entity of `entity_type` with `values` for the fields it has (the others are dropped) and zeros elsewhere."""
    names = field_names(entity_type)
    return zero_entity(entity_type, **{k: v for k, v in values.items() if k in names})


@class_cache
def item_type(entity_type: type[Any], field_name: str) -> type[Any]:
    """The element type of an (optional) array field, or the type of an (optional) struct field."""
    field_type = _field_types(entity_type)[field_name]
    for candidate in (field_type, *typing.get_args(field_type)):
        if typing.get_origin(candidate) is tuple:
            return typing.cast(type, typing.get_args(candidate)[0])
        if isinstance(candidate, type) and dataclasses.is_dataclass(candidate):
            return candidate
    raise TypeError(f"{entity_type.__qualname__}.{field_name} is not a struct or an array of structs")


@functools.cache
def response_schema(api_key: int, api_version: int) -> type[ResponsePayload]:
    return load_response_schema(api_key, api_version)


def code(name: str) -> ErrorCode:
    """The kio code of a Kafka error name (`NOT_COORDINATOR` → `ErrorCode.not_coordinator`)."""
    try:
        return ErrorCode[name.lower()]
    except KeyError:
        raise ValueError(f"{name!r} is no Kafka error name known to kio") from None


def ms_of(value: datetime.timedelta | None, default: int = -1) -> int:
    """A kio `timedelta_i32/i64` field in milliseconds (kio writes them rounded the same way)."""
    if value is None:
        return default
    return round(value.total_seconds() * 1000)


def timedelta_of_ms(value: int) -> datetime.timedelta:
    return datetime.timedelta(milliseconds=value)


def datetime_of_ms(value: int) -> datetime.datetime:
    """A `datetime_i64` field: kio writes `round(timestamp * 1000)`, so -1 ms (Kafka's "none") round-trips."""
    return _EPOCH + datetime.timedelta(milliseconds=value)
