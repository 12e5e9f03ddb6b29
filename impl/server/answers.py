"""Answers encoded once: `BodyMemo` (an answer's bytes per distinct answer) and `ProduceAnswers` (a Produce answer
from a template per shape: kio's bytes, with each partition's offsets written in place).

Owns: `BodyMemo`, and `ProduceAnswers`: the Produce response body of a request as bytes (`EncodedBody`, which the
dispatcher puts behind the response header, as for a kio body). Every answer to a transactional commit's Produce
has the same shape — the version, the topics, their partitions in order, each partition's error — and differs only
in its fixed-width int64 offsets (`base_offset`, `log_start_offset`): the first answer of a shape is built as kio
entities and encoded by kio (`handlers_data.produce_response`, the only description of the answer) with a distinct
sentinel in each offset, the sentinels' positions are found in the bytes, and every later answer of that shape is
those bytes with its offsets packed at those positions. An int64 is written in 8 bytes whatever its value and the
shape fixes every other byte, so the result is kio's encoding of that answer byte for byte
(`tests/impl/server/test_produce_answer.py` compares both for every Produce version). Answers with an error message
or a log-append time (never a commit's) are built and encoded by kio every time, as is a shape whose sentinels are
not each found exactly once.
Must not import: `kcoord.model`.
"""

from __future__ import annotations

import struct
from collections.abc import Callable, Hashable, Sequence
from typing import Final

from kio.static.protocol import ResponsePayload

from ..partition.types import ProduceResult
from .codec import EncodedBody, encode_body

Results = Sequence[tuple[str, Sequence[tuple[int, ProduceResult]]]]
Builder = Callable[[int, Results], ResponsePayload]  # (api version, results) -> kio's answer

_INT64: Final = struct.Struct(">q")
_SENTINEL: Final = 0x5A17_C0DE_0000_0000  # + 2k: partition k's base offset; + 2k + 1: its log start offset
_MAX_SHAPES: Final = 1024
_NO_TEMPLATE: Final = (b"", ())


class BodyMemo:
    """Response bodies built and encoded once per distinct answer: a handler keys a body by everything it is built
    from (the api key and version and the coordinator's answer); the same answer has the same bytes, so one
    `EncodedBody` serves every request with that answer (no kio entity built, hashed or encoded per request).
    Bounded: cleared when full."""

    __slots__ = ("_bodies", "_max")

    def __init__(self, max_bodies: int = 4096) -> None:
        self._bodies: dict[Hashable, EncodedBody] = {}
        self._max = max_bodies

    def body(self, key: Hashable, make: Callable[[], ResponsePayload]) -> EncodedBody:
        """The body for `key`, made by `make` and encoded the first time."""
        body = self._bodies.get(key)
        if body is None:
            if len(self._bodies) >= self._max:
                self._bodies.clear()
            made = make()
            body = self._bodies[key] = EncodedBody(made.__api_key__, made.__version__,
                                                   made.__header_schema__.__flexible__, encode_body(made))
        return body


class ProduceAnswers:
    """Produce response bodies by shape (see the module docstring); `build` is the kio answer the bytes must equal."""

    def __init__(self, build: Builder, flexible_from: int) -> None:
        self._build = build
        self._flexible_from = flexible_from
        self._templates: dict[tuple[object, ...], tuple[bytes, tuple[int | None, ...]]] = {}

    def body(self, version: int, results: Results) -> ResponsePayload | EncodedBody:
        shape: list[object] = [version]
        values: list[int] = []
        for name, parts in results:
            shape.append(name)
            for index, r in parts:
                if r.error_message is not None or r.log_append_time_ms != -1:
                    return self._build(version, results)
                shape.append(index)
                shape.append(r.error)
                values.append(r.base_offset)
                values.append(r.log_start_offset)
            shape.append(None)  # the topic's end
        key = tuple(shape)
        template = self._templates.get(key)
        if template is None:
            template = self._template(version, results)
            if len(self._templates) >= _MAX_SHAPES:
                self._templates.clear()
            self._templates[key] = template
        data, positions = template
        if not positions:
            return self._build(version, results)
        out = bytearray(data)
        pack = _INT64.pack_into
        for position, value in zip(positions, values, strict=True):
            if position is not None:
                pack(out, position, value)
        return EncodedBody(0, version, version >= self._flexible_from, bytes(out))

    def _template(self, version: int, results: Results) -> tuple[bytes, tuple[int | None, ...]]:
        """kio's bytes of this shape with sentinel offsets, and each offset's position (None: not in this version)."""
        marked: list[tuple[str, list[tuple[int, ProduceResult]]]] = []
        k = 0
        for name, parts in results:
            topic = []
            for index, r in parts:
                topic.append((index, ProduceResult(r.error, _SENTINEL + 2 * k, -1, _SENTINEL + 2 * k + 1)))
                k += 1
            marked.append((name, topic))
        data = encode_body(self._build(version, marked))
        positions: list[int | None] = []
        for n in range(2 * k):
            sentinel = _INT64.pack(_SENTINEL + n)
            found = data.count(sentinel)
            if found > 1 or (found == 0 and n % 2 == 0):  # a base offset is in every version
                return _NO_TEMPLATE
            positions.append(data.find(sentinel) if found else None)
        return data, tuple(positions)
