"""The checker's persistence pass: the machine's `persist` declaration (at most one: the record an instance is stored
as and the variables its value carries) and its consistency with the `writes` clauses event lowering collected
(`writes` needs a `persist`, a `persist` needs at least one `writes`).
Must not import: lark, z3, pyspark.
"""

from __future__ import annotations

from . import ir
from . import syntax as s
from .check_context import Checking, members
from .diagnostics import Span, unknown_name_message


class Persistence:
    def __init__(self, ck: Checking) -> None:
        self.ck = ck

    def run(self) -> ir.Persist | None:
        ck = self.ck
        decls = members(ck.syn.members, s.PersistDecl)
        for extra in decls[1:]:
            ck.diags.error(extra.span, f"a machine has one `persist` declaration (already declared at "
                                       f"{decls[0].span})")
        if not decls:
            for span in ck.writes_spans:
                ck.diags.error(span, "`writes` needs a `persist` declaration naming the record and the variables "
                                     "it carries (see spec/README.md, persistence)")
            return None
        decl = decls[0]
        fields: list[str] = []
        ok = True
        seen: dict[str, Span] = {}
        for ident in decl.fields:
            if ident.text in seen:
                ck.diags.error(ident.span, f"'{ident.text}' is listed twice (first at {seen[ident.text]})")
                ok = False
                continue
            seen[ident.text] = ident.span
            if ident.text == "state" or ident.text in ck.sym.variables:
                fields.append(ident.text)
            elif ident.text in ck.sym.keys:
                ck.diags.error(ident.span, f"key field '{ident.text}' is the record's key, not a field of its "
                                           "value: list only variables (and `state`)")
                ok = False
            elif ident.text not in ck.sym.lost:
                message, _ = unknown_name_message("variable", ident.text, ck.sym.variables)
                ck.diags.error(ident.span, message)
                ok = False
        if not ck.writes_spans and not ck.rows_incomplete:
            ck.diags.error(decl.span, f"no transition writes {decl.record.text}: mark the transitions that write it "
                                      "with `writes`")
            ok = False
        if not ok:
            return None
        variables = tuple(v.name for v in ck.variables if v.name in fields)
        return ir.Persist(decl.record.text, variables, "state" in fields, decl.doc, decl.span)
