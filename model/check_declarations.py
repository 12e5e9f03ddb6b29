"""The checker's first pass: declarations. The file is named after its machine; one `kind`; one `key` declaration
(no set fields, no trace column names); enums, states (flags, exactly one initial, not initial and pending or final),
constants, definitions and variables, each name declared once, each default a constant of its type.
Everything later passes look up is entered in the shared `Checking` (its symbol table, states, keys, variables).
Must not import: lark, z3, pyspark.
"""

from __future__ import annotations

from . import ir
from . import syntax as s
from .check_context import TRACE_COLUMNS, Checking, members, snake_case
from .diagnostics import unknown_name_message


class Declarations:
    def __init__(self, ck: Checking) -> None:
        self.ck = ck

    def run(self) -> None:
        ck, syntax = self.ck, self.ck.syn.members
        self._check_file_name()
        kinds = members(syntax, s.KindDecl)
        for kind in kinds[:1]:
            self._kind(kind)
        for extra in kinds[1:]:
            ck.diags.error(extra.span, f"a machine has one `kind` (already declared at {kinds[0].span})")
        self._keys(members(syntax, s.KeyDecl))
        for enum in members(syntax, s.EnumDecl):
            self._enum(enum)
        for state in members(syntax, s.StateDecl):
            self._state(state)
        ck.sym.states = tuple(st.name for st in ck.states)
        for const in members(syntax, s.ConstDecl):
            self._const(const)
        for definition in members(syntax, s.DefDecl):
            ck.declare(definition.name)
            ck.sym.defs[definition.name.text] = definition
        for var in members(syntax, s.VarDecl):
            self._var(var)
        self._initial_state()

    def _check_file_name(self) -> None:
        syn = self.ck.syn
        if not syn.path.endswith(".sm"):
            return
        stem = syn.path.rsplit("/", 1)[-1][: -len(".sm")]
        expected = snake_case(syn.name.text)
        if stem != expected:
            self.ck.diags.error(syn.name.span, f"machine '{syn.name.text}' must live in '{expected}.sm', "
                                               f"not '{stem}.sm' (one machine per file, named after it)")

    def _kind(self, m: s.KindDecl) -> None:
        if m.kind.text not in ir.MACHINE_KINDS:
            message, _ = unknown_name_message("machine kind", m.kind.text, ir.MACHINE_KINDS)
            self.ck.diags.error(m.kind.span, message)
            return
        self.ck.kind = m.kind.text

    def _keys(self, decls: list[s.KeyDecl]) -> None:
        ck = self.ck
        if not decls:
            ck.diags.error(ck.syn.name.span, f"machine '{ck.syn.name.text}' has no `key`: say what identifies one "
                                             "instance (e.g. `key transactional_id: string`)")
            return
        for decl in decls[1:]:
            ck.diags.error(decl.span, "a machine has one `key` declaration (list several fields in it)")
        for f in decls[0].fields:
            if f.name.text in TRACE_COLUMNS:
                ck.diags.error(f.name.span, f"key field '{f.name.text}' would clash with the trace column of that "
                                            "name; rename it")
            t = ck.type_of(f.type)
            if t is None or not ck.declare(f.name, "key field"):
                continue
            if isinstance(t, ir.SetType):
                ck.diags.error(f.type.span, "a key field cannot be a set")
                continue
            fld = ir.Field(f.name.text, t, f.span)
            ck.keys.append(fld)
            ck.sym.keys[fld.name] = fld

    def _enum(self, m: s.EnumDecl) -> None:
        ck = self.ck
        if m.name.text in ("bool", "set", *ir.STRING_ALIASES, *ir.BUILTIN_INT_TYPES):
            ck.diags.error(m.name.span, f"enum '{m.name.text}' would hide the built-in type of that name")
            ck.sym.lost |= {mem.text for mem in m.members}
            return
        if m.name.text in ck.sym.enums:
            ck.diags.error(m.name.span, f"duplicate type '{m.name.text}'")
            return
        enum_members = tuple(mem.text for mem in m.members if ck.declare(mem, "enum member"))
        enum = ir.EnumType(m.name.text, enum_members)
        ck.sym.enums[enum.name] = enum
        for mem in enum_members:
            ck.sym.enum_members[mem] = enum

    def _state(self, m: s.StateDecl) -> None:
        ck = self.ck
        if not ck.declare(m.name, "state") and any(st.name == m.name.text for st in ck.states):
            return  # a state declared twice; a state sharing a name with a constant is kept (no cascades)
        flags = [f.text for f in m.flags]
        for i, f in enumerate(m.flags):
            if f.text in flags[:i]:
                ck.diags.error(f.span, f"flag '{f.text}' given twice")
        st = ir.State(m.name.text, initial="initial" in flags, final="final" in flags, pending="pending" in flags,
                      expirable="expirable" in flags, doc=m.doc, span=m.span)
        if st.initial and st.pending:
            ck.diags.error(m.name.span, f"initial state '{st.name}' cannot be pending-only")
        if st.initial and st.final:
            ck.diags.error(m.name.span, f"state '{st.name}' cannot be both initial and final")
        ck.states.append(st)

    def _initial_state(self) -> None:
        ck = self.ck
        if not ck.structure:
            return  # declarations were lost to syntax errors: "no state" / "no initial state" would only repeat them
        initials = [st for st in ck.states if st.initial]
        if not ck.states:
            ck.diags.error(ck.syn.name.span, "a machine needs at least one state")
        elif not initials:
            ck.diags.error(ck.states[0].span, "no initial state: mark exactly one state `initial`")
        for st in initials[1:]:
            ck.diags.error(st.span, f"more than one initial state: '{initials[0].name}' and '{st.name}'")

    def _const(self, m: s.ConstDecl) -> None:
        ck = self.ck
        t = ck.type_of(m.type)
        if t is None or not ck.declare(m.name, "constant"):
            return
        value = ck.constant(m.value, t, f"constant '{m.name.text}'")
        if value is not None:
            ck.sym.consts[m.name.text] = value

    def _var(self, m: s.VarDecl) -> None:
        ck = self.ck
        if m.name.text in TRACE_COLUMNS or m.name.text.startswith("arg_"):
            ck.diags.error(m.name.span, f"variable '{m.name.text}' would clash with the trace column of that name "
                                        "(trace rows carry every variable next to machine, key, seq, ts_ms, node, "
                                        "coordinator_epoch, kind, event, row, error, from_state, to_state, pending "
                                        "and arg_<parameter>); rename it")
        t = ck.type_of(m.type)
        if t is None or not ck.declare(m.name, "variable"):
            ck.sym.lost.add(m.name.text)
            return
        value = ck.constant(m.default, t, f"default of '{m.name.text}'")
        if value is None:
            ck.sym.lost.add(m.name.text)
            return
        fld = ir.Field(m.name.text, t, m.span, value.value, m.doc)
        ck.variables.append(fld)
        ck.sym.variables[fld.name] = fld
