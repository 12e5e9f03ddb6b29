"""Random kio entities, drawn by walking their dataclass fields with a seeded `random.Random`.

hypothesis' `st.from_type` builds the same kind of entities (kio registers its primitives' strategies), but drew the
~6,600 bodies of test_wire_codec.py in 61 s on the shared 2-core machine; this walk draws them in about a second.
It leans on the edges the codec must get right: each integer type's bounds, 0 and -1, null for every nullable field,
empty and non-empty arrays, and strings with quotes, control and non-ASCII characters.
"""

from __future__ import annotations

import dataclasses
import datetime
import enum
import functools
import random
import types
import typing
import uuid
from typing import Any

from kio.static.primitive import Interval, i32Timedelta, i64Timedelta

EPOCH = datetime.datetime(1970, 1, 1, tzinfo=datetime.UTC)
CHARACTERS = "abcXYZ09_-.\"\\\x00\n\t é中\u2028🙂"
ITEMS_MAX = 3  # items of an array at the top level; one fewer at each level below


@functools.cache
def hints(cls: type[Any]) -> dict[str, Any]:
    return typing.get_type_hints(cls)


def draw_entity(rng: random.Random, cls: type[Any], depth: int = 0) -> Any:
    values = {f.name: draw_value(rng, hints(cls)[f.name], depth) for f in dataclasses.fields(cls)}
    return cls(**values)


def draw_int(rng: random.Random, low: int, high: int) -> int:
    edges = [v for v in (low, high, 0, -1, 1) if low <= v <= high]
    return rng.choice(edges) if rng.random() < 0.3 else rng.randint(low, high)


def draw_value(rng: random.Random, hint: Any, depth: int) -> Any:
    args = typing.get_args(hint)
    if isinstance(hint, types.UnionType):
        (inner,) = (a for a in args if a is not type(None))
        return None if rng.random() < 0.25 else draw_value(rng, inner, depth)
    if typing.get_origin(hint) is tuple:
        count = rng.randint(0, max(0, ITEMS_MAX - depth))
        return tuple(draw_value(rng, args[0], depth + 1) for _ in range(count))
    if dataclasses.is_dataclass(hint):
        return draw_entity(rng, hint, depth + 1)  # type: ignore[arg-type]
    if hint is bool:
        return rng.random() < 0.5
    if isinstance(hint, type) and issubclass(hint, enum.Enum):
        return rng.choice(list(hint))
    if isinstance(hint, type) and issubclass(hint, Interval):
        return draw_int(rng, hint.__low__, hint.__high__)
    if hint is i32Timedelta:
        return datetime.timedelta(milliseconds=draw_int(rng, -(2**31), 2**31 - 1))
    if hint is i64Timedelta:
        return datetime.timedelta(milliseconds=draw_int(rng, -(2**40), 2**40))
    if isinstance(hint, type) and issubclass(hint, datetime.datetime):
        return EPOCH + datetime.timedelta(milliseconds=draw_int(rng, 0, 2**42))
    if hint is uuid.UUID:
        return uuid.UUID(bytes=bytes(rng.randrange(256) for _ in range(16)))
    if isinstance(hint, type) and issubclass(hint, bytes):
        return hint(bytes(rng.randrange(256) for _ in range(rng.randint(0, 24))))
    if isinstance(hint, type) and issubclass(hint, str):
        return "".join(rng.choice(CHARACTERS) for _ in range(rng.randint(0, 12)))
    if isinstance(hint, type) and issubclass(hint, float):
        return rng.choice([0.0, -1.5, 1e300, rng.uniform(-1e6, 1e6)])
    raise TypeError(f"no way to draw a {hint!r}: expected a kio primitive, entity, tuple or optional")
