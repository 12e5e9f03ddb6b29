"""The coordinator records' layouts, as Kafka declares them: its message JSON files, read as data.

`impl/storage/messages/transaction/*.json` and `messages/group/*.json` are Apache Kafka 4.0.2's own declarations of
the `__transaction_state` and `__consumer_offsets` records (`transaction-coordinator/src/main/resources/common/message/`
and `group-coordinator/src/main/resources/common/message/`, copied unchanged from the 4.0.2 jars; a test compares
them with the jars `make` fetches). Each is one message — fields with a type, the versions they exist in, the versions
they may be null in, a tag and default for tagged fields — and this module reads them into `Message`/`FieldDecl`.
`kcoord.impl.storage.codec` compiles them into readers and writers; nothing else restates a layout.

Owns: parsing (comments stripped, version ranges `0+`, `1`, `0-1`, `none`), `Versions`, `FieldDecl`, `Message`
(with its inline and common structs resolved), `load_messages`.
Must not import: `kcoord.model`.
"""

from __future__ import annotations

import functools
import json
import re
from dataclasses import dataclass
from importlib import resources
from typing import Any

PRIMITIVES = frozenset({"bool", "int8", "int16", "int32", "int64", "string", "bytes", "uuid"})
INTEGERS = frozenset({"int8", "int16", "int32", "int64"})


class DeclarationError(ValueError):
    """A message declaration this codec cannot take (a type or version syntax it does not know)."""


@dataclass(frozen=True, slots=True)
class Versions:
    """An inclusive range of versions; `hi` None is open-ended, `lo` > `hi` is empty ("none")."""

    lo: int
    hi: int | None

    @classmethod
    def parse(cls, text: str | None) -> Versions:
        if text is None or text == "none":
            return cls(1, 0)
        text = text.strip()
        if text.endswith("+"):
            return cls(int(text[:-1]), None)
        if "-" in text:
            lo, hi = text.split("-", 1)
            return cls(int(lo), int(hi))
        return cls(int(text), int(text))

    def __contains__(self, version: object) -> bool:
        return isinstance(version, int) and self.lo <= version and (self.hi is None or version <= self.hi)

    def each(self, upto: int) -> range:
        return range(self.lo, (self.hi if self.hi is not None else upto) + 1)


@dataclass(frozen=True, slots=True)
class FieldDecl:
    """One field: `type` is a primitive, `[]T` (array) or a struct name (then `fields` are the struct's)."""

    name: str
    type: str
    versions: Versions
    nullable: Versions
    tagged: Versions
    tag: int | None
    default: Any
    ignorable: bool
    fields: tuple[FieldDecl, ...]  # the element struct's fields (struct and array-of-struct types)

    @property
    def is_array(self) -> bool:
        return self.type.startswith("[]")

    @property
    def element(self) -> str:
        return self.type[2:] if self.is_array else self.type

    @property
    def is_struct(self) -> bool:
        return self.element not in PRIMITIVES

    @property
    def snake(self) -> str:
        return snake_case(self.name)

    def present(self, version: int) -> bool:
        return version in self.versions or version in self.tagged


@dataclass(frozen=True, slots=True)
class Message:
    name: str
    kind: str  # Kafka's "type": "data" for every coordinator record
    coordinator: str  # "group" (`__consumer_offsets`) or "transaction" (`__transaction_state`)
    valid: Versions
    flexible: Versions
    fields: tuple[FieldDecl, ...]

    def versions(self) -> range:
        return self.valid.each(self.valid.lo if self.valid.hi is None else self.valid.hi)


def snake_case(name: str) -> str:
    """`TransactionTimeoutMs` → `transaction_timeout_ms`, `leaderEpoch` → `leader_epoch` (the Python attribute)."""
    out = re.sub(r"(?<=[a-z0-9])([A-Z])", r"_\1", name)
    return re.sub(r"(?<=[A-Z])([A-Z][a-z])", r"_\1", out).lower()


def _strip_comments(text: str) -> str:
    """Kafka's message files are JSON with `//` line comments (never inside their strings)."""
    return "\n".join(line.split("//", 1)[0] if not line.lstrip().startswith("//") else "" for line in
                     text.splitlines())


def _default(raw: Any, type_name: str) -> Any:
    if raw is None or raw == "null":
        return None
    if type_name in INTEGERS:
        return int(raw)
    if type_name == "bool":
        return raw is True or raw == "true"
    return raw


def _implicit_default(f: dict[str, Any]) -> Any:
    """Kafka's default when a field declares none: 0, false, "", empty array, null for nullable structs."""
    t = f["type"]
    if t.startswith("[]"):
        return ()
    if t in INTEGERS:
        return 0
    if t == "bool":
        return False
    if t == "string":
        return ""
    if t == "bytes":
        return b""
    if t == "uuid":
        import uuid

        return uuid.UUID(int=0)
    return None


def _field(f: dict[str, Any], structs: dict[str, list[dict[str, Any]]]) -> FieldDecl:
    t = f["type"]
    element = t[2:] if t.startswith("[]") else t
    nested: tuple[FieldDecl, ...] = ()
    if element not in PRIMITIVES and element[:1].isupper():
        raw = f.get("fields") or structs.get(element)
        if raw is None:
            raise DeclarationError(f"field {f['name']}: struct type {element} is declared nowhere")
        nested = tuple(_field(x, structs) for x in raw)
    if element not in PRIMITIVES and element[:1].islower():
        raise DeclarationError(f"field {f['name']}: type {element} is not supported")
    default = _default(f["default"], element) if "default" in f else _implicit_default(f)
    return FieldDecl(f["name"], t, Versions.parse(f.get("versions")), Versions.parse(f.get("nullableVersions")),
                     Versions.parse(f.get("taggedVersions")), f.get("tag"), default, bool(f.get("ignorable")),
                     nested)


def parse_message(text: str, coordinator: str = "") -> Message:
    doc = json.loads(_strip_comments(text))
    structs = {s["name"]: s["fields"] for s in doc.get("commonStructs", ())}
    return Message(doc["name"], doc["type"], coordinator, Versions.parse(doc["validVersions"]),
                   Versions.parse(doc.get("flexibleVersions")), tuple(_field(f, structs) for f in doc["fields"]))


@functools.cache
def load_messages() -> dict[str, Message]:
    """Every bundled declaration, by message name."""
    out = {}
    for coordinator in ("group", "transaction"):
        folder = resources.files("kcoord.impl.storage").joinpath("messages", coordinator)
        for entry in sorted(folder.iterdir(), key=lambda e: e.name):
            if entry.name.endswith(".json"):
                message = parse_message(entry.read_text(encoding="utf-8"), coordinator)
                out[message.name] = message
    return out
