"""Apache Kafka's message declarations (`common/message/*.json` in the clients jar), read into a small model.

Owns: `Versions`, `Field`, `Struct`, `Message` and `read_jar`, which parses the JSON (after stripping its `//` comment
lines) of the request, response and header messages asked for. It knows Kafka's schema keys and refuses others with
a `DeclarationError` naming the file, so a new kind of declaration is noticed rather than silently mis-generated.
Must not import: anything outside the standard library; `gen_codec.py` (the Rust rendering) imports it.
"""

from __future__ import annotations

import json
import re
import zipfile
from collections.abc import Collection, Mapping
from dataclasses import dataclass
from pathlib import Path
from types import MappingProxyType
from typing import Any, Final

MAX_VERSION: Final = 32767
PRIMITIVES: Final[Mapping[str, str]] = MappingProxyType({
    "int8": "i8", "int16": "i16", "int32": "i32", "int64": "i64", "uint16": "u16", "uint32": "u32",
    "float64": "f64", "bool": "bool", "string": "String", "bytes": "Vec<u8>", "records": "Vec<u8>",
    "uuid": "[u8; 16]",
})
RUST_KEYWORDS: Final = frozenset({"type", "match", "ref", "self", "struct", "mod", "loop", "move", "use", "where"})


class DeclarationError(Exception):
    """The jar's message declarations are not what this generator understands (the message names the file)."""


@dataclass(frozen=True, slots=True)
class Versions:
    """An inclusive version range; empty when `low > high` ("none")."""

    low: int
    high: int

    @staticmethod
    def parse(text: str) -> Versions:
        if text == "none":
            return Versions(1, 0)
        if text.endswith("+"):
            return Versions(int(text[:-1]), MAX_VERSION)
        low, _, high = text.partition("-")
        return Versions(int(low), int(high or low))

    def empty(self) -> bool:
        return self.low > self.high

    def meet(self, other: Versions) -> Versions:
        return Versions(max(self.low, other.low), min(self.high, other.high))

    def contains(self, version: int) -> bool:
        return self.low <= version <= self.high


@dataclass(frozen=True, slots=True)
class Field:
    name: str
    type: str  # "int32", "[]string", "[]TopicData", "Assignment"
    versions: Versions
    nullable: Versions
    tagged: Versions  # empty unless the field has a tag
    tag: int | None
    default: str | None
    ignorable: bool
    flexible: Versions | None  # a field's own flexibleVersions (RequestHeader.ClientId: "none")
    about: str

    @property
    def array(self) -> bool:
        return self.type.startswith("[]")

    @property
    def base(self) -> str:
        return self.type[2:] if self.array else self.type

    @property
    def struct(self) -> bool:
        return self.base not in PRIMITIVES

    @property
    def optional(self) -> bool:
        return not self.nullable.meet(self.versions).empty()

    @property
    def snake(self) -> str:
        return re.sub(r"(?<=[a-z0-9])(?=[A-Z])|(?<=[A-Z])(?=[A-Z][a-z])", "_", self.name).lower()

    @property
    def rust(self) -> str:
        return f"r#{self.snake}" if self.snake in RUST_KEYWORDS else self.snake


@dataclass(frozen=True, slots=True)
class Struct:
    name: str
    fields: tuple[Field, ...]
    about: str


@dataclass(frozen=True, slots=True)
class Message:
    name: str  # "ProduceRequest"
    api_key: int | None  # None for the headers
    kind: str  # request | response | header
    valid: Versions
    flexible: Versions
    structs: tuple[Struct, ...]  # the message itself first, then nested and common structs by first use


def strip_comments(text: str) -> str:
    return "\n".join(line for line in text.splitlines() if not line.lstrip().startswith("//"))


def parse_field(raw: Mapping[str, Any], where: str) -> tuple[Field, list[Struct]]:
    """A field, and the structs it declares inline (itself a struct type with `fields`, and theirs)."""
    known = {"name", "type", "versions", "nullableVersions", "taggedVersions", "tag", "default", "ignorable",
             "flexibleVersions", "about", "fields", "mapKey", "entityType", "zeroCopy"}
    unknown = sorted(set(raw) - known)
    if unknown:
        raise DeclarationError(f"{where}: field {raw.get('name')!r} has keys {unknown}, expected only {sorted(known)}")
    field = Field(
        name=raw["name"], type=raw["type"], versions=Versions.parse(raw["versions"]),
        nullable=Versions.parse(raw.get("nullableVersions", "none")),
        tagged=Versions.parse(raw.get("taggedVersions", "none")), tag=raw.get("tag"),
        default=str(raw["default"]) if "default" in raw else None,
        ignorable=bool(raw.get("ignorable", False)),
        flexible=Versions.parse(raw["flexibleVersions"]) if "flexibleVersions" in raw else None,
        about=raw.get("about", ""))
    if field.base not in PRIMITIVES and not field.base[:1].isupper():
        raise DeclarationError(f"{where}: field {field.name!r} has type {field.type!r}, which is not supported")
    structs: list[Struct] = []
    if "fields" in raw:
        inner = [parse_field(f, where) for f in raw["fields"]]
        structs.append(Struct(field.base, tuple(f for f, _ in inner), field.about))
        structs += [s for _, nested in inner for s in nested]
    return field, structs


def parse_message(raw: Mapping[str, Any], where: str) -> Message:
    top = [parse_field(f, where) for f in raw["fields"]]
    structs = [Struct(raw["name"], tuple(f for f, _ in top), "")]
    structs += [s for _, nested in top for s in nested]
    for common in raw.get("commonStructs", ()):
        inner = [parse_field(f, where) for f in common["fields"]]
        structs.append(Struct(common["name"], tuple(f for f, _ in inner), ""))
        structs += [s for _, nested in inner for s in nested]
    names = [s.name for s in structs]
    if len(set(names)) != len(names):
        raise DeclarationError(f"{where}: a struct name is declared twice among {names}")
    return Message(raw["name"], raw.get("apiKey"), raw["type"], Versions.parse(raw["validVersions"]),
                   Versions.parse(raw.get("flexibleVersions", "none")), tuple(structs))


def read_jar(jar: Path, api_keys: Collection[int]) -> dict[str, Message]:
    """Every request and response message of `api_keys`, and the two headers, by name."""
    out: dict[str, Message] = {}
    with zipfile.ZipFile(jar) as archive:
        for name in sorted(archive.namelist()):
            if not (name.startswith("common/message/") and name.endswith(".json")):
                continue
            raw = json.loads(strip_comments(archive.read(name).decode("utf-8")))
            wanted = raw.get("apiKey") in api_keys and raw.get("type") in ("request", "response")
            if wanted or raw.get("name") in ("RequestHeader", "ResponseHeader"):
                out[raw["name"]] = parse_message(raw, f"{jar.name}!{name}")
    return out
