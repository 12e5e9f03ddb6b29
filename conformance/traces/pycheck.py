"""The pure-Python reference checker: every check of `checks` on small traces, the oracle for the Spark checker.

Owns: `check_paths` (files → violations, quarantine counts, the witnesses rendered), its `Options` and `Result`. The
checks are named as in `checks.CHECKS` and in `sparkcheck` (which computes the same things with Spark SQL): the row
checks and `within` (per key) are `pyrowcheck`'s, the cross-key properties (`exclusive`, `monotonic`, `before`,
`fenced`) `pycrosskey`'s map/reduce pairs, and the rows of a machine are held by `pyspill`. Expressions are evaluated
by the model's Python evaluator (`kcoord.model.pyexpr`), the code the runtime tables run.

Memory: readers stream rows file by file; a machine of up to `Options.max_rows_in_memory` rows is checked in
memory (~1.2 KB per Transaction row: equal values are shared between rows, and a row is its own post-state). A larger
one is spilled to `Options.buckets` files by key (`MachineRows`) and checked a bucket at a time: a key's rows are all
in one bucket, so the row checks and `within` run per bucket; the cross-key properties are map/reduce pairs — the map
emits small tuples per group, spilled by group, the reduce reads one group bucket at a time — and the violations
they find get their witness from their key's bucket, read again. A bucket that itself holds more than
`max_rows_in_memory` rows is split again by key. Peak memory is then about `max_rows_in_memory` rows whatever the
trace's size (unless one key alone has more). A `before` or `fenced` property re-reads the other machine's files and
keeps only the projection it needs.
Must not import: pyspark, kcoord.cli.
"""

from __future__ import annotations

import gc
import json
from collections import defaultdict
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field, replace

from kcoord.model import ir

from . import MAX_ROWS_IN_MEMORY
from . import witness as W
from .checks import CHECKS, Spec, Violation
from .pycrosskey import CrossKey, OtherRows
from .pyrowcheck import Found, MachineChecker
from .pyspill import MachineRows, Part
from .readers import Quarantine, Source, columns, discover, read_rows


@dataclass(slots=True)
class Options:
    max_witnesses: int = 1000  # violations beyond this many (per run) get no witness
    max_rows_in_memory: int = MAX_ROWS_IN_MEMORY  # a machine with more is spilled to disk, checked bucket by bucket
    buckets: int = 64  # spill files per machine (and for the cross-key properties' tuples)
    spill_dir: str | None = None  # where spill files go (a temporary folder in it); None: the system's


@dataclass(slots=True)
class Result:
    violations: list[Violation] = field(default_factory=list)
    rows_read: dict[str, int] = field(default_factory=dict)
    quarantine: Quarantine = field(default_factory=Quarantine)
    not_checked: list[str] = field(default_factory=list)
    spilled: dict[str, int] = field(default_factory=dict)  # machine → buckets it was checked in, if from disk


# ---------------------------------------------------------------- entry point


def check_paths(paths: Sequence[str], machines: Mapping[str, ir.Machine], out_dir: str | None = None,
                options: Options | None = None, progress: Callable[[str], None] | None = None) -> Result:
    """Check every trace file under `paths` against `machines`; malformed rows go to `<out_dir>/quarantine/`."""
    options = options or Options()
    sources = discover(paths, machines, [out_dir or ""])
    by_machine: dict[str, list[Source]] = defaultdict(list)
    for s in sources:
        by_machine[s.machine].append(s)
    result = Result(quarantine=Quarantine(out_dir))
    specs = {name: Spec.of(m) for name, m in machines.items()}
    collecting = gc.isenabled()
    gc.disable()  # millions of rows, no cycles among them: the cyclic collector would rescan them ~15 % of the time
    try:
        for name in sorted(by_machine):
            if progress:
                progress(name)
            spec = specs.get(name)
            rows = read_rows(spec, name, by_machine[name], result.quarantine)
            if spec is None:
                for _ in rows:  # every row is quarantined
                    pass
                continue
            with MachineRows(options, [name for name, _ in columns(spec.machine)]) as held:
                for r in rows:
                    held.add(r)
                result.rows_read[name] = held.count
                violations, not_checked = _check_machine(spec, held, OtherRows(specs, by_machine))
                if held.spilled:
                    result.spilled[name] = len(held.parts())
            result.violations += violations
            result.not_checked += not_checked
    finally:
        result.quarantine.close()
        if collecting:
            gc.enable()
    result.violations.sort(key=sort_key)
    _attach_witnesses(result.violations, options.max_witnesses, specs)
    return result


def _check_machine(spec: Spec, held: MachineRows, other: OtherRows) -> tuple[list[Violation], list[str]]:
    """Row checks and `within` bucket by bucket; the cross-key properties mapped from every bucket, then reduced;
    their findings resolved against their key's bucket (the one in memory, or read again)."""
    cross = CrossKey(spec, other, held.new_spill())
    violations: list[Violation] = []
    checker = None
    for part in held.parts():
        checker = None  # the previous bucket's rows go before the next bucket's come in
        checker = MachineChecker(spec, held.rows(part), held.trace_end)
        checker.run()
        violations += checker.violations()
        cross.map(checker)
    cross.map_other()
    pending: dict[Part, list[tuple[str, int, Found]]] = defaultdict(list)
    for key, pos, found in cross.reduce():
        pending[held.part_of(key)].append((key, pos, found))
    for part, items in sorted(pending.items()):
        if held.spilled or checker is None:
            checker = None
            checker = MachineChecker(spec, held.rows(part), held.trace_end)
        violations += [checker.violation(checker.ctx[key][pos], found) for key, pos, found in items]
    return violations, cross.not_checked


def sort_key(v: Violation) -> tuple[str, int, str, int, str]:
    return v.machine, _CHECK_ORDER[v.check], v.key, v.seq, v.name


_CHECK_ORDER = {c: i for i, c in enumerate(CHECKS)}


# ---------------------------------------------------------------- witnesses


def _attach_witnesses(violations: list[Violation], limit: int, specs: Mapping[str, Spec]) -> None:
    """Render the witness of the first `limit` violations; the others keep neither text nor rows."""
    for i, v in enumerate(violations):
        if i >= limit:
            violations[i] = replace(v, witness_rows="")
        else:
            violations[i] = replace(v, witness=render_witness_json(v.witness_rows, v.message, specs))


def render_witness_json(doc: str, message: str, specs: Mapping[str, Spec]) -> str:
    data = json.loads(doc)
    spec = specs[data["machine"]]
    segments = [W.Segment(s["key"], s["at"], s["base"], tuple(s["rows"])) for s in data["segments"]]
    return W.render(spec, segments, message)
