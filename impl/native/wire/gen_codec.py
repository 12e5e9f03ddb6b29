"""Generate the Rust wire codec of `kcoord-wire` (`src/generated/`) from Apache Kafka's own message declarations.

Owns: the table of API versions covered (`COVERED`: what `kcoord serve` advertises, kept equal to
`kcoord.impl.server.apis.SERVED` by tests/impl/native/test_wire_codec.py) and rendering the messages `kafka_json`
reads into one Rust module per API. Each message becomes one Rust struct whose fields cover every version;
`decode`/`encode` branch on the version per field (no dynamic dispatch, no serde). Deterministic: sorted iteration,
no timestamps, the same bytes for the same jar.
Must not import: anything outside the standard library and `kafka_json` (in particular not `kcoord.model`).

    python -m kcoord.impl.native.wire.gen_codec [--jar build/kafka/libs/kafka-clients-*.jar] [--check]
"""

from __future__ import annotations

import argparse
import json
import re
import sys
from collections.abc import Iterator, Mapping
from dataclasses import dataclass
from pathlib import Path
from types import MappingProxyType
from typing import Final

from .kafka_json import MAX_VERSION, PRIMITIVES, DeclarationError, Field, Message, Struct, Versions, read_jar

ROOT: Final = Path(__file__).resolve().parents[3]
OUT_DIR: Final = Path(__file__).resolve().parent / "src" / "generated"
JAR_GLOB: Final = "build/kafka/libs/kafka-clients-*.jar"

#: api key -> (lowest, highest) version covered: `kcoord serve`'s advertised ranges (impl/server/apis.py SERVED, plus
#: ApiVersions 0..4, which the wire layer serves). Versions the jar's JSON lacks are left out and listed in mod.rs.
COVERED: Final[Mapping[int, tuple[int, int]]] = MappingProxyType({
    0: (3, 12), 1: (4, 16), 2: (1, 11), 3: (1, 13), 8: (2, 9), 9: (1, 9), 10: (0, 6), 11: (2, 7), 12: (0, 4),
    13: (0, 5), 14: (0, 5), 15: (0, 6), 16: (0, 5), 18: (0, 4), 19: (2, 7), 22: (0, 5), 23: (2, 4), 24: (0, 5),
    25: (0, 4), 26: (0, 5), 27: (1, 1), 28: (0, 5), 32: (1, 4), 42: (0, 2), 47: (0, 0), 60: (0, 1), 61: (0, 0),
    65: (0, 0), 66: (0, 2), 68: (0, 1), 69: (0, 0), 75: (0, 0),
})


# ---------------------------------------------------------------------------------------------- Rust rendering


def condition(versions: Versions, valid: Versions) -> str | None:
    """A Rust condition on `version` that holds for `versions` within `valid`; None when it always holds."""
    have = versions.meet(valid)
    assert not have.empty(), f"no version of {versions} in {valid}"
    if have == valid:
        return None
    if have.low == valid.low:
        return f"version <= {have.high}"
    if have.high == valid.high:
        return f"version >= {have.low}"
    if have.low == have.high:
        return f"version == {have.low}"
    return f"({have.low}..={have.high}).contains(&version)"


def negate(cond: str) -> str:
    """The opposite of a `condition`: `version >= 3` -> `version < 3`, a range test -> `!(..).contains(..)`."""
    for op, opposite in ((">=", "<"), ("<=", ">"), ("==", "!=")):
        if cond.startswith(f"version {op} "):
            return cond.replace(op, opposite, 1)
    return f"!{cond}"


@dataclass(frozen=True, slots=True)
class Ctx:
    """What rendering one message's fields needs: its valid and flexible versions and its struct names."""

    valid: Versions
    flexible: Versions

    def flex(self, field: Field) -> str:
        """The Rust expression saying whether `field` is written in its compact form."""
        if field.flexible is None:
            return "flexible"
        cond = condition(field.flexible, self.valid) if not field.flexible.meet(self.valid).empty() else "false"
        return "true" if cond is None else cond


def rust_type(field: Field) -> str:
    inner = PRIMITIVES.get(field.base, field.base)
    inner = f"Vec<{inner}>" if field.array else inner
    return f"Option<{inner}>" if field.optional else inner


def default_value(field: Field) -> str:
    """The field's default as a non-optional Rust value (Kafka's: 0, false, "", empty, the struct's default)."""
    text = field.default
    if field.array:
        return "Vec::new()"
    if field.struct:
        return f"{field.base}::default()"
    if field.base in ("string",):
        return "String::new()" if not text or text == "null" else f"String::from({json.dumps(text)})"
    if field.base in ("bytes", "records"):
        return "Vec::new()"
    if field.base == "uuid":
        return "[0u8; 16]"
    if field.base == "bool":
        return "true" if (text or "false").lower() == "true" else "false"
    if field.base == "float64":
        return repr(float(text or "0"))
    return str(int(text or "0", 0))


def default_expr(field: Field) -> str:
    if field.optional:
        return "None" if field.default == "null" else f"Some({default_value(field)})"
    return default_value(field)


def not_default(field: Field) -> str:
    """A Rust condition that holds when `self.<field>` differs from its default value."""
    this, plain = f"self.{field.rust}", default_value(field)
    if field.optional and field.default == "null":
        return f"{this}.is_some()"
    if field.base == "string" and not field.array and plain != "String::new()":
        literal = json.dumps(field.default)
        return f"{this}.as_deref() != Some({literal})" if field.optional else f"{this} != {literal}"
    if plain in ("Vec::new()", "String::new()"):
        return f"{this}.as_ref().is_none_or(|v| !v.is_empty())" if field.optional else f"!{this}.is_empty()"
    if field.base == "bool" and not field.optional:
        return f"!{this}" if plain == "true" else this
    return f"{this}.as_ref() != Some(&{plain})" if field.optional else f"{this} != {plain}"


def derivable(struct: Struct) -> bool:
    """Whether every field's default is its Rust type's own, so `#[derive(Default)]` says the same."""
    natural = {"0", "false", "String::new()", "Vec::new()", "None", "[0u8; 16]", "0.0"}
    return all(default_expr(f) in natural or default_expr(f) == f"{f.base}::default()" for f in struct.fields)


INT_READERS: Final = frozenset({"int8", "int16", "int32", "int64", "uint16", "uint32", "float64"})


def bare(value: str) -> str:
    """`&self.x` as `self.x` (for a method call); `e` stays `e`."""
    return value[1:] if value.startswith("&") else value


def deref(value: str) -> str:
    """The value behind a reference expression: `&self.x` -> `self.x`, `e` -> `*e`."""
    return value[1:] if value.startswith("&") else f"*{value}"


@dataclass(frozen=True, slots=True)
class Site:
    """Where a field is read from or written to: the reader/writer expressions and the `flexible` expression."""

    call: str  # `r` / `t`: the reader or writer variable
    ref: str  # `r` / `&mut t`: the same as a `&mut` argument
    flex: str


def nullable_cond(field: Field, ctx: Ctx) -> str | bool | None:
    """Whether `field` may be null in the version at hand: True, False, or a condition (within its versions)."""
    have = field.versions.meet(ctx.valid)
    nullable = field.nullable.meet(have)
    if nullable.empty():
        return False
    return condition(nullable, have) or True


def read_one(field: Field, site: Site, nullable: bool) -> str:
    """A Rust expression reading one value of the field's base type (an element, for arrays)."""
    base, r = field.base, site.call
    if base in INT_READERS:
        return f"{r}.{PRIMITIVES[base]}()?"
    if base in ("bool", "uuid"):
        return f"{r}.{base}()?"
    if base == "string" or base in ("bytes", "records"):
        kind = "string" if base == "string" else "bytes"
        return f"{r}.nullable_{kind}({site.flex})?" if nullable else f'{r}.{kind}({site.flex}, "{field.name}")?'
    decode = f"{base}::decode({site.ref}, version)?"
    return f"if {r}.struct_present()? {{ Some({decode}) }} else {{ None }}" if nullable else decode


def read_value(field: Field, site: Site, ctx: Ctx) -> str:
    """A Rust expression of the field's Rust type, read in a version where the field is present."""
    def one(nullable: bool) -> str:
        if not field.array:
            return read_one(field, site, nullable)
        elem = read_one(field, site, False)
        fill = f"let mut v = Vec::with_capacity(n); for _ in 0..n {{ v.push({elem}); }}"
        if nullable:
            length = f"{site.call}.nullable_array_len({site.flex})?"
            return f"match {length} {{ None => None, Some(n) => {{ {fill} Some(v) }} }}"
        return f'{{ let n = {site.call}.array_len({site.flex}, "{field.name}")?; {fill} v }}'

    cond = nullable_cond(field, ctx)
    if cond is True:
        return one(True)
    plain = one(False)
    if field.optional:
        plain = f"Some({plain})"
    return plain if cond is False else f"if {cond} {{ {one(True)} }} else {{ {plain} }}"


def put_one(field: Field, site: Site, value: str) -> str:
    """Rust statements writing one value (`value` is a reference) of the field's base type."""
    base = field.base
    if base in INT_READERS or base == "bool":
        return f"put_{PRIMITIVES[base] if base != 'bool' else 'bool'}({site.ref}, {deref(value)});"
    if base == "uuid":
        return f"put_uuid({site.ref}, {value});"
    if base == "string":
        return f"put_string({site.ref}, {site.flex}, {value})?;"
    if base in ("bytes", "records"):
        return f"put_bytes({site.ref}, {site.flex}, {value});"
    return f"{bare(value)}.encode({site.ref}, version)?;"


def put_present(field: Field, site: Site, value: str) -> str:
    """Rust statements writing a present (non-null) value: an array with its length, a nullable struct's marker."""
    if field.array:
        return (f"put_array_len({site.ref}, {site.flex}, {bare(value)}.len()); "
                f"for e in {value} {{ {put_one(field, site, 'e')} }}")
    return put_one(field, site, value)


def put_value(field: Field, site: Site, ctx: Ctx, owner: str) -> str:
    """Rust statements writing `self.<field>` in a version where the field is present."""
    this = f"&self.{field.rust}"
    if not field.optional:
        return put_present(field, site, this)
    null_kind = "array" if field.array else ("string" if field.base == "string" else (
        "bytes" if field.base in ("bytes", "records") else "struct"))
    marker = f"put_i8({site.ref}, 1); " if null_kind == "struct" else ""
    put_null = (f"put_i8({site.ref}, -1);" if null_kind == "struct"
                else f"put_null_{null_kind}({site.ref}, {site.flex});")
    refuse = f'return Err(WireError::NullNotAllowed {{ field: "{owner}.{field.name}", version }})'
    nullable = f"match {this} {{ Some(v) => {{ {marker}{put_present(field, site, 'v')} }} None => {{ {put_null} }} }}"
    plain = f"match {this} {{ Some(v) => {{ {put_present(field, site, 'v')} }} None => {refuse}, }}"
    cond = nullable_cond(field, ctx)
    if cond is True:
        return nullable
    return plain if cond is False else f"if {cond} {{ {nullable} }} else {{ {plain} }}"


def dump_one(field: Field, value: str) -> str:
    base = field.base
    if base in INT_READERS - {"float64"} or base == "bool":
        return f"dump_display(out, {deref(value)});"
    if base == "float64":
        return f"dump_f64(out, {deref(value)});"
    if base == "string":
        return f"dump_str(out, {value});"
    if base in ("bytes", "records", "uuid"):
        return f"dump_hex(out, {value});"
    return f"{bare(value)}.dump_json(out, version);"


def dump_value(field: Field) -> str:
    def present(value: str) -> str:
        if not field.array:
            return dump_one(field, value)
        return (f"out.push('['); for (i, e) in {bare(value)}.iter().enumerate() {{ if i > 0 {{ out.push(','); }} "
                f"{dump_one(field, 'e')} }} out.push(']');")

    this = f"&self.{field.rust}"
    if field.optional:
        return f'match {this} {{ Some(v) => {{ {present("v")} }} None => out.push_str("null"), }}'
    return present(this)


def uses(body: str, name: str) -> bool:
    """Whether generated code refers to the local `name` (not a field `.name` or a string "name")."""
    return re.search(rf'(?<![."\w#]){name}\b(?!")', body) is not None


def prologue(body: list[str], ctx: Ctx) -> list[str]:
    flexible = "false" if ctx.flexible.meet(ctx.valid).empty() else (condition(ctx.flexible, ctx.valid) or "true")
    return [f"let flexible = {flexible};", *body] if uses("\n".join(body), "flexible") else body


def regular(field: Field, ctx: Ctx) -> str | bool | None:
    """The condition under which `field` is in the fixed part: True (always), False (never), or a condition."""
    if field.tag is not None or field.versions.meet(ctx.valid).empty():
        return False
    return condition(field.versions, ctx.valid) or True


def tagged(struct: Struct, ctx: Ctx) -> list[tuple[Field, str | None]]:
    """The struct's tagged fields that some valid version has, by tag, with the condition they are tagged under."""
    out = []
    for field in sorted((f for f in struct.fields if f.tag is not None), key=lambda f: f.tag or 0):
        have = field.tagged.meet(field.versions).meet(ctx.flexible)
        if not have.meet(ctx.valid).empty():
            out.append((field, condition(have, ctx.valid)))
    return out


def guarded(cond: str | bool | None, stmt: str) -> str:
    return stmt if cond is True or cond is None else f"if {cond} {{ {stmt} }}"


def decode_fn(struct: Struct, ctx: Ctx) -> list[str]:
    fixed = Site("r", "r", "")
    body = ["let mut this = Self::default();"]
    for field in struct.fields:
        cond = regular(field, ctx)
        if cond is not False:
            site = Site(fixed.call, fixed.ref, ctx.flex(field))
            body.append(guarded(cond, f"this.{field.rust} = {read_value(field, site, ctx)};"))
    if not ctx.flexible.meet(ctx.valid).empty():
        arms = []
        for field, cond in tagged(struct, ctx):
            read = read_value(field, Site("t", "&mut t", "true"), ctx)
            arms.append(f"{field.tag}{'' if cond is None else f' if {cond}'} => this.{field.rust} = {read},")
        if arms:
            body.append("if flexible { for _ in 0..r.uvarint()? { let tag = r.uvarint()?; let mut t = r.tagged()?; "
                        f"match tag {{ {' '.join(arms)} _ => {{ let _ = &mut t; }} }} }} }}")
        else:
            body.append("if flexible { r.skip_tagged_fields()?; }")
    body = prologue([*body, "Ok(this)"], ctx)
    arg = "version" if uses("\n".join(body), "version") else "_version"
    return [f"pub fn decode(r: &mut Reader<'_>, {arg}: i16) -> Result<Self, WireError> {{", *body, "}"]


def unsupported(field: Field, owner: str, unless: str | None = None) -> str:
    """Refuse a non-default value for a field the version has not (Kafka's UnsupportedVersionException)."""
    when = not_default(field) if unless is None else f"{negate(unless)} && {not_default(field)}"
    return f'if {when} {{ return Err(WireError::UnsupportedField {{ field: "{owner}.{field.name}", version }}); }}'


def encode_fn(struct: Struct, ctx: Ctx, owner: str) -> list[str]:
    body = []
    for field in struct.fields:
        cond = regular(field, ctx)
        site = Site("w", "w", ctx.flex(field))
        if cond is True:
            body.append(put_value(field, site, ctx, owner))
        elif cond is not False:
            refuse = "" if field.ignorable else f" else {unsupported(field, owner)}"
            body.append(f"if {cond} {{ {put_value(field, site, ctx, owner)} }}{refuse}")
        elif field.tag is None and not field.ignorable:
            body.append(unsupported(field, owner))
    tags = tagged(struct, ctx)
    body += [unsupported(f, owner, unless=c) for f, c in tags if c is not None and not f.ignorable]
    if not ctx.flexible.meet(ctx.valid).empty():
        wanted = [(f, f"{'' if c is None else f'{c} && '}{not_default(f)}") for f, c in tags]
        if wanted:
            body += ["if flexible {", "    let mut tags = 0u32;"]
            body += [f"    if {when} {{ tags += 1; }}" for _, when in wanted]
            body.append("    put_uvarint(w, tags);")
            body += [f"    if {when} {{ put_uvarint(w, {f.tag}); let mut t = Vec::new(); "
                     f"{put_value(f, Site('t', '&mut t', 'true'), ctx, owner)} put_uvarint(w, t.len() as u32); "
                     "w.extend_from_slice(&t); }" for f, when in wanted]
            body.append("}")
        else:
            body.append("if flexible { put_uvarint(w, 0); }")
    body = prologue([*body, "Ok(())"], ctx)
    arg = "version" if uses("\n".join(body), "version") else "_version"
    return [f"pub fn encode(&self, w: &mut Vec<u8>, {arg}: i16) -> Result<(), WireError> {{", *body, "}"]


def dump_fn(struct: Struct, ctx: Ctx) -> list[str]:
    body = ["out.push('{');"]
    present = [f for f in struct.fields if not f.versions.meet(ctx.valid).empty()]
    if present:
        body.append("let mut first = true;")
    for field in present:
        cond = condition(field.versions, ctx.valid)
        body.append(guarded(cond, f'json_key(out, &mut first, "{field.snake}"); {dump_value(field)}'))
    body.append("out.push('}');")
    arg = "version" if uses("\n".join(body), "version") else "_version"
    return ["/// The fields present in `version`, as one JSON object (snake_case names; bytes and uuids in hex).",
            f"pub fn dump_json(&self, out: &mut String, {arg}: i16) {{", *body, "}"]


def doc(text: str, indent: str) -> list[str]:
    return [f"{indent}/// {line}".rstrip() for line in text.splitlines()] if text else []


def field_doc(field: Field) -> str:
    def show(v: Versions) -> str:
        return "none" if v.empty() else (f"{v.low}+" if v.high == MAX_VERSION else f"{v.low}-{v.high}")

    notes = [f"versions {show(field.versions)}"]
    if field.optional:
        notes.append(f"nullable {show(field.nullable)}")
    if field.tag is not None:
        notes.append(f"tag {field.tag} in {show(field.tagged)}")
    if field.default is not None:
        notes.append(f"default {field.default}")
    if field.ignorable:
        notes.append("ignorable")
    return f"{field.about}\n({', '.join(notes)})" if field.about else f"({', '.join(notes)})"


def render_struct(struct: Struct, ctx: Ctx, message: str) -> list[str]:
    owner = struct.name if struct.name == message else f"{message}.{struct.name}"
    derives = "Debug, Clone, PartialEq, Default" if derivable(struct) else "Debug, Clone, PartialEq"
    out = [*doc(struct.about, ""), f"#[derive({derives})]", f"pub struct {struct.name} {{"]
    for field in struct.fields:
        out += [*doc(field_doc(field), "    "), f"    pub {field.rust}: {rust_type(field)},"]
    out += ["}", ""]
    if not derivable(struct):
        out += [f"impl Default for {struct.name} {{", "    fn default() -> Self {", "        Self {"]
        out += [f"            {field.rust}: {default_expr(field)}," for field in struct.fields]
        out += ["        }", "    }", "}", ""]
    out.append(f"impl {struct.name} {{")
    for fn in (decode_fn(struct, ctx), encode_fn(struct, ctx, owner), dump_fn(struct, ctx)):
        out += ["    " + line if line.startswith(("pub fn", "}", "///")) else "        " + line for line in fn]
    return [*out, "}", ""]


def render_message(message: Message) -> list[str]:
    ctx = Ctx(message.valid, message.flexible)
    out = []
    for struct in message.structs:
        out += render_struct(struct, ctx, message.name)
    return out


# ---------------------------------------------------------------------------------------------- files


def header_comment(jar: Path) -> list[str]:
    return [f"// Generated from {jar.name}'s common/message/*.json by impl/native/wire/gen_codec.py: do not edit.",
            "// Regenerate: `python -m kcoord.impl.native.wire.gen_codec` in the repo root (reads build/kafka/libs/).",
            "// decode starts from the defaults and sets the fields the version has: the others keep their defaults",
            "#![allow(clippy::field_reassign_with_default)]", "", "use crate::codec::*;", ""]


def api_module(name: str) -> str:
    return re.sub(r"(?<=[a-z0-9])(?=[A-Z])", "_", name).lower()


@dataclass(frozen=True, slots=True)
class Api:
    key: int
    name: str  # "Produce"
    low: int  # the versions covered: COVERED's range within the jar's validVersions
    high: int
    missing: tuple[int, ...]  # versions COVERED lists but the jar's JSON has not
    request: Message
    response: Message


def apis(messages: Mapping[str, Message]) -> list[Api]:
    by_key = {(m.api_key, m.kind): m for m in messages.values()}
    out = []
    for key, (low, high) in sorted(COVERED.items()):
        request, response = by_key.get((key, "request")), by_key.get((key, "response"))
        if request is None or response is None:
            raise DeclarationError(f"api key {key}: no request and response JSON in the jar, COVERED has {low}-{high}")
        have = Versions(low, high).meet(request.valid).meet(response.valid)
        if have.empty():
            raise DeclarationError(f"api key {key}: the jar has {request.valid}, COVERED lists {low}-{high}")
        missing = tuple(v for v in range(low, high + 1) if not have.contains(v))
        out.append(Api(key, request.name.removesuffix("Request"), have.low, have.high, missing, request, response))
    return out


def header_version(api: Api, kind: str) -> str:
    """A Rust expression of the header version for `api`'s request or response at `version`."""
    message = api.request if kind == "request" else api.response
    plain, flexible = (1, 2) if kind == "request" else (0, 1)
    if api.key == 18 and kind == "response":
        return "0"  # Kafka reads ApiVersionsResponse with header v0 always: a client must parse it before it knows
    have = message.flexible.meet(Versions(api.low, api.high))
    if have.empty():
        return str(plain)
    if have == Versions(api.low, api.high):
        return str(flexible)
    return f"if version >= {have.low} {{ {flexible} }} else {{ {plain} }}"


def dispatch(apis_: list[Api], kind: str) -> list[str]:
    enum = kind.capitalize()
    out = [f"/// A {kind} body of any covered API.", "#[derive(Debug, Clone, PartialEq)]", f"pub enum {enum} {{"]
    out += [f"    {a.name}({api_module(a.name)}::{kind}::{a.name}{enum})," for a in apis_]
    out += ["}", "", f"impl {enum} {{",
            "    /// Decodes a body of `api_key` at `version`; versions outside `COVERED` are refused.",
            "    pub fn decode(api_key: i16, version: i16, r: &mut Reader<'_>) -> Result<Self, WireError> {",
            "        match (api_key, version) {"]
    out += [f"            ({a.key}, {a.low}..={a.high}) => Ok(Self::{a.name}({api_module(a.name)}::{kind}::"
            f"{a.name}{enum}::decode(r, version)?))," for a in apis_]
    out += ["            _ => Err(WireError::UnsupportedVersion { api_key, version }),", "        }", "    }", "",
            "    pub fn api_key(&self) -> i16 {", "        match self {"]
    out += [f"            Self::{a.name}(_) => {a.key}," for a in apis_]
    out += ["        }", "    }", "", "    /// Encodes the body at `version`; versions outside `COVERED` are refused.",
            "    pub fn encode(&self, w: &mut Vec<u8>, version: i16) -> Result<(), WireError> {",
            "        let api_key = self.api_key();",
            "        if !covers(api_key, version) {",
            "            return Err(WireError::UnsupportedVersion { api_key, version });", "        }",
            "        match self {"]
    out += [f"            Self::{a.name}(m) => m.encode(w, version)," for a in apis_]
    out += ["        }", "    }", "", "    pub fn dump_json(&self, out: &mut String, version: i16) {",
            "        match self {"]
    out += [f"            Self::{a.name}(m) => m.dump_json(out, version)," for a in apis_]
    return [*out, "        }", "    }", "}", ""]


def render_mod(apis_: list[Api], jar: Path) -> str:
    out = [*header_comment(jar)[:2], "", "use crate::codec::*;", ""]
    out += ["pub mod header;"] + [f"pub mod {api_module(a.name)};" for a in apis_] + [""]
    missing = [f"{a.name} v{v}" for a in apis_ for v in a.missing]
    out += ["/// (api key, name, lowest, highest version) of every API covered: `kcoord serve`'s advertised ranges",
            f"/// within what {jar.name} declares.",
            f"/// Advertised but not declared there, so not covered: {', '.join(missing) or 'none'}.",
            "pub const COVERED: &[(i16, &str, i16, i16)] = &["]
    out += [f'    ({a.key}, "{a.name}", {a.low}, {a.high}),' for a in apis_]
    out += ["];", "", "pub fn covers(api_key: i16, version: i16) -> bool {",
            "    COVERED.iter().any(|&(key, _, low, high)| key == api_key && (low..=high).contains(&version))", "}", ""]
    for kind in ("request", "response"):
        out += [f"/// The {kind} header version for a covered `api_key` at `version` (None when not covered).",
                f"pub fn {kind}_header_version(api_key: i16, version: i16) -> Option<i16> {{",
                "    if !covers(api_key, version) {", "        return None;", "    }", "    Some(match api_key {"]
        out += [f"        {a.key} => {header_version(a, kind)}," for a in apis_]
        out += ["        _ => unreachable!(),", "    })", "}", ""]
    out += dispatch(apis_, "request") + dispatch(apis_, "response")
    return "\n".join(out).rstrip() + "\n"


def render_pair(first: tuple[str, Message], second: tuple[str, Message], jar: Path) -> str:
    out = header_comment(jar)
    for module, message in (first, second):
        out += [f"pub mod {module} {{", "    use super::*;", ""]
        out += ["    " + line if line else "" for line in render_message(message)]
        out = out[:-1] if out[-1] == "" else out
        out += ["}", ""]
    return "\n".join(out).rstrip() + "\n"


def render(messages: Mapping[str, Message], jar: Path) -> dict[str, str]:
    """Every generated file, by name, as text."""
    covered = apis(messages)
    files = {"mod.rs": render_mod(covered, jar),
             "header.rs": render_pair(("request_header", messages["RequestHeader"]),
                                      ("response_header", messages["ResponseHeader"]), jar)}
    for api in covered:
        files[f"{api_module(api.name)}.rs"] = render_pair(("request", api.request), ("response", api.response), jar)
    return files


def find_jar(root: Path) -> Path:
    found = sorted(root.glob(JAR_GLOB))
    if len(found) != 1:
        raise DeclarationError(f"expected one jar matching {root / JAR_GLOB}, found {len(found)}: run `make` first "
                               "or pass --jar")
    return found[0]


def iter_stale(out_dir: Path, files: Mapping[str, str]) -> Iterator[Path]:
    yield from (p for p in sorted(out_dir.glob("*.rs")) if p.name not in files)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0] if __doc__ else None)
    parser.add_argument("--jar", type=Path, help=f"the Kafka clients jar (default: {JAR_GLOB} under the repo root)")
    parser.add_argument("--out", type=Path, default=OUT_DIR, help="the directory of the generated Rust modules")
    parser.add_argument("--check", action="store_true", help="only say if the files are up to date (exit 1 if not)")
    args = parser.parse_args(argv)
    try:
        jar = args.jar or find_jar(ROOT)
        files = render(read_jar(jar, COVERED), jar)
    except (DeclarationError, OSError, KeyError, ValueError) as e:
        print(f"gen_codec: {e}", file=sys.stderr)
        return 2
    out_dir: Path = args.out
    stale = [p.name for p in iter_stale(out_dir, files)] if out_dir.is_dir() else []
    changed = [n for n, text in sorted(files.items())
               if not (out_dir / n).is_file() or (out_dir / n).read_text(encoding="utf-8") != text]
    if args.check:
        for name in changed + stale:
            print(f"gen_codec: {out_dir / name} is not what {jar.name} generates", file=sys.stderr)
        return 1 if changed or stale else 0
    out_dir.mkdir(parents=True, exist_ok=True)
    for name in changed:
        (out_dir / name).write_text(files[name], encoding="utf-8")
    for name in stale:
        (out_dir / name).unlink()
    print(f"gen_codec: {len(files)} files in {out_dir} ({len(changed)} rewritten, {len(stale)} removed)")
    return 0


if __name__ == "__main__":
    sys.exit(main())
