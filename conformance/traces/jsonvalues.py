"""JSON values of trace lines, as Spark's JSON reader takes them (for `readers`, so that the Python checker
quarantines exactly the lines Spark does).

Owns `parse_json_line` (a line's rows: its first JSON value, an object or an array of objects; whatever follows that
value is ignored), `convert` (a decoded value for a column's trace type: a string column takes any JSON value as its
text, integer and boolean columns take only JSON integers and booleans, a list column takes a JSON array whose
scalars become their text), `Malformed`, and `INT_BOUNDS` (the integer trace types' ranges).
Must not import: pyspark, kcoord.cli.
"""

from __future__ import annotations

import json
import re
from typing import Any

INT_BOUNDS = {"int64": (-(2**63), 2**63 - 1), "int32": (-(2**31), 2**31 - 1)}


class Malformed(Exception):
    """A line or value the JSON/Parquet layer cannot take (reason `malformed`)."""


class _Number(str):
    """A JSON number (or NaN / Infinity) as written: Spark gives a string column the number's own text (`1e2`,
    `1.50`, `-0`), so the value is kept as text until the column's type is known."""

    __slots__ = ()


class _NeedsText(Exception):
    """An object or array in a string column: Spark gives it its text exactly as written, which only the line has."""


_INTEGER = re.compile(r"-?[0-9]+")
#: Integers are read as Python ints (whose text is the one written, but for `-0`: a line holding "-0" is read with
#: `_DECODER`, which keeps every number's text); other numbers keep their text.
_FAST_DECODER = json.JSONDecoder(parse_float=_Number, parse_constant=_Number)
_DECODER = json.JSONDecoder(parse_float=_Number, parse_int=_Number, parse_constant=_Number)
_SPACE = " \t\r\n"  # JSON's whitespace


def _text(value: Any, raw: str | None) -> str:
    """A value of a string column (or of a set's element): a string as decoded, a boolean as `true` / `false`,
    anything else as written."""
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, str | int):
        return str(value)
    if raw is None:
        raise _NeedsText
    return raw


def convert(value: Any, typ: str, raw: str | None = None) -> Any:
    """A decoded JSON value for a column of trace type `typ` (None stays None), `raw` the text it was read from
    (needed only for an object or array in a string column); raises Malformed."""
    if value is None:
        return None
    if typ == "string":
        return _text(value, raw)
    if typ in INT_BOUNDS:
        lo, hi = INT_BOUNDS[typ]
        if isinstance(value, int) and not isinstance(value, bool) and lo <= value <= hi:
            return value
        if isinstance(value, _Number) and _INTEGER.fullmatch(value) and lo <= int(value) <= hi:
            return int(value)
        raise Malformed
    if typ == "bool":
        if isinstance(value, bool):
            return value
        raise Malformed
    if isinstance(value, list):
        if raw is None:
            return [None if x is None else _text(x, None) for x in value]
        return [None if x is None else _text(x, text) for x, text in _elements(raw, 0)[0]]
    raise Malformed


def parse_json_line(line: str, cols: list[tuple[str, str]]) -> list[dict[str, Any]]:
    """The rows of one line, as Spark's JSON reader takes them: the line's first JSON value (Jackson stops after
    it, and Spark has no option to refuse what follows), an object as one row, an array of objects as one row per
    element (none for `[]`). Anything else, or any value of the wrong type in any element, makes the whole line
    malformed (`Malformed` or `ValueError`). A string column takes a number, object or array as the text written
    in the line (`1e2` stays `1e2`)."""
    text = line.lstrip(_SPACE)
    value, _ = (_DECODER if "-0" in text else _FAST_DECODER).raw_decode(text)
    objects = value if isinstance(value, list) else [value]
    if not all(isinstance(o, dict) for o in objects):
        raise Malformed
    try:
        rows = [{name: convert(o.get(name), typ) for name, typ in cols} for o in objects]
    except _NeedsText:  # rare: read the line again, keeping each member's text
        members = [_members(text, 0)[0]] if text[0] == "{" else [_members(raw, 0)[0] for _, raw in
                                                                  _elements(text, 0)[0]]
        rows = [{name: convert(m[name][0], typ, m[name][1]) if name in m else None for name, typ in cols}
                for m in members]
    if "\\u" in text and _LONE_SURROGATE.search(text):  # rare: `\ud83d` escaped without its pair
        rows = [{name: _unpaired(v) for name, v in r.items()} for r in rows]
    return rows


_LONE_SURROGATE = re.compile(r"\\u[dD][89a-fA-F]")  # (a pair decodes to one character; what is left is alone)


def _unpaired(value: Any) -> Any:
    """A string with a surrogate left alone by its escape, as Spark has it: `?` in its place (UTF-8 cannot hold
    it)."""
    if isinstance(value, str):
        return value.encode("utf-8", "replace").decode("utf-8")
    if isinstance(value, list):
        return [_unpaired(x) for x in value]
    return value


def _skip(text: str, i: int) -> int:
    while i < len(text) and text[i] in _SPACE:
        i += 1
    return i


def _members(text: str, i: int) -> tuple[dict[str, tuple[Any, str]], int]:
    """The object at `text[i]` as name -> (value, its text); a repeated name keeps its last value, as in Spark."""
    out: dict[str, tuple[Any, str]] = {}
    i = _skip(text, i + 1)
    while text[i] != "}":
        name, i = _DECODER.raw_decode(text, i)
        i = _skip(text, i)
        if text[i] != ":":
            raise Malformed
        start = _skip(text, i + 1)
        value, i = _DECODER.raw_decode(text, start)
        out[name] = (value, text[start:i])
        i = _skip(text, i)
        if text[i] == ",":
            i = _skip(text, i + 1)
    return out, i + 1


def _elements(text: str, i: int) -> tuple[list[tuple[Any, str]], int]:
    """The array at `text[i]` as [(value, its text)]."""
    out: list[tuple[Any, str]] = []
    i = _skip(text, i + 1)
    while text[i] != "]":
        start = i
        value, i = _DECODER.raw_decode(text, start)
        out.append((value, text[start:i]))
        i = _skip(text, i)
        if text[i] == ",":
            i = _skip(text, i + 1)
    return out, i + 1
