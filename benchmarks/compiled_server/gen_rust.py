"""A spec machine's decision table as Rust, generated from the same IR as `impl/_generated/` (issue 31's compiled
design: the compiled server's decisions come from spec/, as the Python runtime's do). Not part of kcoord's build: the
prototype's `benchmarks/compiled_server.sh` runs it before cargo.

``python gen_rust.py MACHINE OUT.rs`` writes one module: the machine's states and enums, `Instance` (the state, every
key field and variable), one argument struct per event (`args::EVENT`), `ROWS`, and `decide_EVENT(instance, args,
pending)` — the rows of (state, event) in declaration order, each row's own condition deciding once the earlier ones
failed, as `MachineTable.decide` does; a transition's post-state computed from the pre-state, its variables' bounds and
its row's preconditions checked — plus `decide_json`, the same over JSON, for `check_tables`' differential run against
the Python tables (`table_cases.py`).
"""

from __future__ import annotations

import sys
from pathlib import Path

from kcoord.model import ir
from kcoord.model.loader import bundled_machines


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
    raise TypeError(f"no Rust type for {t}")


def _copy(t: ir.Type) -> bool:
    return isinstance(t, ir.BoolType | ir.IntType | ir.EnumType | ir.StateType)


def _literal(value: object, t: ir.Type) -> str:
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, int):
        return f"({value}i64)" if value < 0 else f"{value}i64"
    if isinstance(value, str):
        return f"String::from({_quote(value)})"
    if isinstance(value, frozenset):
        element = t.element if isinstance(t, ir.SetType) else ir.INT_ANY
        items = ", ".join(_literal(v, element) for v in sorted(value, key=repr))  # type: ignore[arg-type]
        return f"BTreeSet::from([{items}])" if value else "BTreeSet::new()"
    raise TypeError(f"no Rust literal for {value!r}")


def _quote(s: str) -> str:
    return '"' + s.replace("\\", "\\\\").replace('"', '\\"') + '"'


class Expr:
    """Rust source of one IR expression: `code`, and whether it names a place (a field) rather than a temporary."""

    def __init__(self, e: ir.Expr) -> None:
        self.e = e
        self.code, self.place = _rust(e)

    def owned(self) -> str:
        return f"{self.code}.clone()" if self.place and not _copy(self.e.type) else self.code

    def borrowed(self) -> str:
        return f"&{self.code}" if self.place else f"&({self.code})"

    def receiver(self) -> str:
        """As the receiver of a method call (auto-referenced)."""
        return self.code if self.place else f"({self.code})"


_INFIX = {"or": "||", "and": "&&", "eq": "==", "ne": "!=", "lt": "<", "le": "<=", "gt": ">", "ge": ">=", "add": "+",
          "sub": "-", "union": "|", "inter": "&", "diff": "-"}


def _rust(e: ir.Expr) -> tuple[str, bool]:
    if isinstance(e, ir.Lit):
        return _literal(e.value, e.type), False
    if isinstance(e, ir.EnumLit):
        return (f"State::{e.member}" if isinstance(e.type, ir.StateType) else f"{e.type.name}::{e.member}"), False
    if isinstance(e, ir.VarRef | ir.KeyRef):
        if isinstance(e, ir.VarRef) and e.primed:
            raise ValueError("a primed variable in a guard or an effect")
        return f"s.{e.name}", True
    if isinstance(e, ir.ParamRef):
        return f"a.{e.name}", True
    if isinstance(e, ir.StateRef):
        return "s.state", True
    if isinstance(e, ir.PendingRef):
        return "pending", False
    if isinstance(e, ir.SetLit):
        if not e.items:
            return "BTreeSet::new()", False
        return "BTreeSet::from([" + ", ".join(Expr(i).owned() for i in e.items) + "])", False
    if isinstance(e, ir.Ite):
        return (f"(if {Expr(e.cond).code} {{ {Expr(e.then).owned()} }} else {{ {Expr(e.orelse).owned()} }})",
                False)
    if isinstance(e, ir.Call):
        args = [Expr(a) for a in e.args]
        if e.function == "size":
            return f"({args[0].receiver()}.len() as i64)", False
        return f"std::cmp::{e.function}({args[0].owned()}, {args[1].owned()})", False
    if isinstance(e, ir.Unary):
        operand = Expr(e.operand)
        return (f"(!{operand.code})" if e.op == "not" else f"(-{operand.code})"), False
    return _binary(e), False


def _binary(e: ir.Binary) -> str:
    left, right = Expr(e.left), Expr(e.right)
    if e.op == "implies":
        return f"(!{left.code} || {right.code})"
    if e.op == "in":
        if isinstance(e.right, ir.SetLit) and e.right.items and _copy(e.left.type):
            return f"matches!({left.code}, {' | '.join(Expr(i).code for i in e.right.items)})"
        return f"{right.receiver()}.contains({left.borrowed()})"
    if e.op == "subset":
        return f"{left.receiver()}.is_subset({right.borrowed()})"
    if e.op in ("union", "inter", "diff"):
        return f"({left.borrowed()} {_INFIX[e.op]} {right.borrowed()})"
    if e.op in ("eq", "ne") and not _copy(e.left.type):
        return f"({left.borrowed()} {_INFIX[e.op]} {right.borrowed()})"
    return f"({left.code} {_INFIX[e.op]} {right.code})"


def render(m: ir.Machine) -> str:
    out = [f"// The {m.name} machine's decision table, generated from {m.path} (sha256 {m.source_sha256[:16]}) by",
           "// benchmarks/compiled_server/gen_rust.py (build.rs runs it). Do not edit.",
           "use serde::{Deserialize, Serialize};", "use std::collections::BTreeSet;", ""]
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
            out.append(f"            && ({v.type.lo}i64..={v.type.hi}i64).contains(&self.{v.name})")
    out += ["    }", "}", "", "pub mod args {", "    use super::*;"]
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
    out += ["/// `decide_EVENT` with the instance and the arguments as JSON (the differential check's entry).",
            "pub fn decide_json(s: &Instance, event: &str, args: serde_json::Value, pending: bool) "
            "-> Result<Decision, String> {", "    match event {"]
    for event in m.events:
        out.append(f"        {_quote(event.name)} => decide_{event.name}(s, &serde_json::from_value(args)"
                   ".map_err(|e| e.to_string())?, pending).map_err(String::from),")
    out += ["        _ => Err(format!(\"no event {event}\")),", "    }", "}", ""]
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
            out.append(f"            if {Expr(row.local_guard).code} {{")
            if isinstance(row, ir.Transition):
                out.append("                let mut n = s.clone();")
                for effect in row.effects:
                    out.append(f"                n.{effect.var} = {Expr(effect.value).owned()};")
                if row.target is not None:
                    out.append(f"                n.state = State::{row.target};")
                out.append("                if !n.in_bounds() { return Err(\"a variable out of its type's bounds\"); }")
                post = "Some(n)"
            else:
                post = "None"
            if not (isinstance(row.assumes, ir.Lit) and row.assumes.value is True):
                out.append(f"                if !{Expr(row.assumes).code} {{ return Err(\"a precondition fails\"); }}")
            out.append(f"                return Ok(Decision {{ row: &ROWS[{position[row.index]}], post: {post} }});")
            out.append("            }")
        out.append("        }")
    out += ["        _ => {}", "    }", "    Err(\"no row answers\")", "}", ""]
    return out


def main() -> None:
    name, target = sys.argv[1], Path(sys.argv[2])
    machines = bundled_machines()
    if name not in machines:
        raise SystemExit(f"gen_rust: no machine {name!r} in spec/ (there are: {', '.join(sorted(machines))})")
    target.write_text(render(machines[name]) + "\n")


if __name__ == "__main__":
    main()
