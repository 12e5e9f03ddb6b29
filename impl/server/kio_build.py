"""Building kio response entities for whatever version a request came in, and converting kio's field types.

Owns: `build` (an entity of one schema version from keyword values, dropping fields that version does not have, every
other field at its default or zero; a name no version of the schema has is refused: a misspelt response field would
otherwise vanish without a word), `item_type` (the element type of an array field or the type of a struct field,
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
import importlib
import pkgutil
import typing
from collections.abc import Callable
from typing import Any, Final, ParamSpec, TypeVar

from kio.index import load_response_schema
from kio.schema.errors import ErrorCode
from kio.static.protocol import ResponsePayload

from .errors import IllegalStateError
from .responses import zero_entity

__all__ = ("AUTHORIZED_OPERATIONS_OMITTED", "build", "class_cache", "code", "datetime_of_ms",
           "field_names", "fields_of_any_version", "item_type", "ms_of", "response_schema", "timedelta_of_ms")

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
    """An entity of `entity_type` with `values` for the fields it has (the others are dropped) and zeros elsewhere.
    A dropped name must be a field of some version of the schema (IllegalStateError otherwise); that is checked once
    per schema and set of dropped names (`_check_dropped` is cached), and not at all when nothing is dropped."""
    names = field_names(entity_type)
    kept = {k: v for k, v in values.items() if k in names}
    if len(kept) != len(values):
        _check_dropped(entity_type, frozenset(values.keys() - names))
    return zero_entity(entity_type, **kept)


@class_cache
def _check_dropped(entity_type: type[Any], dropped: frozenset[str]) -> None:
    """`dropped`, the names a version of the schema leaves out, are fields of some other version of it."""
    unknown = dropped - fields_of_any_version(entity_type)
    if unknown:
        raise IllegalStateError(f"{entity_type.__module__}.{entity_type.__qualname__} has no field {sorted(unknown)} "
                                "in any version: a misspelt field name (build would drop it from the response)")


@class_cache
def fields_of_any_version(entity_type: type[Any]) -> frozenset[str]:
    """The field names of `entity_type` in every version of its schema (kio's `kio.schema.<api>.v<N>.<module>`
    modules, each with its own class of that name)."""
    package, version, leaf = entity_type.__module__.rsplit(".", 2)
    if not version.startswith("v"):
        return field_names(entity_type)
    names: set[str] = set()
    for module in pkgutil.iter_modules(importlib.import_module(package).__path__):
        if module.ispkg and module.name[1:].isdigit() and module.name.startswith("v"):
            schema = importlib.import_module(f"{package}.{module.name}.{leaf}")
            sibling = getattr(schema, entity_type.__qualname__, None)
            if isinstance(sibling, type) and dataclasses.is_dataclass(sibling):
                names |= field_names(sibling)
    return frozenset(names)


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
