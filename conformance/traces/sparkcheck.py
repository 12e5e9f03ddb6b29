"""The Spark checker: every check of `checks`, compiled from a machine's IR into Spark SQL (no Python UDFs).

Owns: `MachinePlan` (one machine's typed rows → its staged rows and its row checks' violations) with one method per
row check, named as in `checks.CHECKS` and in the reference checker `pycheck`, and `Needs` (which rows and columns the
trace properties of every machine read from this one). The trace properties are `sparkprops`; the witnesses' rows
are read again by key (`sparkread.witness_rows`).

The plan of a machine is one pass over its rows, doing each expensive thing once and only on what needs it:

1. Map side, in the scan's generated code (`local`): the rows are validated (`sparkread`, whose observation also
   counts them), and every check that reads one row only is computed there, as a few booleans and one bit mask:
   the table (`_legal`: the row's (from_state, event, to_state, row, kind) as one INT of bit fields, `packed`,
   looked up in a `switch`), the spec row's event and kind, its error, and every invariant (`_inv_*`).
2. One exchange and one window operator (`windowed`): the rows partitioned by key (rows with a negative seq in
   partitions of their own) and ordered by seq; per row one `lag` per column the checks compare with the previous
   row (its state, seq, coordinator epoch and every variable), its position, and, only for a machine with an
   `exclusive` property, the running maximum and the next of ts_ms. The rows crossing the exchange are typed rows:
   names as codes, no copy of the previous row, no pre-state.
3. The pre-state (`pre`, two small projections), then one projection computing what reads the spec's expressions
   (`checks`), kept out of whole-stage code generation so that Spark splits its code into small methods whatever
   the machine's size: which parts of the row's event's conditions hold (`_cj_*`: the distinct conjuncts of the
   event's guards and preconditions, once each), which variables differ from their effects (`_eff_*`, one `CASE`
   on the spec row, found by a binary search over the row index: `by_row`), which changed (`_chg_*`), which steps
   fail (`_steps_*`), the values the trace properties read; the row narrows to what the rest reads. Then one bit
   per row check (`flags`).
4. `staged`: the rows the violations and the trace properties read — a row with a flag, or one a trace property
   of this or another machine needs (`Needs`) — with only those columns, checkpointed on local disk (persisted,
   over Spark Connect); the pass also counts the staged rows with a violation (an observation: `flagged`). Messages,
   names and trace properties are computed from these few rows afterwards (`sparkprops`, and `row_violations`
   only where the pass flagged a row: its generated code is the run's largest).
Must not import: kcoord.cli.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field

from pyspark import StorageLevel
from pyspark.sql import Column, DataFrame, Observation, SparkSession, Window
from pyspark.sql import functions as F

from kcoord.model import ir
from kcoord.model import sqltree as q
from kcoord.model.spark_backend import Columns, SparkCompiler
from kcoord.model.traceschema import code, codes

from .checks import ACCEPTED_KINDS, Spec, location
from .sparkread import Read, typed_columns

VIOLATION_COLUMNS = ("machine", "key", "check", "name", "seq", "seq_from", "seq_to", "location", "message", "pos",
                     "row_json")
ROW_FLAGS = ("illegal_transition", "discontinuity", "guard_false", "effect_mismatch", "frame_mismatch",
             "reject_changed_state", "wrong_error")
MASK_BITS = 62  # bits of one mask column (a bigint, sign bit unused)
#: the columns the checks projection passes on (besides the invariants' masks and what trace properties read)
PASSED = ("key", "seq", "pos", "ts_ms", "kind", "event", "row", "error", "from_state", "to_state",
          "coordinator_epoch", "p_to_state", "p_seq", "p_coordinator_epoch", "fresh", "pre_known", "pre_state",
          "_legal", "_sr_ok", "_err_ok")
#: a column that keeps the projection it is in out of whole-stage code generation: Spark interprets a Java method
#: call (`java_method`), which no whole-stage method can contain; the branch is never taken (no valid row has a seq
#: below -1), so it costs one comparison a row. The pass's filter reads it (else the optimiser would drop it).
BOUNDARY = "CASE WHEN seq < -1 THEN java_method('java.lang.Math', 'abs', seq) END AS _boundary"
PRE = Columns(pending="eff_pending", coded=True)  # guards and effects read the effective `pending`
POST = Columns(coded=True).on_post()


def masks(bits: Sequence[q.Expr]) -> list[q.Expr]:
    """Conditions as bit masks: bit i of mask i // 62 is set where condition i holds (one bigint per 62). The bits
    are or-ed, not added: an addition is overflow-checked on every row (ANSI mode), a bitwise or is not."""
    out = []
    for start in range(0, len(bits), MASK_BITS):
        out.append(bit_or([q.when(b, q.lit(1 << i), q.lit(0)) for i, b in enumerate(bits[start:start + MASK_BITS])]))
    return out or [q.lit(0)]


def bit_or(terms: Sequence[q.Expr]) -> q.Expr:
    return q.Op("|", tuple(terms)) if len(terms) > 1 else terms[0]


def packed(fields: Sequence[tuple[q.Expr, int]]) -> q.Expr:
    """Small non-negative integers, each below its field's size, as one INT of bit fields (the first field in the
    highest bits): shifts and ors, no arithmetic (which ANSI mode checks for overflow on every row), and an INT,
    whose `IN` over many literals Spark compiles to a `switch` (over a BIGINT it boxes each row's value into a
    hash set's lookup). `packed_number` is the same for constants."""
    out, shift = [], 0
    for x, size in reversed(fields):
        out.append(q.shift_left(q.Cast(x, q.INT), shift))
        shift += max(1, (size - 1).bit_length())
    assert shift <= 31, f"{shift} bits do not fit an INT"
    return bit_or(out[::-1])


def packed_number(fields: Sequence[tuple[int, int]]) -> int:
    out, shift = 0, 0
    for x, size in reversed(fields):
        assert 0 <= x < size, (x, size)
        out |= x << shift
        shift += max(1, (size - 1).bit_length())
    return out


def has_bit(mask: str, i: int) -> q.Expr:
    """Bit `i` of the masks named `<mask>_<n>`."""
    return q.ne(q.binary("&", q.col(f"{mask}_{i // MASK_BITS}"), q.lit(1 << (i % MASK_BITS))), q.lit(0))


def any_bit(mask: str, n: int) -> q.Expr:
    return q.or_(*(q.ne(q.col(f"{mask}_{c}"), q.lit(0)) for c in range(max(1, -(-n // MASK_BITS)))))


def by_row(values: Mapping[int, q.Expr], otherwise: q.Expr, row: q.Expr | None = None) -> q.Expr:
    """`CASE row WHEN i THEN values[i] ... ELSE otherwise END`, as a binary search over the row indices (a few
    comparisons per row instead of one per spec row)."""
    row = row if row is not None else q.col("row")
    items = sorted(values.items())
    if len(items) <= 6:
        return q.case([(q.lit(i), v) for i, v in items], otherwise, subject=row)
    mid = len(items) // 2
    low, high = dict(items[:mid]), dict(items[mid:])
    return q.when(q.binary("<", row, q.lit(items[mid][0])), by_row(low, otherwise, row),
                  by_row(high, otherwise, row))


@dataclass(frozen=True, slots=True)
class Needs:
    """What the trace properties (of this machine and of others) read from one machine's staged rows: the rows, as
    conditions on its columns, the columns, and values computed for them."""

    rows: tuple[q.Expr, ...] = ()
    columns: frozenset[str] = frozenset()
    timeline: bool = False  # `exclusive`: each row's start (running maximum of ts_ms) and the next row's ts_ms
    computed: tuple[q.Aliased, ...] = ()

    def plus(self, rows: Sequence[q.Expr] = (), columns: Sequence[str] = (), timeline: bool = False,
             computed: Sequence[q.Aliased] = ()) -> Needs:
        return Needs((*self.rows, *rows), self.columns | set(columns), self.timeline or timeline,
                     (*self.computed, *computed))


@dataclass(slots=True)
class MachinePlan:
    spark: SparkSession
    spec: Spec
    read: Read
    needs: Needs = field(default_factory=Needs)
    _staged: DataFrame | None = None
    _flagged: Observation | None = None  # (classic Spark: the staged rows with a violation, counted by the pass)

    @property
    def m(self) -> ir.Machine:
        return self.spec.machine

    # ------------------------------------------------------------ codes

    def state(self, name: str) -> int:
        return code(self.m.state_type, name)

    def states(self, names: Sequence[str] | frozenset[str]) -> list[int]:
        return sorted(self.state(n) for n in names)

    def kind(self, name: str) -> int:
        return codes(self.m)["kind"].index(name)

    def event(self, name: str) -> int:
        return codes(self.m)["event"].index(name)

    def is_kind(self, *names: str) -> q.Expr:
        return q.in_(q.col("kind"), [self.kind(n) for n in names])

    def name_of(self, column: str, e: q.Expr | None = None) -> q.Expr:
        """A coded column's value as its name."""
        return q.pick(codes(self.m)[column], e if e is not None else q.col(column))

    # ------------------------------------------------------------ 1. map side

    def local(self, rows: DataFrame) -> DataFrame:
        """The row-local checks, computed where the rows are read."""
        post = SparkCompiler(POST)
        inv = masks([q.not_(post.holds(i.expr)) for i in self.m.invariants])
        return rows.selectExpr("*", *(q.sql(q.Aliased(e, n)) for e, n in [
            (self.legal(), "_legal"), (self.spec_row_ok(), "_sr_ok"), (self.error_ok(), "_err_ok"),
            *((m, f"_inv_{i}") for i, m in enumerate(inv))]))

    def legal(self) -> q.Expr:
        """The row's (from_state, event, to_state, row, kind) is in the table: as one number in a set of numbers
        (`packed`; the row index shifted by one, so that -1, a row of no spec row, is a field value too)."""
        events, states, rows = self.widths()
        legal = sorted(packed_number(list(zip((self.state(a), self.event(e), self.state(b), r + 1, self.kind(k)),
                                              (states, events, states, rows, 4), strict=True)))
                       for a, e, b, r, k in self.spec.table)
        row_ok = q.and_(q.binary(">=", q.col("row"), q.lit(-1)), q.binary("<", q.col("row"), q.lit(rows - 1)))
        number = packed([(q.col("from_state"), states), (q.col("event"), events), (q.col("to_state"), states),
                         (q.binary("+", q.col("row"), q.Lit(1, q.INT)), rows), (q.col("kind"), 4)])
        return q.and_(row_ok, q.In(number, tuple(q.Lit(v, q.INT) for v in legal)))

    def widths(self) -> tuple[int, int, int]:
        return len(codes(self.m)["event"]), len(self.m.states), len(self.spec.rows) + 1

    def spec_row_ok(self) -> q.Expr:
        """The row's index names a spec row with the row's event and kind."""
        events, n_rows = len(codes(self.m)["event"]), len(self.spec.rows)
        pairs = sorted(packed_number([(r.index, n_rows), (self.event(r.event), events), (self.kind(r.kind), 4)])
                       for r in self.spec.rows.values())
        row_ok = q.and_(q.binary(">=", q.col("row"), q.lit(0)), q.binary("<", q.col("row"), q.lit(n_rows)))
        number = packed([(q.col("row"), n_rows), (q.col("event"), events), (q.col("kind"), 4)])
        return q.holds(q.and_(row_ok, q.In(number, tuple(q.Lit(v, q.INT) for v in pairs))))

    def expected_error(self) -> q.Expr:
        rows = self.spec.rows
        return q.pick([rows[i].error for i in range(len(rows))], q.col("row"))

    def error_ok(self) -> q.Expr:
        return q.holds(q.eq(q.col("error"), self.expected_error()))

    # ------------------------------------------------------------ 2. the exchange and the window

    def order(self) -> list[Column]:
        names = [n for n, _ in typed_columns(self.m) if n != "seq"]
        return [F.col("seq"), *[F.col(n) for n in names]]

    def windowed(self, rows: DataFrame) -> DataFrame:
        w = Window.partitionBy("key", "_neg").orderBy(*self.order())
        lags = ["to_state", "seq", "coordinator_epoch", *(v.name for v in self.m.variables)]
        cols = [F.lag(c, 1).over(w).alias(f"p_{c}") for c in dict.fromkeys(lags)]
        cols.append(F.row_number().over(w).alias("_rn"))
        if self.needs.timeline:
            cols += [F.max("ts_ms").over(w.rowsBetween(Window.unboundedPreceding, Window.currentRow))
                     .alias("t_start"), F.lead("ts_ms", 1).over(w).alias("next_ts")]
        return rows.selectExpr("*", "seq < 0 AS _neg").select("*", *cols)

    # ------------------------------------------------------------ 3. after the window

    def pre(self, df: DataFrame) -> DataFrame:
        """The pre-state (`pre_state`, `pre_<var>`), `fresh`, `pre_known`, the effective `pending`, `pos`."""
        first, second = self.pre_stages()
        return df.selectExpr("*", *(q.sql(a) for a in first)).selectExpr("*", *(q.sql(a) for a in second))

    def pre_stages(self) -> tuple[list[q.Aliased], list[q.Aliased]]:
        """`pre`'s two projections as trees: `fresh`, `pre_known`; then `pre_state`, `pre_<var>`, `pending`, `pos`."""
        s = self.spec
        p_to = q.col("p_to_state")
        fresh = self.fresh()

        def value(fresh_value: q.Expr, previous: q.Expr) -> q.Expr:
            return q.case([(q.not_(q.col("pre_known")), q.NULL), (q.col("fresh"), fresh_value)], previous)

        c = SparkCompiler(PRE)
        pre = [q.Aliased(value(q.lit(self.state(s.initial)), p_to), "pre_state")]
        pre += [q.Aliased(value(c.tree(ir.Lit(v.default, v.type)) if v.default is not None else q.NULL,
                                q.col(f"p_{v.name}")), f"pre_{v.name}") for v in self.m.variables]
        pos = q.when(q.binary(">=", q.col("seq"), q.lit(0)), q.binary("-", q.col("_rn"), q.lit(1)), q.lit(-1))
        known = q.not_(q.and_(fresh, q.eq(q.col("kind"), q.lit(self.kind("load")))))
        pending = q.or_(q.col("pending"), q.holds(q.in_(pre[0].expr, self.states(s.pending_states))))
        return ([q.Aliased(fresh, "fresh"), q.Aliased(known, "pre_known")],
                [*pre, q.Aliased(pending, "eff_pending"), q.Aliased(pos, "pos")])

    def fresh(self) -> q.Expr:
        """The row starts an instance: no previous row (or a negative seq), or the previous one ended it."""
        s, p_to = self.spec, q.col("p_to_state")
        return q.or_(q.binary("<", q.col("seq"), q.lit(0)), q.IsNull(p_to), q.in_(p_to, self.states(s.final_states)),
                     q.and_(q.in_(p_to, self.states(s.terminal_states)),
                            q.eq(q.col("from_state"), q.lit(self.state(s.initial)))))

    def gate(self) -> q.Expr:
        """The rows whose guard, effects, frame and steps count: accepted, of a matching spec row, pre-state known."""
        return q.and_(q.binary(">=", q.col("seq"), q.lit(0)), q.col("_sr_ok"), self.is_kind(*ACCEPTED_KINDS),
                      q.col("pre_known"))

    def checks(self, df: DataFrame) -> DataFrame:
        """One projection, computed once per row: the condition of its spec row, the variables that differ from their
        effects and those that changed, the step properties that fail (each only on the rows it concerns), the values
        the trace properties read, and the columns the rest of the pass reads (the row narrows here).

        This projection is the one place the machine's guards and effects are evaluated, so its code is as large as
        the spec. It is kept out of whole-stage code generation (`BOUNDARY`): Spark then compiles it as a projection
        of its own, split into small methods, instead of one method per stage that a large machine pushes past the
        JVM's 64 KB limit (and past the JIT's limit long before)."""
        items = [*self.check_columns(), *self.needs.computed]
        items.append(q.Aliased(q.when(q.binary("<", q.col("seq"), q.lit(0)), self.row_json()), "row_json"))
        keep = [*PASSED, *(c for c in df.columns if c.startswith("_inv_")), *sorted(self.needs.columns),
                *(("t_start", "next_ts") if self.needs.timeline else ())]
        return df.selectExpr(*dict.fromkeys(q.sql(q.col(k)) for k in keep), *(q.sql(i) for i in items), BOUNDARY)

    def check_columns(self) -> list[q.Aliased]:
        """`checks`' row conditions as trees: each event's condition terms (`_cj_<i>`), the variables that changed
        (`_chg_<i>`), those that differ from their effects (`_eff_<i>`) and the failing step properties
        (`_steps_<i>`), as bit masks."""
        c = SparkCompiler(PRE)
        terms = self.condition_terms()
        known_row = q.and_(q.col("_sr_ok"), q.col("pre_known"))
        items = [q.Aliased(q.when(known_row, m, q.lit(0)), f"_cj_{i}") for i, m in enumerate(self.term_masks(c, terms))]
        items += [q.Aliased(m, f"_chg_{i}") for i, m in enumerate(
            masks([q.not_(q.same(q.col(v.name), q.col(f"pre_{v.name}"))) for v in self.m.variables]))]
        items += [q.Aliased(q.when(self.gate(), m, q.lit(0)), f"_eff_{i}") for i, m in enumerate(self.effect_masks(c))]
        items += [q.Aliased(q.when(self.gate(), m, q.lit(0)), f"_steps_{i}")
                  for i, m in enumerate(masks([self.step_fails(s) for s in self.m.steps]))]
        return items

    def condition_terms(self) -> dict[str, list[tuple[str, ir.Expr]]]:
        """Per event, the distinct parts (conjuncts) of its rows' conditions, each with how a null counts: a row's
        condition is its guard and its precondition share, all of whose conjuncts must hold; a transition's
        precondition may read an argument the runtime never computed (null), which is not evaluated (see `checks`).
        Lowering repeats an event's `check`s in every later row, so the distinct parts are far fewer than the rows'
        (ClassicGroup: 703 conjuncts, 231 distinct per event)."""
        out: dict[str, list[tuple[str, ir.Expr]]] = {}
        for r in self.m.rows:
            mine = out.setdefault(r.event, [])
            for mode, part in self.row_terms(r):
                if (mode, part) not in mine:
                    mine.append((mode, part))
        return out

    @staticmethod
    def row_terms(r: ir.Row) -> list[tuple[str, ir.Expr]]:
        guard = [("holds", x) for x in ir.conjuncts(r.guard) if x != ir.TRUE]
        mode = "unless_false" if isinstance(r, ir.Transition) else "holds"
        return guard + [(mode, x) for x in ir.conjuncts(r.assumes) if x != ir.TRUE]

    def term_masks(self, c: SparkCompiler, terms: dict[str, list[tuple[str, ir.Expr]]]) -> list[q.Expr]:
        """`_cj_<n>`: which of the row's event's condition parts hold (bit j of mask j // 62: the event's part j)."""
        width = max([len(t) for t in terms.values()] + [1])
        out = []
        for chunk in range(-(-width // MASK_BITS)):
            per_event = {}
            for event, parts in terms.items():
                bits = [q.holds(c.tree(x)) if mode == "holds" else q.coalesce(c.tree(x), q.TRUE)
                        for mode, x in parts[chunk * MASK_BITS:(chunk + 1) * MASK_BITS]]
                if bits:
                    (per_event[self.event(event)],) = masks(bits)
            out.append(by_row(per_event, q.lit(0), q.col("event")))
        return out

    def condition_ok(self) -> q.Expr:
        """The row's spec row's condition holds: every part it needs is set in `_cj_<n>` (true for a row that
        names no spec row)."""
        terms = self.condition_terms()
        chunks = -(-max([len(t) for t in terms.values()] + [1]) // MASK_BITS)
        out = []
        for chunk in range(chunks):
            needed = [0] * len(self.spec.rows)
            for r in self.m.rows:
                parts = terms[r.event]
                for term in self.row_terms(r):
                    j = parts.index(term)
                    if j // MASK_BITS == chunk:
                        needed[r.index] |= 1 << (j % MASK_BITS)
            need = q.pick(needed, q.col("row"), q.BIGINT)
            out.append(q.eq(q.binary("&", q.col(f"_cj_{chunk}"), need), need))
        return q.coalesce(q.and_(*out), q.TRUE)

    def effect_masks(self, c: SparkCompiler) -> list[q.Expr]:
        variables = [v.name for v in self.m.variables]
        out = []
        for start in range(0, len(variables), MASK_BITS):
            chunk = variables[start:start + MASK_BITS]
            per_row: dict[int, q.Expr] = {}
            for t in self.m.transitions:
                bits = {v: c.equal(ef.value, v, self.m.variable(v).type) for ef in t.effects
                        if (v := ef.var) in chunk}
                if bits:
                    per_row[t.index] = bit_or([q.when(ok, q.lit(0), q.lit(1 << chunk.index(v)))
                                               for v, ok in bits.items()])
            out.append(by_row(per_row, q.lit(0)))
        return out

    def step_fails(self, s: ir.StepProperty) -> q.Expr:
        c = SparkCompiler(Columns(coded=True))
        fails = q.not_(c.holds(s.expr))
        return fails if s.event is None else q.and_(q.eq(q.col("event"), q.lit(self.event(s.event))), fails)

    def unassigned(self, chunk: int) -> q.Expr:
        """The variables (of mask chunk `chunk`) the row's spec row does not assign, as a mask."""
        variables = [v.name for v in self.m.variables][chunk * MASK_BITS:(chunk + 1) * MASK_BITS]
        full = (1 << len(variables)) - 1
        by_index = {}
        for t in self.m.transitions:
            assigned = sum(1 << variables.index(ef.var) for ef in t.effects if ef.var in variables)
            by_index[t.index] = full & ~assigned
        return q.pick([by_index.get(i, full) for i in range(len(self.spec.rows))], q.col("row"), q.BIGINT)

    # ------------------------------------------------------------ the row checks (one method per check)

    def illegal_transition(self) -> q.Expr:
        return q.not_(q.col("_legal"))

    def discontinuity(self) -> q.Expr:
        return q.or_(*(cond for cond, _ in self.discontinuity_reasons()))

    def discontinuity_reasons(self) -> list[tuple[q.Expr, q.Expr]]:
        initial = q.lit(self.state(self.spec.initial))
        seq, p_seq = q.col("seq"), q.col("p_seq")
        started = q.and_(q.binary(">=", seq, q.lit(0)), q.IsNull(p_seq, negated=True))
        load = q.eq(q.col("kind"), q.lit(self.kind("load")))
        return [
            (q.and_(q.eq(seq, q.lit(-1)), q.or_(q.ne(q.col("kind"), q.lit(self.kind("reject"))),
                                                q.ne(q.col("from_state"), initial))),
             q.lit(f"a seq -1 row must be a rejection from {self.spec.initial}")),
            (q.and_(started, q.not_(q.col("fresh")), q.ne(q.col("from_state"), q.col("p_to_state")),
                    q.not_(q.and_(load, q.eq(q.col("from_state"), initial)))),
             q.concat("from_state ", self.name_of("from_state"), " but the previous row ended in ",
                      self.name_of("to_state", q.col("p_to_state")))),
            (q.and_(q.binary(">=", seq, q.lit(0)), q.col("fresh"), q.not_(load), q.ne(q.col("from_state"), initial)),
             q.concat("a first row starts from ", self.name_of("from_state"), f", not {self.spec.initial}")),
            (q.and_(started, q.eq(q.col("p_coordinator_epoch"), q.col("coordinator_epoch")),
                    q.ne(q.binary("-", seq, q.lit(1)), p_seq)),
             q.concat("seq ", q.text(seq), " follows ", q.text(p_seq), " in coordinator epoch ",
                      q.text(q.col("coordinator_epoch"))))]

    def guard_false(self) -> q.Expr:
        return q.and_(self.gate(), q.not_(self.condition_ok()))

    def effect_mismatch(self) -> q.Expr:
        return q.and_(self.gate(), any_bit("_eff", len(self.m.variables)))

    def frame_bad(self, chunk: int) -> q.Expr:
        return q.binary("&", q.col(f"_chg_{chunk}"), self.unassigned(chunk))

    def frame_mismatch(self) -> q.Expr:
        chunks = range(max(1, -(-len(self.m.variables) // MASK_BITS)))
        return q.and_(self.gate(), q.or_(*(q.ne(self.frame_bad(i), q.lit(0)) for i in chunks)))

    def reject_changed_state(self) -> q.Expr:
        return q.and_(q.eq(q.col("kind"), q.lit(self.kind("reject"))), q.col("pre_known"),
                      any_bit("_chg", len(self.m.variables)))

    def wrong_error(self) -> q.Expr:
        false_condition = q.and_(q.eq(q.col("kind"), q.lit(self.kind("reject"))), q.not_(self.condition_ok()))
        return q.and_(q.col("_sr_ok"), q.col("pre_known"), q.or_(q.not_(q.col("_err_ok")), false_condition))

    def flags(self, df: DataFrame) -> DataFrame:
        checks: list[Callable[[], q.Expr]] = [getattr(self, name) for name in ROW_FLAGS]
        (flags,) = masks([q.holds(check()) for check in checks])
        return df.selectExpr("*", q.sql(q.Aliased(flags, "_flags")))

    # ------------------------------------------------------------ 4. the staged rows

    def violated(self) -> q.Expr:
        return q.or_(q.ne(q.col("_flags"), q.lit(0)), any_bit("_inv", len(self.m.invariants)),
                     any_bit("_steps", len(self.m.steps)))

    def staged(self) -> DataFrame:
        """The pass (run at the first call, in a job of its own): the rows with a violation or that a trace property
        reads, checkpointed on local disk. A checkpoint, not a persisted frame: what reads these rows afterwards
        (the row violations, every trace property, the union of them all) is planned over a leaf that holds them
        (`LogicalRDD`), not over the pass's plan with the spec's large expressions — Spark analyses a frame's whole
        plan again for each frame built on it, and deduplicates every copy of it in a union (on a 10k-row
        simulator trace that was about half of the run's CPU; benchmarks/RESULTS.md, issue 33)."""
        if self._staged is None:
            df = self.pass_stages()[-1][1]
            if _classic(df):  # (the checkpoint's job runs the pass, and fills in the read's observation: `Read.tally`)
                if self.read.observations:  # (and counts the flagged rows among the few staged: `flagged`)
                    self._flagged = Observation()
                    df = df.observe(self._flagged, F.count(F.when(F.expr(q.sql(self.violated())), 1)).alias("n"))
                self._staged = df.localCheckpoint(eager=True, storageLevel=StorageLevel.DISK_ONLY)
            else:  # Spark Connect reports no observation from a checkpoint's job: persisted, and counted to run it
                self._staged = df.persist(StorageLevel.DISK_ONLY)
                self._staged.count()
        return self._staged

    def pass_stages(self) -> list[tuple[str, DataFrame]]:
        """The pass's plan after each of its stages, in order (the last is the pass `staged` runs): the validated rows
        (`read`), counted, the map side's row-local checks (`local`), the exchange and window, the pre-state, the
        checks and their flags, the filter to the staged rows. `benchmarks/bench_traces.py --stages` runs each prefix
        on its own to split the pass's cost by stage."""
        out = [("validated", self.read.valid), ("observed", self.read.counted)]
        for name, step in (("local", self.local), ("windowed", self.windowed), ("pre", self.pre),
                           ("checks", lambda df: self.flags(self.checks(df)))):
            out.append((name, step(out[-1][1])))
        # (the filter reads `_boundary`, so that the optimiser keeps it: see BOUNDARY)
        df = out[-1][1].where(q.sql(q.or_(self.violated(), *self.needs.rows,
                                          q.IsNull(q.col("_boundary"), negated=True))))
        return [*out, ("filtered", df.selectExpr(*self.staged_columns(df.columns)))]

    def staged_columns(self, present: list[str]) -> list[str]:
        drop = {"_legal", "_sr_ok", "_boundary"}
        return [q.sql(q.col(c)) for c in present if c not in drop]

    def row_json(self) -> q.Expr:
        """A row as the JSON of its trace columns (names as names): the witness of a row about no instance."""
        names = codes(self.m)
        values: list[tuple[str, q.Expr]] = [("machine", q.lit(self.m.name))]
        for n, _ in typed_columns(self.m):
            if n not in names:
                values.append((n, q.col(n)))
            elif n in _set_columns(self.m):
                values.append((n, q.transform(q.col(n), lambda x, n=n: self.name_of(n, x))))  # type: ignore[misc]
            else:
                values.append((n, self.name_of(n)))
        return q.json_of(q.Struct(tuple(values)))

    def release(self) -> None:
        """Drop the staged rows now (a checkpoint would stay on disk until the JVM collects its RDD)."""
        if self._staged is not None:
            if _classic(self._staged):
                self._staged._jdf.queryExecution().analyzed().rdd().unpersist(False)  # (the checkpoint's `LogicalRDD`)
            else:
                self._staged.unpersist()
            self._staged, self._flagged = None, None

    # ------------------------------------------------------------ the row checks' violations

    def flagged(self) -> bool:
        """Whether a staged row has a violation (a row check's, an invariant's or a step's), as the pass counted them
        (runs it if it has not run): else `row_violations` is empty and need not be planned — its generated code is
        the largest of the run (a struct and a message per check, `found`). Over Spark Connect, or with no file
        read, always true."""
        self.staged()
        return self._flagged is None or int(self._flagged.get["n"]) > 0

    def row_violations(self) -> DataFrame:
        """One row per violated row check, invariant and step, with its message, from the staged rows."""
        df = self.staged().where(q.sql(self.violated()))
        found = [self.found_struct(bit, check, name, message) for bit, check, name, message in self.found()]
        none = q.null(q.SqlType("STRUCT<check: STRING, name: STRING, message: STRING>"))
        array = q.fn("array_except", q.fn("array", *found), q.fn("array", none))
        df = df.select("*", F.explode(F.expr(q.sql(array))).alias("_v"))
        seq_from = q.when(q.and_(q.eq(q.nested("_v", "check"), q.lit("discontinuity")),
                                 q.IsNull(q.col("p_seq"), negated=True)), q.col("p_seq"), q.col("seq"))
        return df.select(F.lit(self.m.name).alias("machine"), "key", F.col("_v.check").alias("check"),
                         F.col("_v.name").alias("name"), "seq", F.expr(q.sql(seq_from)).alias("seq_from"),
                         F.col("seq").alias("seq_to"), self.location_column(), F.col("_v.message").alias("message"),
                         "pos", "row_json")

    def found_struct(self, bit: q.Expr, check: str, name: q.Expr, message: q.Expr) -> q.Expr:
        return q.when(bit, q.Struct((("check", q.lit(check)), ("name", name), ("message", message))))

    def found(self) -> list[tuple[q.Expr, str, q.Expr, q.Expr]]:
        """(bit, check, name, message) of every row check, invariant and step, in `checks.CHECKS` order."""
        flag = {check: q.ne(q.binary("&", q.col("_flags"), q.lit(1 << i)), q.lit(0))
                for i, check in enumerate(ROW_FLAGS)}
        label = q.pick([self.spec.rows[i].label for i in range(len(self.spec.rows))], q.col("row"))
        reasons = self.discontinuity_reasons()
        discontinuity = q.fn("concat_ws", q.lit("; "), *(q.when(c, m) for c, m in reasons))
        out: list[tuple[q.Expr, str, q.Expr, q.Expr]]
        out = [(flag["illegal_transition"], "illegal_transition", q.lit(""), q.concat(
            self.name_of("from_state"), " --", self.name_of("event"), "#", q.text(q.col("row")), " (",
            self.name_of("kind"), ")--> ", self.name_of("to_state"), " is not in the table")),
            (flag["discontinuity"], "discontinuity", q.lit(""), discontinuity),
            (flag["guard_false"], "guard_false", label, q.concat("the guard of ", label, " is false on the pre-state"))]
        eff = self.names("_eff")
        frame = self.names("_chg", self.frame_bad)
        chg = self.names("_chg")
        out += [(flag["effect_mismatch"], "effect_mismatch", eff, q.concat(label, " assigns ", _spaced(eff),
                                                                           " otherwise")),
                (flag["frame_mismatch"], "frame_mismatch", frame, q.concat(label, " does not assign ",
                                                                            _spaced(frame), ", yet they changed")),
                (flag["reject_changed_state"], "reject_changed_state", chg, q.concat("a rejection changed ",
                                                                                     _spaced(chg)))]
        wrong = q.not_(q.col("_err_ok"))
        false_condition = q.and_(q.eq(q.col("kind"), q.lit(self.kind("reject"))), q.not_(self.condition_ok()))
        message = q.fn("concat_ws", q.lit("; "), q.when(wrong, q.concat(
            "error ", q.col("error"), ", but ", label, " answers ", self.expected_error())), q.when(
            false_condition, q.concat("the condition of ", label, " is false on the pre-state")))
        out.append((flag["wrong_error"], "wrong_error", label, message))
        out += [(q.and_(q.binary(">=", q.col("seq"), q.lit(0)), has_bit("_inv", i)), "invariant", q.lit(inv.name),
                 q.lit(f"invariant {inv.name} is false after the row")) for i, inv in enumerate(self.m.invariants)]
        out += [(has_bit("_steps", i), "step", q.lit(s.name), q.lit(f"step property {s.name} is false on this row"))
                for i, s in enumerate(self.m.steps)]
        return out

    def names(self, mask: str, value: Callable[[int], q.Expr] | None = None) -> q.Expr:
        """The variables whose bit is set in the masks `<mask>_<n>`, comma-separated."""
        items = []
        for i, v in enumerate(self.m.variables):
            chunk = value(i // MASK_BITS) if value else q.col(f"{mask}_{i // MASK_BITS}")
            bit = q.ne(q.binary("&", chunk, q.lit(1 << (i % MASK_BITS))), q.lit(0))
            items.append(q.when(bit, q.lit(v.name)))
        return q.fn("concat_ws", q.lit(","), *items) if items else q.lit("")

    def location_column(self) -> Column:
        return F.expr(q.sql(self.location(q.nested("_v", "check"), q.nested("_v", "name")))).alias("location")

    def location(self, check: q.Expr, name: q.Expr) -> q.Expr:
        """Where a row check points, for a violation's `check` and `name` (twin: `checks.row_check_location`)."""
        rows = [self.spec.rows[i].location for i in range(len(self.spec.rows))]
        machine = q.lit(location(self.m.span))
        props = {x.name: location(x.span) for x in self.m.invariants} | {x.name: location(x.span) for x in self.m.steps}
        event_at = {e.name: location(e.span) for e in self.m.events}
        row_at = q.pick(rows, q.col("row"))
        prop_at = q.case([(q.lit(k), q.lit(v)) for k, v in sorted(props.items())], subject=name)
        event_loc = q.pick([event_at.get(e) for e in codes(self.m)["event"]], q.col("event"))
        return q.case([(q.in_(check, ["invariant", "step"]), prop_at), (q.eq(check, q.lit("discontinuity")), machine),
                       (q.IsNull(row_at, negated=True), row_at),
                       (q.eq(check, q.lit("illegal_transition")), q.coalesce(event_loc, machine))], machine)


def _classic(df: DataFrame) -> bool:
    """A frame of a classic session (in this process's JVM), not of Spark Connect's client."""
    return hasattr(df, "_jdf")


def _spaced(names: q.Expr) -> q.Expr:
    return q.fn("replace", names, q.lit(","), q.lit(", "))


def _set_columns(m: ir.Machine) -> set[str]:
    out = {f.name for f in (*m.keys, *m.variables) if isinstance(f.type, ir.SetType)}
    return out | {f"arg_{p.name}" for e in m.events for p in e.params if isinstance(p.type, ir.SetType)}

