"""Generator of the persisted-step relations: one `impl/_generated/<machine>_persisted.py` per machine with a
`persist` declaration.

Owns: the layout of the generated module. It is data plus one small function per atom, whose body is exactly
`kcoord.model.pyexpr.to_python` of the atom (`s` the previous record, `n` the next one; key fields in both), so the
Python checker runs the same code the model's evaluator would; `ATOMS` carries each atom again as
`kcoord.model.irdata` data, so the Spark checker can compile it without deriving it again. The relation itself comes
from `kcoord.model.persisted.derive` (z3): the caller derives it and passes it in.
Must not import: z3, pyspark.
"""

from __future__ import annotations

from .. import ir
from ..irdata import to_data
from ..pretty import render
from ..pyexpr import to_python
from ..steprel import Relation
from .common import GeneratedFile, header, module_name


def persisted_file(machine: ir.Machine, relation: Relation) -> GeneratedFile:
    return GeneratedFile(f"impl/_generated/{module_name(machine)}_persisted.py",
                         render_module(machine, relation).encode())


def render_module(m: ir.Machine, r: Relation) -> str:
    assert m.persist is not None
    out = [header(m, "#"), _doc(m, r), "\n"]
    out.append(f"MACHINE = {m.name!r}\nRECORD = {r.record!r}\nSPEC_PATH = {m.path!r}\n"
               f"SPEC_SHA256 = {m.source_sha256!r}\n")
    out.append("#: the variables the record carries (and whether it carries the state)\n")
    out.append(f"FIELDS = {r.fields!r}\nSTATE_PERSISTED = {r.state!r}\n")
    out.append(f"#: non-writing transitions considered before the writing one (`kcoord verify` checks one more)\n"
               f"DEPTH = {r.depth!r}\n\n\n")
    out.append("# One function per atom: `s` is the previous record, `n` the next one (both with the key fields).\n")
    for i, c in enumerate(r.clauses):
        for j, a in enumerate(c.atoms):
            out.append(f"def _atom_{i}_{j}(s, n):\n    return {to_python(a)}\n\n")
    out.append("\n#: (label, rows, source state, target state, tombstone, ((atom text, function), ...)); a pair of "
               "records is\n#: explained when every atom of some clause of their states holds\n")
    out.append("CLAUSES = (\n")
    for i, c in enumerate(r.clauses):
        atoms = "".join(f"\n        ({render(a)!r}, _atom_{i}_{j})," for j, a in enumerate(c.atoms))
        out.append(f"    ({c.label!r}, {c.rows!r}, {c.source!r}, {c.target!r}, {c.tombstone!r}, ({atoms}\n    )),\n")
    out.append(")\n\n")
    out.append("#: the atoms of each clause as `kcoord.model.irdata` data, for the Spark checker\n")
    out.append("ATOMS = (\n")
    for c in r.clauses:
        out.append("    (" + "".join(f"\n        {to_data(a)!r}," for a in c.atoms) + "\n    ),\n")
    out.append(")\n")
    return "".join(out)


def _doc(m: ir.Machine, r: Relation) -> str:
    assert m.persist is not None
    states = "its state and " if r.state else ""
    return (f'"""The persisted-step relation of {m.name}, derived from {m.path}: which {r.record} value may follow\n'
            f"which for one key.\n\n"
            f"A {r.record} carries {states}{', '.join(r.fields)}. Between two consecutive records of a key the\n"
            f"coordinator took up to {r.depth} transitions that write nothing and then one that writes; each clause "
            "is one such\npath from one state to another, with the event arguments and the unwritten variables "
            "eliminated (z3).\nThe invariants of each record are checked on their own and not repeated here. "
            '`kcoord verify` proves\nevery writing path of the spec lands in a clause.\n"""\n')
