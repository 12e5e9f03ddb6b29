"""The one codec of the coordinator records: Kafka's generated-message encoding, compiled from the declarations.

`Codec` turns each (message, version) of `kcoord.impl.storage.declarations` into a reader and a writer, as Kafka's
message generator turns the same JSON into Java classes: Python source is generated once per (message, version,
binding) and compiled — fixed-width fields in a row are packed and unpacked by one `struct`, `[]int32` arrays by one
`struct` call, compact (flexible) and classic lengths and the tagged-field section are written out for the version —
so the readers and writers run at the speed of hand-written ones and cannot disagree with the declarations. The source
of any of them is `Codec.source(...)`, for reading. The readers' source is made here, the writers' by
`codec_write.WriterSource`; what both use is `_codegen.py`'s.

Values. A message or struct is read into the class bound to it (`Codec.bind`: a dataclass whose fields are the
declaration's fields in snake case, in any order; it is checked at bind time) or, unbound or with `raw=True`, into a
tuple of its fields in declaration order (nested structs as tuples too). Strings are `str`, bytes `bytes`, uuids
`uuid.UUID`, arrays tuples, a null `None`; a field absent from the version reads as its default. Writing takes the
same shapes (a bound instance, or a tuple). A field absent from the version may only hold its default, unless it is
ignorable (then it is dropped), as Kafka's generated code requires; a tagged field is written only when it differs
from its default; unknown tags are skipped on read.

Errors: `SchemaError` (a `ValueError`) names the message, version and field, for bytes that do not decode and for
values that cannot be encoded at a version. Never a guess.
Must not import: `kcoord.model`.
"""

from __future__ import annotations

import dataclasses
import struct
import uuid
from collections.abc import Callable, Mapping
from typing import Any

from ._codegen import FORMAT, WIDTH, Source, runs
from ._varint import VarintError, read_uvarint, uvarint
from .codec_write import WriterSource
from .declarations import INTEGERS, FieldDecl, Message, load_messages

__all__ = ["Codec", "Encoded", "SchemaError", "shared_codec"]

Reader = Callable[[bytes, int], tuple[Any, int]]
Writer = Callable[[Any, list[bytes]], None]


class SchemaError(ValueError):
    """Bytes that do not decode as the declared record, or a value that cannot be encoded at a version."""


class Encoded:
    """The bytes of one array or struct field, already encoded at the version being written (a writer appends them
    as they are; a reader asked for a field's `spans` returns them): lets a hot path encode or name a field once."""

    __slots__ = ("data",)

    def __init__(self, data: bytes) -> None:
        self.data = data

    def __eq__(self, other: object) -> bool:
        return isinstance(other, Encoded) and other.data == self.data

    def __hash__(self) -> int:
        return hash(self.data)


def _uvarint_at(buf: bytes, pos: int) -> tuple[int, int]:
    try:
        return read_uvarint(buf, pos)
    except VarintError as e:
        raise SchemaError(str(e)) from None


def _utf8(data: bytes) -> str:
    return data.decode("utf-8")


class Codec:
    """Readers and writers of a set of message declarations, compiled on first use and cached."""

    def __init__(self, messages: Mapping[str, Message]) -> None:
        self.messages = dict(messages)
        self._bindings: dict[tuple[str, ...], type] = {}
        self._converters: dict[tuple[str, ...], Callable[[Any], Any]] = {}
        self._readers: dict[tuple[str, int, bool, frozenset[str]], Reader] = {}
        self._writers: dict[tuple[str, int, bool], Writer] = {}
        self._fields: dict[tuple[str, str, int, str, bool], Any] = {}
        self._sources: dict[tuple[str, str, int, bool], str] = {}
        self._constant_values: dict[str, Any] = {}  # named values the generated code reads (structs, defaults)
        self._env: dict[str, Any] = {"SchemaError": SchemaError, "_uvarint_at": _uvarint_at, "uvarint": uvarint,
                                     "UUID": uuid.UUID, "_utf8": _utf8, "struct": struct, "Encoded": Encoded}
        self._write_source = WriterSource(self._bindings, self._constant)

    # ------------------------------------------------------------ bindings

    def bind(self, path: str, cls: type, converters: Mapping[str, Callable[[Any], Any]] | None = None) -> None:
        """Read the struct at `path` (`Message` or `Message.Field` for a struct-typed field, nested with dots) into
        `cls`; `converters` turn a read field (by snake-case name) into the class's type, e.g. an int into an enum."""
        fields = self._struct_fields(path)
        wanted = {f.snake for f in fields}
        have = {f.name for f in dataclasses.fields(cls)}
        if wanted != have:
            raise TypeError(f"{cls.__name__} does not match the declaration of {path}: missing "
                            f"{sorted(wanted - have)}, extra {sorted(have - wanted)}")
        self._bindings[tuple(path.split("."))] = cls
        for name, fn in (converters or {}).items():
            self._converters[(*path.split("."), name)] = fn

    def _struct_fields(self, path: str) -> tuple[FieldDecl, ...]:
        head, *rest = path.split(".")
        fields = self.messages[head].fields
        for part in rest:
            fields = next(f for f in fields if f.name == part).fields
        return fields

    # ------------------------------------------------------------ the API

    def read(self, name: str, version: int, buf: bytes, pos: int = 0, *, raw: bool = False) -> Any:
        """The message `name` at `version` from `buf[pos:]`, which it must fill exactly."""
        value, end = self.reader(name, version, raw)(buf, pos)
        if end != len(buf):
            raise SchemaError(f"{name} v{version}: {len(buf) - end} unexpected trailing bytes")
        return value

    def write(self, name: str, version: int, value: Any, *, raw: bool = False) -> bytes:
        out: list[bytes] = []
        self.writer(name, version, raw)(value, out)
        return b"".join(out)

    def reader(self, name: str, version: int, raw: bool = False, spans: frozenset[str] = frozenset()) -> Reader:
        """`(buf, pos) -> (value, end)`; the top-level fields named in `spans` come back as their `Encoded` bytes
        (skipped, not decoded: `field_reader` decodes them later)."""
        key = (name, version, raw, spans)
        fn = self._readers.get(key)
        if fn is None:
            fn = self._readers[key] = self._compile("read", name, version, raw, spans)
        return fn

    def field_reader(self, name: str, version: int, field: str, raw: bool = False) -> Reader:
        """A reader of one top-level field of `name` alone (e.g. the bytes a `spans` reader returned)."""
        return self._field_fn("read", name, version, field, raw)  # type: ignore[no-any-return]

    def field_writer(self, name: str, version: int, field: str, raw: bool = False) -> Writer:
        """A writer of one top-level field alone (to make an `Encoded` value)."""
        return self._field_fn("write", name, version, field, raw)  # type: ignore[no-any-return]

    def _field_fn(self, kind: str, name: str, version: int, field: str, raw: bool) -> Any:
        key = (kind, name, version, field, raw)
        fn = self._fields.get(key)
        if fn is None:
            message = self._check_version(name, version)
            decl = next(f for f in message.fields if f.name == field)
            flexible = version in message.flexible
            what = f"{name} v{version}"
            functions: list[str] = []
            src = Source()
            entry = f"_{kind}_field_{field}_v{version}{'_raw' if raw else ''}"
            if kind == "read":
                src.add(0, f"def {entry}(buf, pos):")
                src.add(1, f"at = \"{field}\"")
                src.add(1, "try:")
                value = self._read_field(src, (name,), decl, version, flexible, raw, functions, what, 2)
                src.add(1, "except (struct.error, IndexError, UnicodeDecodeError, ValueError, TypeError) as e:")
                src.add(2, "if isinstance(e, SchemaError): raise")
                src.add(2, f"raise SchemaError(f'{what}: field {{at!r}} at position {{pos}}: {{e}}') from None")
                src.add(1, f"return {value}, pos")
            else:
                src.add(0, f"def {entry}(value, out):")
                src.add(1, f"at = \"{field}\"")
                src.add(1, "try:")
                self._write_source.write_field(src, (name,), decl, "value", version, flexible, raw, functions, what,
                                               2)
                src.add(1, "except (struct.error, TypeError, AttributeError, UnicodeEncodeError) as e:")
                src.add(2, f"raise SchemaError(f'{what}: cannot write field {{at!r}}: {{e}}') from None")
            functions.append("\n".join(src.lines))
            namespace = dict(self._env)
            namespace.update(self._constants)
            exec(compile("\n\n".join(functions), f"<codec {kind} {name}.{field} v{version}>", "exec"), namespace)
            fn = self._fields[key] = namespace[entry]
        return fn

    def writer(self, name: str, version: int, raw: bool = False) -> Writer:
        """`(value, out) -> None`: appends the encoded value's parts to `out` (an `Encoded` field goes as it is)."""
        key = (name, version, raw)
        fn = self._writers.get(key)
        if fn is None:
            fn = self._writers[key] = self._compile("write", name, version, raw)
        return fn

    def source(self, kind: str, name: str, version: int, raw: bool = False) -> str:
        """The generated source of a reader (`kind` "read") or writer ("write"), for reading."""
        (self.reader if kind == "read" else self.writer)(name, version, raw)
        return self._sources[(kind, name, version, raw)]

    def _check_version(self, name: str, version: int) -> Message:
        message = self.messages.get(name)
        if message is None:
            raise SchemaError(f"no declaration of {name}")
        if version not in message.valid:
            raise SchemaError(f"{name}: no version {version} (valid: {message.valid.lo}"
                              f"{'+' if message.valid.hi is None else f'-{message.valid.hi}'})")
        return message

    def _compile(self, kind: str, name: str, version: int, raw: bool, spans: frozenset[str] = frozenset()) -> Any:
        message = self._check_version(name, version)
        flexible = version in message.flexible
        functions: list[str] = []
        if kind == "read":
            entry = self._struct_reader((name,), message.fields, version, flexible, raw, functions,
                                        f"{name} v{version}", spans)
        else:
            entry = self._write_source.struct_writer((name,), message.fields, version, flexible, raw, functions,
                                                     f"{name} v{version}")
        text = "\n\n".join(functions)
        self._sources[(kind, name, version, raw)] = text
        namespace = dict(self._env)
        namespace.update(self._constants)
        exec(compile(text, f"<codec {kind} {name} v{version}>", "exec"), namespace)
        return namespace[entry]

    @property
    def _constants(self) -> dict[str, Any]:
        return self._constant_values

    def _constant(self, value: Any) -> str:
        """A module-level name for a value the generated code uses (a Struct, a class, a default)."""
        for k, v in self._constants.items():
            if v is value or (type(v) is type(value) and isinstance(v, int | str | bytes | tuple) and v == value):
                return k
        name = f"_k{len(self._constants)}"
        self._constants[name] = value
        return name

    # ------------------------------------------------------------ readers

    def _struct_reader(self, path: tuple[str, ...], fields: tuple[FieldDecl, ...], version: int, flexible: bool,
                       raw: bool, functions: list[str], what: str, spans: frozenset[str] = frozenset()) -> str:
        fn = "_read_" + "_".join(path).replace(".", "_") + f"_v{version}{'_raw' if raw else ''}"
        if any(f.startswith(f"def {fn}(") for f in functions):
            return fn
        src = Source()
        src.add(0, f"def {fn}(buf, pos):")
        src.add(1, "at = ''")
        src.add(1, "try:")
        values: dict[str, str] = {}
        for run in runs(fields, version):
            if run[0].type in FORMAT:
                fmt = self._constant(struct.Struct(">" + "".join(FORMAT[f.type] for f in run)))
                names = [src.fresh("v") for _ in run]
                src.add(2, f"at = {run[0].name!r}")
                src.add(2, f"{', '.join(names)}{',' if len(names) == 1 else ''} = {fmt}.unpack_from(buf, pos)")
                src.add(2, f"pos += {sum(WIDTH[FORMAT[f.type]] for f in run)}")
                values.update(zip((f.name for f in run), names, strict=True))
                continue
            (f,) = run
            src.add(2, f"at = \"{f.name}\"")
            if f.name in spans:
                values[f.name] = self._span_field(src, path, f, version, flexible, functions, what, 2)
            else:
                values[f.name] = self._read_field(src, path, f, version, flexible, raw, functions, what, 2)
        if flexible:
            tagged = sorted((f for f in fields if version in f.tagged), key=lambda f: f.tag or 0)
            for f in tagged:
                values[f.name] = self._constant(f.default)
            self._read_tags(src, path, tagged, version, raw, functions, what, values)
        src.add(1, "except (struct.error, IndexError, UnicodeDecodeError, ValueError, TypeError) as e:")
        src.add(2, "if isinstance(e, SchemaError): raise")
        src.add(2, f"raise SchemaError(f'{what}: field {{at!r}} at position {{pos}}: {{e}}') from None")
        for f in fields:
            values.setdefault(f.name, self._constant(f.default))
        src.add(1, f"return {self._build(path, fields, values, raw)}, pos")
        functions.append("\n".join(src.lines))
        return fn

    def _build(self, path: tuple[str, ...], fields: tuple[FieldDecl, ...], values: dict[str, str], raw: bool) -> str:
        for f in fields:
            conv = self._converters.get((*path, f.snake))
            if conv is not None and not raw:
                values[f.name] = f"{self._constant(conv)}({values[f.name]})"
        cls = None if raw else self._bindings.get(path)
        if cls is None:
            return "(" + "".join(f"{values[f.name]}, " for f in fields) + ")"
        by_snake = {f.snake: values[f.name] for f in fields}
        args = ", ".join(by_snake[d.name] for d in dataclasses.fields(cls))
        return f"{self._constant(cls)}({args})"

    def _read_length(self, src: Source, flexible: bool, classic: str, indent: int) -> str:
        n = src.fresh("n")
        if flexible:
            src.add(indent, f"{n} = buf[pos]")
            src.add(indent, f"if {n} < 0x80: pos += 1")
            src.add(indent, f"else: {n}, pos = _uvarint_at(buf, pos)")
            src.add(indent, f"{n} -= 1")
        else:
            src.add(indent, f"({n},) = {self._constant(struct.Struct('>' + classic))}.unpack_from(buf, pos)")
            src.add(indent, f"pos += {WIDTH[classic]}")
        return n

    def _read_field(self, src: Source, path: tuple[str, ...], f: FieldDecl, version: int, flexible: bool, raw: bool,
                    functions: list[str], what: str, indent: int) -> str:
        out = src.fresh("v")
        nullable = version in f.nullable
        if f.is_array:
            n = self._read_length(src, flexible, "i", indent)
            src.add(indent, f"if {n} < -1 or {n} > len(buf) - pos: raise SchemaError("
                            f"f'{what}: field \"{f.name}\" has invalid element count {{{n}}}')")
            self._null_check(src, f, nullable, n, out, what, indent)
            element = f.element
            if element in INTEGERS:
                fmt = FORMAT[element]
                src.add(indent, f"if {n} >= 0:")
                src.add(indent + 1, f"{out} = struct.unpack_from(f'>{{{n}}}{fmt}', buf, pos)")
                src.add(indent + 1, f"pos += {WIDTH[fmt]} * {n}")
            else:
                item = self._item_reader(path, f, version, flexible, raw, functions, what)
                src.add(indent, f"if {n} >= 0:")
                src.add(indent + 1, "items = []")
                src.add(indent + 1, f"for _ in range({n}):")
                src.add(indent + 2, f"x, pos = {item}(buf, pos)")
                src.add(indent + 2, "items.append(x)")
                src.add(indent + 1, f"{out} = tuple(items)")
            return out
        if f.type in ("string", "bytes"):
            n = self._read_length(src, flexible, "h" if f.type == "string" else "i", indent)
            src.add(indent, f"if {n} < -1 or pos + {n} > len(buf): raise SchemaError("
                            f"f'{what}: field \"{f.name}\" needs {{{n}}} bytes at position {{pos}}, only "
                            f"{{len(buf) - pos}} remain')")
            self._null_check(src, f, nullable, n, out, what, indent)
            src.add(indent, f"if {n} >= 0:")
            value = f"buf[pos:pos + {n}]"
            src.add(indent + 1, f"{out} = {'_utf8(' + value + ')' if f.type == 'string' else value}")
            src.add(indent + 1, f"pos += {n}")
            return out
        if f.type == "uuid":
            src.add(indent, "if pos + 16 > len(buf): raise SchemaError("
                            f"f'{what}: field \"{f.name}\": buffer ends at position {{pos}}')")
            src.add(indent, f"{out} = UUID(bytes=bytes(buf[pos:pos + 16]))")
            src.add(indent, "pos += 16")
            return out
        if f.type in FORMAT:
            fmt = self._constant(struct.Struct(">" + FORMAT[f.type]))
            src.add(indent, f"({out},) = {fmt}.unpack_from(buf, pos)")
            src.add(indent, f"pos += {WIDTH[FORMAT[f.type]]}")
            return out
        # a struct: a nullable one starts with a presence marker (Kafka's generated code: in a flexible version an
        # unsigned varint, 0 for null and 1 for present; before, an int8, -1 for null)
        item = self._item_reader(path, f, version, flexible, raw, functions, what)
        if nullable:
            null = "buf[pos] == 0" if flexible else "buf[pos] >= 0x80"
            src.add(indent, f"{out} = None")
            src.add(indent, f"if {null}: pos += 1")
            src.add(indent, "else:")
            src.add(indent + 1, "pos += 1")
            src.add(indent + 1, f"{out}, pos = {item}(buf, pos)")
        else:
            src.add(indent, f"{out}, pos = {item}(buf, pos)")
        return out

    def _span_field(self, src: Source, path: tuple[str, ...], f: FieldDecl, version: int, flexible: bool,
                    functions: list[str], what: str, indent: int) -> str:
        """The field's bytes, as `Encoded` (None for a null), found by skipping over it without decoding."""
        out, start = src.fresh("v"), src.fresh("s")
        src.add(indent, f"{start} = pos")
        null = self._skip_field(src, path, f, version, flexible, functions, what, indent)
        src.add(indent, f"{out} = None if {null} else Encoded(buf[{start}:pos])")
        return out

    def _skip_field(self, src: Source, path: tuple[str, ...], f: FieldDecl, version: int, flexible: bool,
                    functions: list[str], what: str, indent: int) -> str:
        """Code that moves `pos` past the field; returns an expression true when the field was null."""
        if f.type in FORMAT:
            src.add(indent, f"pos += {WIDTH[FORMAT[f.type]]}")
            return "False"
        if f.type == "uuid":
            src.add(indent, "pos += 16")
            return "False"
        if not f.is_array and f.is_struct:
            skip = self._struct_skipper((*path, f.name), f.fields, version, flexible, functions, what)
            if version in f.nullable:
                null = src.fresh("z")
                src.add(indent, f"{null} = {'buf[pos] == 0' if flexible else 'buf[pos] >= 0x80'}")
                src.add(indent, "pos += 1")
                src.add(indent, f"if not {null}: pos = {skip}(buf, pos)")
                return null
            src.add(indent, f"pos = {skip}(buf, pos)")
            return "False"
        n = self._read_length(src, flexible, "h" if f.type == "string" else "i", indent)
        src.add(indent, f"if {n} < -1 or {n} > len(buf) - pos: raise SchemaError("
                        f"f'{what}: field \"{f.name}\" has invalid length {{{n}}}')")
        if not f.is_array:
            src.add(indent, f"pos += max({n}, 0)")
        elif f.element in INTEGERS:
            src.add(indent, f"pos += {WIDTH[FORMAT[f.element]]} * max({n}, 0)")
        elif f.element != "string":  # an array of structs: each element skipped inline (no call per element)
            src.add(indent, f"for _ in range({n}):")
            self._skip_struct_body(src, (*path, f.name), f.fields, version, flexible, functions, what, indent + 1)
        else:
            skip = f"_skip_string_{'c' if flexible else 'k'}"
            if not any(x.startswith(f"def {skip}(") for x in functions):
                s2 = Source()
                s2.add(0, f"def {skip}(buf, pos):")
                m = self._read_length(s2, flexible, "h", 1)
                s2.add(1, f"return pos + max({m}, 0)")
                functions.append("\n".join(s2.lines))
            src.add(indent, f"for _ in range({n}): pos = {skip}(buf, pos)")
        if f.type != "string" and f.type != "bytes" and not f.is_array:
            return "False"
        return f"{n} == -1"

    def _struct_skipper(self, path: tuple[str, ...], fields: tuple[FieldDecl, ...], version: int, flexible: bool,
                        functions: list[str], what: str) -> str:
        fn = "_skip_" + "_".join(path).replace(".", "_") + f"_v{version}"
        if any(x.startswith(f"def {fn}(") for x in functions):
            return fn
        src = Source()
        src.add(0, f"def {fn}(buf, pos):")
        self._skip_struct_body(src, path, fields, version, flexible, functions, what, 1)
        src.add(1, "return pos")
        functions.append("\n".join(src.lines))
        return fn

    def _skip_struct_body(self, src: Source, path: tuple[str, ...], fields: tuple[FieldDecl, ...], version: int,
                          flexible: bool, functions: list[str], what: str, indent: int) -> None:
        for f in fields:
            if version in f.versions and version not in f.tagged:
                self._skip_field(src, path, f, version, flexible, functions, what, indent)
        if flexible:
            src.add(indent, "if buf[pos] == 0: pos += 1")  # no tagged field: the common case
            src.add(indent, "else:")
            src.add(indent + 1, "count, pos = _uvarint_at(buf, pos)")
            src.add(indent + 1, "for _ in range(count):")
            src.add(indent + 2, "tag, pos = _uvarint_at(buf, pos)")
            src.add(indent + 2, "size, pos = _uvarint_at(buf, pos)")
            src.add(indent + 2, "pos += size")
        src.add(indent, "if pos > len(buf): raise SchemaError(" f"f'{what}: a value ends past the buffer')")

    def _null_check(self, src: Source, f: FieldDecl, nullable: bool, n: str, out: str, what: str,
                    indent: int) -> None:
        if nullable:
            src.add(indent, f"{out} = None")
        else:
            src.add(indent, f"if {n} == -1: raise SchemaError(f'{what}: non-nullable field \"{f.name}\" was "
                            "serialized as null')")

    def _item_reader(self, path: tuple[str, ...], f: FieldDecl, version: int, flexible: bool, raw: bool,
                     functions: list[str], what: str) -> str:
        if f.element == "string":
            fn = f"_read_string_{'c' if flexible else 'k'}"
            if not any(x.startswith(f"def {fn}(") for x in functions):
                src = Source()
                src.add(0, f"def {fn}(buf, pos):")
                n = self._read_length(src, flexible, "h", 1)
                src.add(1, f"if {n} < 0 or pos + {n} > len(buf): raise SchemaError("
                           f"f'{what}: a string of an array has invalid length {{{n}}}')")
                src.add(1, f"return _utf8(buf[pos:pos + {n}]), pos + {n}")
                functions.append("\n".join(src.lines))
            return fn
        return self._struct_reader((*path, f.name), f.fields, version, flexible, raw, functions, what)

    def _read_tags(self, src: Source, path: tuple[str, ...], tagged: list[FieldDecl], version: int, raw: bool,
                   functions: list[str], what: str, values: dict[str, str]) -> None:
        src.add(2, "at = 'tagged fields'")
        count = self._read_length(src, True, "i", 2)
        src.add(2, "last = -1")
        src.add(2, f"for _ in range({count} + 1):")
        src.add(3, "tag = buf[pos]")
        src.add(3, "if tag < 0x80: pos += 1")
        src.add(3, "else: tag, pos = _uvarint_at(buf, pos)")
        src.add(3, "size = buf[pos]")
        src.add(3, "if size < 0x80: pos += 1")
        src.add(3, "else: size, pos = _uvarint_at(buf, pos)")
        src.add(3, f"if tag <= last: raise SchemaError(f'{what}: tagged fields out of order ({{tag}} after "
                   "{last})')")
        src.add(3, "last = tag")
        src.add(3, "end = pos + size")
        src.add(3, f"if end > len(buf): raise SchemaError(f'{what}: tag {{tag}} needs {{size}} bytes at position "
                   "{pos}')")
        for i, f in enumerate(tagged):
            src.add(3, f"{'if' if i == 0 else 'elif'} tag == {f.tag}:")
            src.add(4, f"at = \"{f.name}\"")
            if f.type in FORMAT:  # fixed width: the size says it all
                width = WIDTH[FORMAT[f.type]]
                src.add(4, f"if size != {width}: raise SchemaError(f'{what}: tagged field \"{f.name}\" has "
                           f"{{size}} bytes, its value takes {width}')")
                name = src.fresh("v")
                src.add(4, f"({name},) = {self._constant(struct.Struct('>' + FORMAT[f.type]))}.unpack_from(buf, pos)")
                values[f.name] = name
                continue
            src.add(4, "start = pos")  # a value read past `end` is caught just below
            inner = self._read_field(src, path, f, version, True, raw, functions, what, 4)
            src.add(4, f"if pos != end: raise SchemaError(f'{what}: tagged field \"{f.name}\" has {{end - start}} "
                       "bytes, its value takes {pos - start}')")
            values[f.name] = inner
        src.add(3, "pos = end")
        # the values of absent tags: their defaults, set before the loop
        for f in tagged:
            src.lines.insert(_loop_start(src), f"        {values[f.name]} = {self._constant(f.default)}")

def _loop_start(src: Source) -> int:
    """Where the tagged-field loop's count is read (defaults go just before it)."""
    return next(i for i, line in enumerate(src.lines) if line.strip() == "at = 'tagged fields'")


_SHARED: list[Codec] = []


def shared_codec() -> Codec:
    """The codec of the bundled declarations (`messages/`), which the record modules bind their classes to."""
    if not _SHARED:
        _SHARED.append(Codec(load_messages()))
    return _SHARED[0]
