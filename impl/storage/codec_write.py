"""The codec's writer compiler: Python source that encodes a (message, version) as Kafka's generated code does.

Owns `WriterSource` (for one `Codec`: its class bindings and its named constants): the source of a struct's writer
(fixed-width runs packed by one `struct`, compact or classic lengths, the tagged-field section with only the fields
that differ from their defaults, a field absent from the version refused unless it holds its default or is
ignorable) and of one field's. The codec compiles and caches what it returns.
Must not import: `kcoord.model`.
"""

from __future__ import annotations

import struct
from collections.abc import Callable, Mapping
from typing import Any

from ._codegen import FORMAT, WIDTH, Source, runs
from ._varint import uvarint
from .declarations import INTEGERS, FieldDecl


class WriterSource:
    """`bindings`: struct path -> the class its values are (the codec's, as `Codec.bind` fills it); `constant`: a
    module-level name for a value the generated code uses (`Codec._constant`)."""

    def __init__(self, bindings: Mapping[tuple[str, ...], type], constant: Callable[[Any], str]) -> None:
        self._bindings = bindings
        self._constant = constant

    def struct_writer(self, path: tuple[str, ...], fields: tuple[FieldDecl, ...], version: int, flexible: bool,
                       raw: bool, functions: list[str], what: str) -> str:
        fn = "_write_" + "_".join(path).replace(".", "_") + f"_v{version}{'_raw' if raw else ''}"
        if any(f.startswith(f"def {fn}(") for f in functions):
            return fn
        src = Source()
        src.add(0, f"def {fn}(o, out):")
        src.add(1, "at = ''")
        src.add(1, "try:")
        cls = None if raw else self._bindings.get(path)
        get = {f.name: (f"o.{f.snake}" if cls is not None else f"o[{k}]") for k, f in enumerate(fields)}
        for f in fields:
            if not f.present(version) or (version in f.tagged and not flexible):
                if f.ignorable:
                    continue
                src.add(2, f"if {get[f.name]} != {self._constant(f.default)}: raise SchemaError("
                           f"f'{what}: cannot write {f.name}={{{get[f.name]}!r}}: the field does not exist in this "
                           "version (only its default can be written)')")
        for run in runs(fields, version):
            if run[0].type in FORMAT:
                fmt = self._constant(struct.Struct(">" + "".join(FORMAT[f.type] for f in run)))
                src.add(2, f"at = {run[0].name!r}")
                src.add(2, f"out.append({fmt}.pack({', '.join(get[f.name] for f in run)}))")
                continue
            (f,) = run
            src.add(2, f"at = \"{f.name}\"")
            self.write_field(src, path, f, get[f.name], version, flexible, raw, functions, what, 2)
        if flexible:
            tagged = sorted((f for f in fields if version in f.tagged), key=lambda f: f.tag or 0)
            if not tagged:
                src.add(2, "out.append(b'\\x00')")
            else:
                src.add(2, "tags = []")
                for f in tagged:
                    if f.is_struct and not f.is_array:  # Kafka writes a struct unless it is a default-made one
                        blank = self._constant(self._blank_struct((*path, f.name), f.fields, raw))
                        src.add(2, f"if {get[f.name]} is None or {get[f.name]} != {blank}:")
                    else:
                        src.add(2, f"if {get[f.name]} != {self._constant(f.default)}:")
                    if f.type in FORMAT:  # fixed width: tag and size are constants
                        head = uvarint(f.tag or 0) + uvarint(WIDTH[FORMAT[f.type]])
                        fmt = self._constant(struct.Struct(">" + FORMAT[f.type]))
                        src.add(3, f"tags.append({self._constant(head)} + {fmt}.pack({get[f.name]}))")
                        continue
                    src.add(3, "part = []")
                    self.write_field(src, path, f, get[f.name], version, True, raw, functions, what, 3, "part")
                    src.add(3, "data = b''.join(part)")
                    src.add(3, f"tags.append(uvarint({f.tag}) + uvarint(len(data)) + data)")
                src.add(2, "out.append(uvarint(len(tags)))")
                src.add(2, "out.extend(tags)")
        src.add(1, "except (struct.error, TypeError, AttributeError, UnicodeEncodeError) as e:")
        src.add(2, f"raise SchemaError(f'{what}: cannot write field {{at!r}}: {{e}}') from None")
        functions.append("\n".join(src.lines))
        return fn

    def _blank_struct(self, path: tuple[str, ...], fields: tuple[FieldDecl, ...], raw: bool) -> Any:
        """A struct with every field at its default, in the form the writer is given (Kafka's `new X()`)."""
        cls = None if raw else self._bindings.get(path)
        if cls is None:
            return tuple(f.default for f in fields)
        return cls(**{f.snake: f.default for f in fields})

    def _write_length(self, src: Source, flexible: bool, classic: str, n: str, indent: int, out: str) -> None:
        if flexible:
            src.add(indent, f"{out}.append(uvarint({n} + 1))")
        else:
            src.add(indent, f"{out}.append({self._constant(struct.Struct('>' + classic))}.pack({n}))")

    def write_field(self, src: Source, path: tuple[str, ...], f: FieldDecl, value: str, version: int,
                     flexible: bool, raw: bool, functions: list[str], what: str, indent: int,
                     out: str = "out") -> None:
        nullable = version in f.nullable
        v = src.fresh("w")
        src.add(indent, f"{v} = {value}")
        if f.type in FORMAT:
            src.add(indent, f"{out}.append({self._constant(struct.Struct('>' + FORMAT[f.type]))}.pack({v}))")
            return
        if f.type == "uuid":
            src.add(indent, f"{out}.append({v}.bytes)")
            return
        if f.is_array or f.is_struct:
            src.add(indent, f"if type({v}) is Encoded: {out}.append({v}.data)")
            src.add(indent, "else:")
            indent += 1
        if not f.is_struct or f.is_array:
            classic = "h" if f.type == "string" else "i"
            src.add(indent, f"if {v} is None:")
            if nullable:
                self._write_length(src, flexible, classic, "-1", indent + 1, out)
            else:
                src.add(indent + 1, f"raise SchemaError('{what}: non-nullable field {f.name} is None')")
            src.add(indent, "else:")
            if f.type == "string":
                src.add(indent + 1, f"{v} = {v}.encode('utf-8')")
            self._write_length(src, flexible, classic, f"len({v})", indent + 1, out)
            if not f.is_array:
                src.add(indent + 1, f"{out}.append({v})")
            elif f.element in INTEGERS:
                src.add(indent + 1, f"{out}.append(struct.pack(f'>{{len({v})}}{FORMAT[f.element]}', *{v}))")
            else:
                item = self._item_writer(path, f, version, flexible, raw, functions, what)
                src.add(indent + 1, f"for x in {v}: {item}(x, {out})")
            return
        item = self.struct_writer((*path, f.name), f.fields, version, flexible, raw, functions, what)
        if nullable:
            src.add(indent, f"if {v} is None: {out}.append({'b' + repr(chr(0)) if flexible else 'bytes((255,))'})")
            src.add(indent, "else:")
            src.add(indent + 1, f"{out}.append(bytes((1,)))")
            src.add(indent + 1, f"{item}({v}, {out})")
        else:
            src.add(indent, f"{item}({v}, {out})")

    def _item_writer(self, path: tuple[str, ...], f: FieldDecl, version: int, flexible: bool, raw: bool,
                     functions: list[str], what: str) -> str:
        if f.element == "string":
            fn = f"_write_string_{'c' if flexible else 'k'}"
            if not any(x.startswith(f"def {fn}(") for x in functions):
                src = Source()
                src.add(0, f"def {fn}(s, out):")
                src.add(1, "data = s.encode('utf-8')")
                self._write_length(src, flexible, "h", "len(data)", 1, "out")
                src.add(1, "out.append(data)")
                functions.append("\n".join(src.lines))
            return fn
        return self.struct_writer((*path, f.name), f.fields, version, flexible, raw, functions, what)
