"""Generator of every spec machine's decision table as Rust: `impl/_generated/rust/<machine>.rs` and
`impl/_generated/rust/machines.rs` (the modules and `MACHINES`, the machines by name), from the same IR as the Python
tables. The compiled server (`impl/native/server/`, issue 31) takes its decisions from them, as the Python runtime
takes its from `impl/_generated/*.py`; `check-tables` holds each to its Python table case by case
(`conformance/rust_tables.py`, `tests/impl/native/test_rust_tables.py`).

Owns: the layout of a generated Rust module — the machine's states and enums, `Instance` (the state, every key field
and variable), one argument struct per event (`args::EVENT`), `ROWS`, and `decide_EVENT(instance, args, pending)`: the
rows of (state, event) in declaration order, each row's own condition deciding once the earlier ones failed, as
`MachineTable.decide` does; a transition's post-state computed from the pre-state, its variables' bounds and its row's
preconditions checked — plus `decide_json` and `decide_case`, the same over JSON.
Must not import: z3, pyspark.

Every expression means what `kcoord.model.pyexpr.to_python` makes it mean in the Python tables. Where the two
languages differ the Rust is written to agree: integer arithmetic is done in i128 (Python's integers do not wrap; a
sum of i64 values cannot overflow i128) and narrowed to i64 only where a variable takes it, a value beyond i64 being
the bounds error Python's check gives (every integer type of the spec lies within i64); strings compare as `&str`
(byte order is code-point order, as Python compares); sets are `BTreeSet`s compared by `==`, `is_subset` and
`is_empty`, never by Rust's lexicographic `<`. A construct without such a translation (an ordering of enums or sets,
arithmetic stored into a set, a primed variable in a guard, ...) raises `Untranslatable`, naming the machine, the
construct and its spec line, rather than emitting Rust that would answer differently.
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass

from .. import ir
from .common import GeneratedFile, header, module_name

#: Where the Rust tables go (the compiled server includes them from there).
RUST_DIR = "impl/_generated/rust"

#: Rust's keywords (strict and reserved, 2021 edition): no field, event, enum or member may be named one.
RUST_KEYWORDS = frozenset((
    "as", "async", "await", "break", "const", "continue", "crate", "dyn", "else", "enum", "extern", "false", "fn",
    "for", "if", "impl", "in", "let", "loop", "match", "mod", "move", "mut", "pub", "ref", "return", "self", "Self",
    "static", "struct", "super", "trait", "true", "type", "unsafe", "use", "where", "while", "abstract", "become",
    "box", "do", "final", "gen", "macro", "override", "priv", "try", "typeof", "unsized", "virtual", "yield"))
#: Names a generated module defines or imports itself: no enum or event may take one.
GENERATED_NAMES = frozenset(("State", "Instance", "Kind", "Row", "Decision", "ROWS", "BTreeSet", "Serialize",
                             "Deserialize", "String", "Option", "Result", "Some", "None", "Ok", "Err", "args"))
#: What a generated module's code may trigger (as main.rs allows for `transaction`): names as the spec writes them,
#: parentheses the IR keeps, items and arguments a machine does not use.
LINTS_ALLOWED = "non_camel_case_types, non_snake_case, clippy::all, unused_parens, dead_code, unused_variables"
#: Why a decision is refused (`decide_EVENT`'s `Err`); table_cases.py says which one the Python table gave.
NO_ROW, OUT_OF_BOUNDS, PRECONDITION = "no row answers", "a variable out of its type's bounds", "a precondition fails"


class NoRustError(Exception):
    """A machine the generator cannot write as Rust faithfully; the message names the machine, the construct and
    where the spec wrote it (`kcoord gen` prints it and exits 2)."""


class Untranslatable(Exception):
    """A construct of the spec the generator has no faithful Rust for; `span` is where the spec wrote it."""

    def __init__(self, what: str, span: object = None) -> None:
        super().__init__(what)
        self.what, self.span = what, span


def rust_type(t: ir.Type) -> str:
    if isinstance(t, ir.BoolType):
        return "bool"
    if isinstance(t, ir.IntType):
        return "i64"
    if isinstance(t, ir.StringType):
        return "String"
    if isinstance(t, ir.EnumType):
        return t.name
    if isinstance(t, ir.StateType):
        return "State"
    if isinstance(t, ir.SetType):
        return f"BTreeSet<{rust_type(t.element)}>"
    raise Untranslatable(f"a field of type {t}")


def _copy(t: ir.Type) -> bool:
    return isinstance(t, ir.BoolType | ir.IntType | ir.EnumType | ir.StateType)


def _int(value: int, wide: bool = False) -> str:
    """An integer literal, as i64 or (`wide`) i128."""
    if value == -(2**63) and not wide:
        return "i64::MIN"
    suffix = "i128" if wide else "i64"
    return f"({value}{suffix})" if value < 0 else f"{value}{suffix}"


def _literal(value: object, t: ir.Type) -> str:
    """A constant (`Lit`, a variable's default) as an owned Rust value of type `t`."""
    if isinstance(t, ir.EnumType) and isinstance(value, str):
        return f"{t.name}::{value}"
    if isinstance(t, ir.StateType) and isinstance(value, str):
        return f"State::{value}"
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, int):
        return _int(value)
    if isinstance(value, str):
        return f"String::from({_quote(value)})"
    if isinstance(value, frozenset):
        if not value:
            return "BTreeSet::new()"
        if not isinstance(t, ir.SetType):
            raise Untranslatable(f"a set constant of type {t}")
        return "BTreeSet::from([" + ", ".join(_literal(v, t.element) for v in sorted(value, key=repr)) + "])"
    raise Untranslatable(f"the constant {value!r}")


def _quote(s: str) -> str:
    return '"' + s.replace("\\", "\\\\").replace('"', '\\"') + '"'


@dataclass(frozen=True, slots=True)
class Code:
    """Rust source of one IR expression, and what kind of value it is: `place` names a field (borrowed as it is,
    cloned to be owned), `wide` an integer computed in i128, `text` a string literal (a `&'static str`), `empty` the
    empty set written as a literal; otherwise a temporary of `rust_type(type)`. `value`: an integer literal's value
    (written as i64 or i128 as context needs)."""

    code: str
    type: ir.Type
    place: bool = False
    wide: bool = False
    text: bool = False
    empty: bool = False
    value: int | None = None

    def owned(self) -> str:
        if self.wide:
            raise Untranslatable("an integer computed by arithmetic, stored where only an i64 fits")
        if self.text:
            return f"String::from({self.code})"
        return f"{self.code}.clone()" if self.place and not _copy(self.type) else self.code

    def borrowed(self) -> str:
        return f"&{self.code}" if self.place else f"&({self.code})"

    def receiver(self) -> str:
        """As the receiver of a method call (auto-referenced)."""
        return self.code if self.place else f"({self.code})"

    def as_str(self) -> str:
        """A string as `&str`."""
        return self.code if self.text else f"{self.receiver()}.as_str()"

    def int(self, wide: bool) -> str:
        """An integer as i64, or (`wide`) as i128."""
        if self.value is not None:
            return _int(self.value, wide)
        if wide and not self.wide:
            return f"({self.code} as i128)"
        if self.wide and not wide:
            raise Untranslatable("an integer computed by arithmetic, used where only an i64 fits")
        return self.code


def _rust(e: ir.Expr) -> Code:
    t = e.type
    if isinstance(e, ir.Lit):
        if isinstance(e.value, bool):
            return Code("true" if e.value else "false", t)
        if isinstance(e.value, int):
            return Code(_int(e.value), t, value=e.value)
        if isinstance(e.value, str) and isinstance(t, ir.StringType):
            return Code(_quote(e.value), t, text=True)
        return Code(_literal(e.value, t), t, empty=e.value == frozenset())
    if isinstance(e, ir.EnumLit):
        return Code(_literal(e.member, t), t)
    if isinstance(e, ir.VarRef | ir.StateRef) and e.primed:
        raise Untranslatable("a primed variable or state in a guard or an effect", e.span)
    if isinstance(e, ir.VarRef | ir.KeyRef):
        return Code(f"s.{e.name}", t, place=True)
    if isinstance(e, ir.ParamRef):
        return Code(f"a.{e.name}", t, place=True)
    if isinstance(e, ir.StateRef):
        return Code("s.state", t, place=True)
    if isinstance(e, ir.PendingRef):
        return Code("pending", t)
    if isinstance(e, ir.SetLit):
        if not e.items:
            return Code("BTreeSet::new()", t, empty=True)
        return Code("BTreeSet::from([" + ", ".join(_rust(i).owned() for i in e.items) + "])", t)
    if isinstance(e, ir.Ite):
        cond, then, orelse = _rust(e.cond), _rust(e.then), _rust(e.orelse)
        if isinstance(t, ir.IntType):
            wide = then.wide or orelse.wide
            return Code(f"(if {cond.code} {{ {then.int(wide)} }} else {{ {orelse.int(wide)} }})", t, wide=wide)
        return Code(f"(if {cond.code} {{ {then.owned()} }} else {{ {orelse.owned()} }})", t)
    if isinstance(e, ir.Call):
        return _call(e)
    if isinstance(e, ir.Unary):
        operand = _rust(e.operand)
        if e.op == "not":
            return Code(f"(!{operand.code})", t)
        return Code(f"(-{operand.int(True)})", t, wide=True)
    return _binary(e)


def _call(e: ir.Call) -> Code:
    args = [_rust(a) for a in e.args]
    if e.function == "size" and len(args) == 1 and ir.is_set(args[0].type):
        return Code(f"({args[0].receiver()}.len() as i64)", e.type)
    if e.function in ("min", "max") and len(args) == 2 and all(isinstance(a.type, ir.IntType) for a in args):
        wide = any(a.wide for a in args)
        return Code(f"std::cmp::{e.function}({args[0].int(wide)}, {args[1].int(wide)})", e.type, wide=wide)
    raise Untranslatable(f"{e.function}() of {', '.join(str(a.type) for a in args)}", e.span)


_INFIX = {"or": "||", "and": "&&", "eq": "==", "ne": "!=", "lt": "<", "le": "<=", "gt": ">", "ge": ">=", "add": "+",
          "sub": "-", "union": "|", "inter": "&", "diff": "-"}


def _binary(e: ir.Binary) -> Code:
    left, right, t = _rust(e.left), _rust(e.right), e.type
    if e.op == "implies":
        return Code(f"(!{left.code} || {right.code})", t)
    if e.op in ("or", "and"):
        return Code(f"({left.code} {_INFIX[e.op]} {right.code})", t)
    if e.op in ("eq", "ne"):
        return Code(_equal(left, right, e.op == "ne", e.span), t)
    if e.op in ("lt", "le", "gt", "ge"):
        if isinstance(left.type, ir.IntType) and isinstance(right.type, ir.IntType):
            wide = left.wide or right.wide
            return Code(f"({left.int(wide)} {_INFIX[e.op]} {right.int(wide)})", t)
        if isinstance(left.type, ir.StringType) and isinstance(right.type, ir.StringType):
            return Code(f"({left.as_str()} {_INFIX[e.op]} {right.as_str()})", t)
        # Python orders sets by inclusion and enum members by name; Rust's derived orders differ
        raise Untranslatable(f"an ordering ({e.op}) of {left.type}", e.span)
    if e.op in ("add", "sub"):
        return Code(f"({left.int(True)} {_INFIX[e.op]} {right.int(True)})", t, wide=True)
    if e.op == "in":
        return Code(_member(e, left, right), t)
    if e.op == "subset":
        return Code(f"{left.receiver()}.is_subset({right.borrowed()})", t)
    if e.op in ("union", "inter", "diff"):
        return Code(f"({left.borrowed()} {_INFIX[e.op]} {right.borrowed()})", t)
    raise Untranslatable(f"the operator {e.op}", e.span)


def _equal(left: Code, right: Code, negated: bool, span: object) -> str:
    """`left == right` (`!=` when `negated`), by the operands' type; `span` where the spec compares them."""
    op = "!=" if negated else "=="
    lt, rt = left.type, right.type
    if isinstance(lt, ir.IntType) and isinstance(rt, ir.IntType):
        wide = left.wide or right.wide
        return f"({left.int(wide)} {op} {right.int(wide)})"
    if isinstance(lt, ir.StringType) and isinstance(rt, ir.StringType):
        return f"({left.as_str()} {op} {right.as_str()})"
    if ir.is_set(lt) and ir.is_set(rt):
        for empty, other in ((right, left), (left, right)):
            if empty.empty:
                return f"{'!' if negated else ''}{other.receiver()}.is_empty()"
        return f"({left.borrowed()} {op} {right.borrowed()})"
    if _copy(lt) and lt == rt:
        return f"({left.code} {op} {right.code})"
    raise Untranslatable(f"a comparison ({'!=' if negated else '=='}) of {lt} with {rt}", span)


def _member(e: ir.Binary, element: Code, collection: Code) -> str:
    """`element in collection`: a literal set as a disjunction (no set built), any other through `contains`."""
    if isinstance(e.right, ir.SetLit):
        if not e.right.items:
            return "false"
        items = [_rust(i) for i in e.right.items]
        if _copy(element.type) and not element.wide and all(isinstance(i, ir.EnumLit | ir.Lit) for i in e.right.items):
            patterns = " | ".join(i.int(False) if i.value is not None else i.code for i in items)
            return f"matches!({element.code}, {patterns})"
        return "(" + " || ".join(_equal(element, item, False, e.span) for item in items) + ")"
    if isinstance(element.type, ir.StringType):
        return f"{collection.receiver()}.contains({element.as_str()})"
    if element.wide:
        raise Untranslatable("membership of an integer computed by arithmetic", e.span)
    return f"{collection.receiver()}.contains({element.borrowed()})"


def _check_names(m: ir.Machine) -> None:
    """Every name the module will declare is a Rust identifier that clashes with nothing generated."""
    fields = [f.name for f in (*m.keys, *m.variables)]
    params = [p.name for ev in m.events for p in ev.params]
    for what, names in (("field", fields), ("parameter", params), ("state", [s.name for s in m.states]),
                        ("enum", [en.name for en in m.enums]), ("member", [x for en in m.enums for x in en.members]),
                        ("event", [ev.name for ev in m.events])):
        for name in names:
            if not name.isidentifier() or name in RUST_KEYWORDS:
                raise Untranslatable(f"the {what} name {name!r} (not a Rust identifier)")
    if "state" in fields:
        raise Untranslatable("a field named 'state' (the instance's state is `Instance::state`)")
    if "pending" in params:
        raise Untranslatable("a parameter named 'pending' (`pending` is the write-in-flight flag)")
    clash = (GENERATED_NAMES | {en.name for en in m.enums}) & {ev.name for ev in m.events}
    clash |= GENERATED_NAMES & {en.name for en in m.enums}
    if clash:
        raise Untranslatable(f"the name {sorted(clash)[0]!r} (also a generated or an enum's name)")


def rust_files(machines: Iterable[ir.Machine]) -> list[GeneratedFile]:
    """Every machine's Rust module and `machines.rs`, their registry; NoRustError on a construct without a faithful
    translation."""
    chosen = sorted(machines, key=lambda m: m.name)
    files = [GeneratedFile(f"{RUST_DIR}/{module_name(m)}.rs", render(m).encode()) for m in chosen]
    files.append(GeneratedFile(f"{RUST_DIR}/machines.rs", render_registry(chosen).encode()))
    return files


def render(m: ir.Machine) -> str:
    """The machine's Rust module; NoRustError, saying what and where, on a construct without a faithful
    translation."""
    try:
        _check_names(m)
        return _render(m)
    except Untranslatable as error:
        where = f" ({error.span})" if error.span is not None else ""
        raise NoRustError(f"{m.name}: no Rust for {error.what}{where}") from None


def _render(m: ir.Machine) -> str:
    out = [header(m, "//").rstrip("\n"), f"//! The {m.name} machine's decision table, generated from {m.path}.", "",
           "use serde::{Deserialize, Serialize};", "",
           "/// Why a decision is refused (a bug of the caller's or of the spec, never an answer to send).",
           f"pub const NO_ROW: &str = {_quote(NO_ROW)};", f"pub const OUT_OF_BOUNDS: &str = {_quote(OUT_OF_BOUNDS)};",
           f"pub const PRECONDITION: &str = {_quote(PRECONDITION)};", ""]
    out += ["#[derive(Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Debug, Hash, Serialize, Deserialize)]",
            "pub enum State {", *(f"    {s.name}," for s in m.states), "}", "",
            "impl State {",
            "    /// A state whose instance always has a write in flight (`pending` in the spec).",
            "    pub fn pending(self) -> bool {",
            "        matches!(self, " + (" | ".join(f"State::{s.name}" for s in m.states if s.pending) or "_x if false")
            + ")", "    }", "}", ""]
    for enum in m.enums:
        out += ["#[derive(Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Debug, Hash, Serialize, Deserialize)]",
                f"pub enum {enum.name} {{", *(f"    {member}," for member in enum.members), "}", ""]
    out += ["/// An instance: its state, its key fields and its variables.",
            "#[derive(Clone, PartialEq, Debug, Serialize, Deserialize)]", "pub struct Instance {",
            "    pub state: State,", *(f"    pub {f.name}: {rust_type(f.type)}," for f in (*m.keys, *m.variables)),
            "}", "", "impl Instance {", "    /// A fresh instance: the initial state, every variable at its default.",
            "    pub fn fresh(" + ", ".join(f"{k.name}: {rust_type(k.type)}" for k in m.keys) + ") -> Instance {",
            "        Instance {", f"            state: State::{m.initial.name},",
            *(f"            {k.name}," for k in m.keys),
            *(f"            {v.name}: {_literal(v.default, v.type)}," for v in m.variables),
            "        }", "    }", "", "    /// Whether every bounded variable is within its type.",
            "    pub fn in_bounds(&self) -> bool {", "        true"]
    for v in m.variables:
        if isinstance(v.type, ir.IntType) and (v.type.lo, v.type.hi) != (ir.INT_ANY.lo, ir.INT_ANY.hi):
            out.append(f"            && ({_int(v.type.lo)}..={_int(v.type.hi)}).contains(&self.{v.name})")
    out += ["    }", "}", "",
            "/// An integer computed exactly (in i128: Python's integers do not wrap) as a variable's i64 — or, beyond",
            "/// i64 and so beyond every integer type of the spec, the bounds error.",
            "fn narrow(v: i128) -> Result<i64, &'static str> {", "    i64::try_from(v).map_err(|_| OUT_OF_BOUNDS)",
            "}", "", "pub mod args {", "    use super::*;"]
    for event in m.events:
        out += ["    #[derive(Clone, PartialEq, Debug, Serialize, Deserialize)]", f"    pub struct {event.name} {{",
                *(f"        pub {p.name}: {rust_type(p.type)}," for p in event.params), "    }"]
    out += ["}", "", "#[derive(Clone, Copy, PartialEq, Eq, Debug)]",
            "pub enum Kind { Transition, Stay, Reject }", "",
            "/// A row of the table: its index, kind, event, answer (error name and code), target, whether it",
            "/// writes the instance's record, and its spec line.",
            "#[derive(Debug)]", "pub struct Row { pub index: u16, pub kind: Kind, pub event: &'static str, "
            "pub error: &'static str, pub code: i16, pub target: Option<State>, pub writes: bool, pub line: u32 }",
            "",
            f"pub static ROWS: [Row; {len(m.rows)}] = ["]
    position = {}
    for i, row in enumerate(m.rows):
        position[row.index] = i
        if isinstance(row, ir.Transition):
            kind = "Stay" if row.is_stay else "Transition"
            target = "None" if row.target is None else f"Some(State::{row.target})"
            error, code, writes = row.answer, row.answer_code, row.writes
        else:
            kind, target, error, code, writes = "Reject", "None", row.error, row.error_code, False
        out.append(f"    Row {{ index: {row.index}, kind: Kind::{kind}, event: {_quote(row.event)}, "
                   f"error: {_quote(error)}, code: {code}, target: {target}, writes: {str(writes).lower()}, "
                   f"line: {row.span.line} }},")
    out += ["];", "", "/// The answer: the row taken, and a transition's post-state.", "#[derive(Debug)]",
            "pub struct Decision { pub row: &'static Row, pub post: Option<Instance> }", ""]
    for event in m.events:
        out += _decide(m, event, position)
    if any("BTreeSet" in line for line in out):
        out.insert(4, "use std::collections::BTreeSet;")
    out += ["/// `decide_EVENT` by the event's name, its arguments as JSON: Err when the event or its arguments are",
            "/// malformed (a bug of the caller's, not a refusal), else the table's answer (`decide_EVENT`'s).",
            "pub fn decide_json(s: &Instance, event: &str, args: serde_json::Value, pending: bool) "
            "-> Result<Result<Decision, &'static str>, String> {",
            "    let malformed = |e: serde_json::Error| format!(\"{event}'s arguments: {e}\");", "    match event {"]
    for event in m.events:
        out.append(f"        {_quote(event.name)} => Ok(decide_{event.name}(s, "
                   "&serde_json::from_value(args).map_err(malformed)?, pending)),")
    out += ["        _ => Err(format!(\"no event {event}\")),", "    }", "}", "",
            "/// `decide_json` on an instance given as JSON, the row taken given by its index and the post-state as",
            "/// JSON (null for a rejection): the same signature for every machine (`check_tables` takes one by name).",
            "pub fn decide_case(instance: serde_json::Value, event: &str, args: serde_json::Value, pending: bool)",
            "    -> Result<Result<(u16, serde_json::Value), &'static str>, String> {",
            "    let s: Instance = serde_json::from_value(instance).map_err(|e| format!(\"the instance: {e}\"))?;",
            "    let answer = decide_json(&s, event, args, pending)?;",
            "    Ok(answer.map(|d| (d.row.index, serde_json::to_value(&d.post).expect(\"an instance as JSON\"))))",
            "}", ""]
    return "\n".join(out)


def _decide(m: ir.Machine, event: ir.Event, position: dict[int, int]) -> list[str]:
    out = [f"/// {event.name}: the spec's answer on `s` (never changed).",
           f"pub fn decide_{event.name}(s: &Instance, a: &args::{event.name}, pending: bool) "
           "-> Result<Decision, &'static str> {", "    let pending = pending || s.state.pending();",
           "    match s.state {"]
    for state in m.states:
        rows = m.rows_for(state.name, event.name)
        if not rows:
            continue
        out.append(f"        State::{state.name} => {{")
        for row in rows:
            out.append(f"            if {_rust(row.local_guard).code} {{")
            if isinstance(row, ir.Transition):
                changes = []
                for effect in row.effects:
                    value = _rust(effect.value)
                    changes.append(f"                n.{effect.var} = "
                                   + (f"narrow({value.code})?;" if value.wide else f"{value.owned()};"))
                if row.target is not None:
                    changes.append(f"                n.state = State::{row.target};")
                out.append(f"                let {'mut ' if changes else ''}n = s.clone();")
                out += changes
                out.append("                if !n.in_bounds() { return Err(OUT_OF_BOUNDS); }")
                post = "Some(n)"
            else:
                post = "None"
            if not (isinstance(row.assumes, ir.Lit) and row.assumes.value is True):
                out.append(f"                if !{_rust(row.assumes).code} {{ return Err(PRECONDITION); }}")
            out.append(f"                return Ok(Decision {{ row: &ROWS[{position[row.index]}], post: {post} }});")
            out.append("            }")
        out.append("        }")
    if any(not m.rows_for(state.name, event.name) for state in m.states):
        out.append("        _ => {}")
    out += ["    }", "    Err(NO_ROW)", "}", ""]
    return out


def render_registry(machines: list[ir.Machine]) -> str:
    """`machines.rs`: every machine's module, and `MACHINES`, each machine by its spec name with `decide_case`."""
    out = [f"// Generated by `kcoord gen` from spec/ (its machines: {', '.join(m.name for m in machines)}).",
           "// Do not edit: change the spec and run `kcoord gen`; a test fails when this file is stale.",
           "//! Every spec machine's decision table as Rust, and the machines by name (check-tables' registry). A",
           "//! crate takes them as `#[path = \".../impl/_generated/rust/machines.rs\"] mod machines;`.", "",
           "#![allow(dead_code)]", ""]
    for m in machines:
        out += [f"#[allow({LINTS_ALLOWED})]", f"#[path = \"{module_name(m)}.rs\"]", f"pub mod {module_name(m)};", ""]
    out += ["/// `decide_case`: an instance, an event, its arguments (JSON) and `pending` -> Err on a malformed case,",
            "/// else the table's answer: (row index, post-state or null), or why it refused.",
            "pub type DecideCase = fn(serde_json::Value, &str, serde_json::Value, bool)",
            "    -> Result<Result<(u16, serde_json::Value), &'static str>, String>;", "",
            "/// A machine of spec/: its name, its number of rows, its generated `decide_case`.",
            "pub struct Machine { pub name: &'static str, pub rows: usize, pub decide: DecideCase }", "",
            f"pub static MACHINES: [Machine; {len(machines)}] = ["]
    out += [f"    Machine {{ name: {_quote(m.name)}, rows: {module_name(m)}::ROWS.len(), "
            f"decide: {module_name(m)}::decide_case }}," for m in machines]
    out += ["];", ""]
    return "\n".join(out)
