"""Generator of the runtime tables: one `impl/_generated/<machine>.py` per machine.

Owns: the layout of the generated module. The module is data (tuples, dicts, frozensets, the `State` and `Event`
str-enums `kcoord.impl` names states and events by) plus one
small function per guard and effect whose body is exactly `kcoord.model.pyexpr.to_python` of the IR — so the runtime
evaluates the same Python the model's reference evaluator does. The generated module imports only the standard
library; `kcoord.impl.statemachine` turns it into the runtime's table objects.
Must not import: z3, pyspark.
"""

from __future__ import annotations

from .. import ir
from ..pyexpr import effects_to_python, to_python
from .common import GeneratedFile, header, module_name

ROW_FIELDS = ("index", "kind", "event", "sources", "target", "error", "error_code", "guard", "effect", "line",
              "condition", "assumes", "origin", "local")


def table_file(machine: ir.Machine) -> GeneratedFile:
    return GeneratedFile(f"impl/_generated/{module_name(machine)}.py", render_module(machine).encode())


def render_module(m: ir.Machine) -> str:
    out: list[str] = [header(m, "#")]
    out.append(f'"""Runtime tables of the {m.name} machine ({m.kind}), generated from {m.path}.\n\n'
               f'{_wrap_doc(m.doc)}\n"""\n\n')
    out.append("import enum\n\n")
    out.append(f"MACHINE = {m.name!r}\nKIND = {m.kind!r}\nSPEC_PATH = {m.path!r}\n"
               f"SPEC_SHA256 = {m.source_sha256!r}\n\n\n")
    out.append(_name_enums(m))
    out.append(_declarations(m))
    out.append(_functions(m))
    out.append(_rows(m))
    out.append(_derived(m))
    out.append(_trace_columns(m))
    out.append(_properties(m))
    return "".join(out)


def _wrap_doc(text: str, width: int = 110) -> str:
    words, lines, line = text.split(), [], ""
    for w in words:
        if line and len(line) + 1 + len(w) > width:
            lines.append(line)
            line = w
        else:
            line = f"{line} {w}" if line else w
    if line:
        lines.append(line)
    return "\n".join(lines) if lines else "(no description)"


def _set(items: list[str] | tuple[str, ...] | frozenset[str] | set[str]) -> str:
    if not items:
        return "frozenset()"
    return "frozenset({" + ", ".join(repr(x) for x in sorted(items)) + "})"


def _name_enums(m: ir.Machine) -> str:
    """`State` and `Event`: what `kcoord.impl` writes instead of a state's or an event's name as a string (a misspelt
    member is an AttributeError and a mypy error, a misspelt string a comparison that is silently false)."""
    return (str_enum("State", f"The states of {m.name}, named as in the spec.", [st.name for st in m.states])
            + str_enum("Event", f"The events of {m.name}, named as in the spec.", [e.name for e in m.events]))


def str_enum(name: str, doc: str, members: list[str]) -> str:
    """A `StrEnum` whose members are their own names: each equals, hashes and prints as that string, so it can stand
    wherever the string did (table rows, instance dicts, traces)."""
    lines = [f"class {name}(enum.StrEnum):", f'    """{doc}"""', "",
             "    __hash__ = str.__hash__  # the same value as Enum's hash(name), without its Python-level call", ""]
    lines += [f"    {member} = {member!r}" for member in members]
    return "\n".join(lines) + "\n\n\n"


def _type_name(t: ir.Type) -> str:
    return str(t)


def _bounds(t: ir.Type) -> tuple[int | None, int | None]:
    return (t.lo, t.hi) if isinstance(t, ir.IntType) else (None, None)


def _value(v: object) -> str:
    if isinstance(v, frozenset):
        return _set(frozenset(str(x) for x in v)) if all(isinstance(x, str) for x in v) else repr(v)
    return repr(v)


def _declarations(m: ir.Machine) -> str:
    out = [f"INITIAL = {m.initial.name!r}",
           "STATES = (" + ", ".join(repr(st.name) for st in m.states) + ",)",
           f"FINAL_STATES = {_set([st.name for st in m.states if st.final])}",
           f"PENDING_STATES = {_set([st.name for st in m.states if st.pending])}",
           f"EXPIRABLE_STATES = {_set([st.name for st in m.states if st.expirable])}",
           "",
           "#: (name, type) of each key field",
           "KEYS = (" + "".join(f"({k.name!r}, {_type_name(k.type)!r}), " for k in m.keys) + ")",
           "#: (name, type, default, lo, hi) of each variable; lo/hi bound integers, None otherwise",
           "VARIABLES = ("]
    for v in m.variables:
        lo, hi = _bounds(v.type)
        out.append(f"    ({v.name!r}, {_type_name(v.type)!r}, {_value(v.default)}, {lo!r}, {hi!r}),")
    out.append(")")
    out.append("ENUMS = {" + ", ".join(f"{e.name!r}: {e.members!r}" for e in m.enums) + "}")
    out.append("#: event -> ((parameter, type), ...), internal")
    out.append("EVENTS = {")
    for e in m.events:
        params = "".join(f"({p.name!r}, {_type_name(p.type)!r}), " for p in e.params)
        out.append(f"    {e.name!r}: (({params}), {e.internal!r}),")
    out.append("}")
    return "\n".join(out) + "\n\n\n"


def _functions(m: ir.Machine) -> str:
    """One function per row guard and transition effect, and per event precondition."""
    out = ["# Guards take the pre-state `s` (variables, keys, 'state') and the arguments `a` (parameters, 'pending');",
           "# effects return the new values of the variables they assign (all others keep theirs).", ""]
    for row in m.rows:
        out.append(f"def _guard_{row.index}(s, a):  # {m.path}:{row.span.line}")
        out.append(f"    return {to_python(row.guard)}")
        out.append("")
        out.append(f"def _assumes_{row.index}(s, a):")
        out.append(f"    return {to_python(row.assumes)}")
        out.append("")
        out.append(f"def _local_{row.index}(s, a):  # the row's own condition (its event's checks already passed)")
        out.append(f"    return {to_python(row.local_guard)}")
        out.append("")
        if isinstance(row, ir.Transition):
            out.append(f"def _effect_{row.index}(s, a):")
            out.append(f"    return {effects_to_python(row.effects)}")
            out.append("")
    for e in m.events:
        out.append(f"def _requires_{e.name}(s, a):")
        out.append(f"    return {to_python(e.requires)}")
        out.append("")
    return "\n".join(out) + "\n"


def _rows(m: ir.Machine) -> str:
    out = ["#: fields of each row in ROWS", f"ROW_FIELDS = {ROW_FIELDS!r}", "ROWS = ("]
    for row in m.rows:
        if isinstance(row, ir.Transition):
            kind = "stay" if row.is_stay else "transition"
            target, error, code, effect = repr(row.target), repr(row.answer), row.answer_code, f"_effect_{row.index}"
        else:
            kind, target, error, code, effect = "reject", "None", repr(row.error), row.error_code, "None"
        out.append(f"    ({row.index}, {kind!r}, {row.event!r}, {_set(row.sources)}, {target}, {error}, {code}, "
                   f"_guard_{row.index}, {effect}, {row.span.line}, {row.condition_text!r}, _assumes_{row.index}, "
                   f"{_origin(row)!r}, _local_{row.index}),")
    out.append(")")
    out.append("REQUIRES = {" + ", ".join(f"{e.name!r}: _requires_{e.name}" for e in m.events) + "}")
    return "\n".join(out) + "\n\n"


def _origin(row: ir.Row) -> str:
    """`check` (an ordered front-door check), `reject` (a table row) or `transition`."""
    return row.origin if isinstance(row, ir.Rejection) else "transition"


def _derived(m: ir.Machine) -> str:
    index: dict[tuple[str, str], list[int]] = {}
    for row in m.rows:
        for src in row.sources:
            index.setdefault((src, row.event), []).append(row.index)
    errors: dict[tuple[str, str], set[str]] = {}
    for rej in m.rejections:
        for src in rej.sources:
            errors.setdefault((src, rej.event), set()).add(rej.error)
    out = ["#: (state, event) -> indexes of the rows to try, in declaration order (an event's checks come first:",
           "#: a row's `local` condition decides once every earlier row of the same (state, event) has not matched)",
           "INDEX = {"]
    out += [f"    ({s!r}, {e!r}): {tuple(ix)!r}," for (s, e), ix in sorted(index.items())]
    out.append("}")
    out.append("#: target state -> every state with a transition into it (Kafka's validPreviousStates)")
    out.append("VALID_PREVIOUS = {")
    out += [f"    {st.name!r}: {_set(m.valid_previous(st.name))}," for st in m.states]
    out.append("}")
    out.append("#: (state, event) -> the Kafka errors a rejection row may answer")
    out.append("ERRORS = {")
    out += [f"    ({s!r}, {e!r}): {_set(errs)}," for (s, e), errs in sorted(errors.items())]
    out.append("}")
    return "\n".join(out) + "\n\n\n"


def _trace_columns(m: ir.Machine) -> str:
    from ..traceschema import trace_columns

    out = ["#: the trace row of this machine: (column, type); see kcoord.model.traceschema", "TRACE_COLUMNS = ("]
    out += [f"    ({name!r}, {typ!r})," for name, typ in trace_columns(m)]
    out.append(")")
    return "\n".join(out) + "\n\n\n"


def _properties(m: ir.Machine) -> str:
    out = ["# Invariants (one-state) and step properties (two-state: `s` before, `n` after, `a` the event's",
           "# arguments), for runtime self-checks."]
    for i, inv in enumerate(m.invariants):
        out.append(f"def _invariant_{i}(s):  # {inv.name}")
        out.append(f"    return {to_python(inv.expr)}")
        out.append("")
    for i, st in enumerate(m.steps):
        out.append(f"def _step_{i}(s, n, a):  # {st.name}" + (f" (on {st.event})" if st.event else ""))
        out.append(f"    return {to_python(st.expr)}")
        out.append("")
    out.append("INVARIANTS = (" + "".join(f"({inv.name!r}, _invariant_{i}, {inv.span.line}), "
                                          for i, inv in enumerate(m.invariants)) + ")")
    out.append("#: (name, function of (pre, post, args), line, event or None for every event)")
    out.append("STEPS = (" + "".join(f"({st.name!r}, _step_{i}, {st.span.line}, {st.event!r}), "
                                     for i, st in enumerate(m.steps)) + ")")
    return "\n".join(out) + "\n"
