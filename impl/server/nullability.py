"""Null where the schema forbids it: the check every decoded request passes before any handler sees it.

Owns `null_field(entity)`: the path of the first field that holds None although its kio schema type does not allow
None (an array, a string, a struct, a records field Kafka declares non-nullable), or None when there is none. kio's
readers take a null length (-1) for any array or string, so a request may decode with None where a handler expects
a tuple or a str; Kafka's generated readers refuse it ("non-nullable field X was serialized as null") and the broker
closes the connection. The codec runs this check for every served API and version, from the schema alone: what is
nullable is read from each field's type (`X | None`), once per class.
Must not import: `kcoord.model`, the dispatcher or the connection layer.
"""

from __future__ import annotations

import dataclasses
import types
import typing
from typing import Any

from .kio_build import class_cache

__all__ = ("null_field",)

# (field name, may it be None, the nested entity type of a struct or of each array element, or None)
_Plan = tuple[tuple[str, bool, type[Any] | None], ...]


def _nested(field_type: object) -> type[Any] | None:
    """The entity type a field holds, directly or as an array's elements, or None for a scalar."""
    for candidate in (field_type, *typing.get_args(field_type)):
        if typing.get_origin(candidate) is tuple:
            element = typing.get_args(candidate)[0]
            return element if isinstance(element, type) and dataclasses.is_dataclass(element) else None
        if isinstance(candidate, type) and dataclasses.is_dataclass(candidate):
            return candidate
    return None


@class_cache
def _plan(entity_type: type[Any]) -> _Plan:
    """The fields that can hold a forbidden None (non-nullable ones) or lead to one (structs, arrays of structs); a
    nullable scalar can do neither and is not looked at."""
    out = []
    for f in dataclasses.fields(entity_type):
        nullable = isinstance(f.type, types.UnionType) and type(None) in typing.get_args(f.type)
        nested = _nested(f.type)
        if not nullable or nested is not None:
            out.append((f.name, nullable, nested))
    return tuple(out)


def null_field(entity: Any, path: str = "") -> str | None:
    """The dotted path (`topics[0].partitions`) of the first non-nullable field of `entity` that is None. (The path
    is written only when one is found: every request passes here.)"""
    found = _first_null(entity)
    return None if found is None else f"{path}.{found}" if path else found


def _first_null(entity: Any) -> str | None:
    for name, nullable, nested in _plan(type(entity)):
        value = getattr(entity, name)
        if value is None:
            if not nullable:
                return name
            continue
        if nested is None:
            continue
        if isinstance(value, tuple):
            for i, item in enumerate(value):
                if item is None:
                    return f"{name}[{i}]"
                found = _first_null(item)
                if found is not None:
                    return f"{name}[{i}].{found}"
        else:
            found = _first_null(value)
            if found is not None:
                return f"{name}.{found}"
    return None
