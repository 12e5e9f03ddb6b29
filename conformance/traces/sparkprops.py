"""The trace properties on Spark (`exclusive`, `monotonic`, `within`, `before`, `fenced`; see `checks`), each a small
plan over the staged rows of the machines it reads (`sparkcheck.MachinePlan.staged`).

Owns: `needs` (what each machine's pass must keep for the properties of every machine: the rows, the columns, the
values computed on the way) and `violations` (every property's violations, as rows of the violations table).
Must not import: kcoord.cli.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping

from pyspark.sql import Column, DataFrame, Window, WindowSpec
from pyspark.sql import functions as F

from kcoord.model import ir
from kcoord.model import sqltree as q
from kcoord.model.spark_backend import SparkCompiler

from .checks import ACCEPTED_KINDS, NEVER, location, other_machine
from .sparkcheck import POST, MachinePlan, Needs

# ---------------------------------------------------------------- what each pass keeps


def needs(plans: Mapping[str, MachinePlan]) -> dict[str, Needs]:
    """Per machine, what the trace properties of every machine read from its staged rows."""
    out = {name: Needs() for name in plans}
    for name, plan in plans.items():
        for i, prop in enumerate(plan.m.traces):
            out[name] = _OWN[prop.form](plan, prop, i, out[name])
            other = other_machine(prop) if prop.form in ("before", "fenced") else name
            if other != name and other in plans:
                out[other] = _OTHER[prop.form](plans[other], prop, out[other])
            elif other == name and prop.form in _OTHER:
                out[name] = _OTHER[prop.form](plan, prop, out[name])
    return out


def _in_sequence() -> q.Expr:
    return q.binary(">=", q.col("seq"), q.lit(0))


def entering(plan: MachinePlan, states: tuple[str, ...]) -> q.Expr:
    """The row enters one of `states`: its to_state is one, its pre-state's state is not (or is unknown)."""
    codes = plan.states(states)
    return q.and_(q.in_(q.col("to_state"), codes), q.or_(q.not_(q.col("pre_known")),
                                                         q.not_(q.holds(q.in_(q.col("pre_state"), codes)))))


def _exclusive_needs(plan: MachinePlan, prop: ir.TraceProperty, i: int, n: Needs) -> Needs:
    (var,) = prop.subject
    rows = q.and_(q.not_(q.in_(q.col("to_state"), plan.states(plan.spec.final_states))),
                  q.binary(">", q.fn("size", q.col(var)), q.lit(0)))
    return n.plus([rows], [var, *prop.per], timeline=True)


def _monotonic_needs(plan: MachinePlan, prop: ir.TraceProperty, i: int, n: Needs) -> Needs:
    (var,) = prop.subject
    rows = q.and_(_in_sequence(), q.ne(q.col("kind"), q.lit(plan.kind("reject"))))
    return n.plus([rows], [var, *prop.per])


def _within_needs(plan: MachinePlan, prop: ir.TraceProperty, i: int, n: Needs) -> Needs:
    assert prop.bound is not None
    rows = q.and_(_in_sequence(), q.or_(q.in_(q.col("to_state"), plan.states(prop.states_to)),
                                        entering(plan, prop.states_from)))
    bound = SparkCompiler(POST).tree(prop.bound)
    deadline = q.binary("+", q.Cast(q.col("ts_ms"), q.DECIMAL38), q.Cast(bound, q.DECIMAL38))
    return n.plus([rows], computed=[q.Aliased(deadline, f"_deadline_{i}")])


def _before_needs(plan: MachinePlan, prop: ir.TraceProperty, i: int, n: Needs) -> Needs:
    state = prop.subject[1]
    run_start = q.or_(q.IsNull(q.col("p_to_state")), q.ne(q.col("p_to_state"), q.col("to_state")))
    rows = q.and_(_in_sequence(), q.or_(entering(plan, (state,)), run_start))
    variables = {v.name for v in plan.m.variables}
    before = [q.Aliased(q.when(q.col("pre_known"), q.col(f"pre_{k}"), q.col(k)) if k in variables else q.col(k),
                        f"_bk_{i}_{k}") for k in prop.per]
    return n.plus([rows], ["p_to_state"], computed=before)


def _fenced_needs(plan: MachinePlan, prop: ir.TraceProperty, i: int, n: Needs) -> Needs:
    event, param = prop.subject[1], prop.subject[2]
    rows = q.and_(_in_sequence(), q.eq(q.col("event"), q.lit(plan.event(event))), plan.is_kind(*ACCEPTED_KINDS))
    return n.plus([rows], [f"arg_{param}", *prop.per])


def _before_other(plan: MachinePlan, prop: ir.TraceProperty, n: Needs) -> Needs:
    """`before M.S requires N.E on K`: N's accepted rows of event E."""
    event = prop.subject[3]
    if event not in {e.name for e in plan.m.events}:
        return n
    rows = q.and_(_in_sequence(), q.eq(q.col("event"), q.lit(plan.event(event))), plan.is_kind(*ACCEPTED_KINDS))
    return n.plus([rows], list(prop.per))


def _fenced_other(plan: MachinePlan, prop: ir.TraceProperty, n: Needs) -> Needs:
    """`fenced M.E.p by N.v on K`: every row of N."""
    return n.plus([_in_sequence()], [prop.subject[4], *prop.per])


_OWN: dict[str, Callable[[MachinePlan, ir.TraceProperty, int, Needs], Needs]] = {
    "exclusive": _exclusive_needs, "monotonic": _monotonic_needs, "within": _within_needs,
    "before": _before_needs, "fenced": _fenced_needs}
_OTHER: dict[str, Callable[[MachinePlan, ir.TraceProperty, Needs], Needs]] = {
    "before": _before_other, "fenced": _fenced_other}


# ---------------------------------------------------------------- the properties


def violations(plans: Mapping[str, MachinePlan], plan: MachinePlan) -> list[DataFrame]:
    """The violations of every trace property of `plan`'s machine (its pass has run: `staged` is persisted)."""
    out = []
    base = plan.staged().where(q.sql(_in_sequence()))
    for i, prop in enumerate(plan.m.traces):
        found = _PLANS[prop.form](plans, plan, base, prop, i)
        if found is not None:
            out.append(found)
    return out


def property_rows(plan: MachinePlan, df: DataFrame, prop: ir.TraceProperty, message: Column) -> DataFrame:
    return df.select(F.lit(plan.m.name).alias("machine"), "key", F.lit(prop.form).alias("check"),
                     F.lit(prop.name).alias("name"), "seq", F.col("seq").alias("seq_from"),
                     F.col("seq").alias("seq_to"), F.lit(location(prop.span)).alias("location"),
                     message.alias("message"), "pos", F.lit(None).cast("string").alias("row_json"))


def exclusive(plans: Mapping[str, MachinePlan], plan: MachinePlan, base: DataFrame, prop: ir.TraceProperty,
              i: int) -> DataFrame:
    (var,) = prop.subject
    finals = q.in_(q.col("to_state"), plan.states(plan.spec.final_states))
    # a key's last row holds its value for ever (`greatest` would skip the null next_ts and end it at its start)
    end = q.when(q.IsNull(q.col("next_ts")), q.lit(NEVER), q.fn("greatest", q.col("t_start"), q.col("next_ts")))
    df = base.selectExpr("*", q.sql(q.Aliased(end, "t_end")))
    df = df.where(q.sql(q.and_(q.not_(finals), q.binary(">", q.col("t_end"), q.col("t_start")),
                               q.binary(">", q.fn("size", q.col(var)), q.lit(0)))))
    df = df.select("key", "seq", "pos", "t_start", "t_end", *prop.per, F.explode(var).alias("x"))
    w = Window.partitionBy(*prop.per, "x").orderBy("t_start", "key", "seq", "t_end") \
        .rowsBetween(Window.unboundedPreceding, -1)
    df = df.select("*", F.max("t_end").over(w).alias("latest")).where("t_start < latest")
    df = df.groupBy("key", "seq", "pos").agg(F.min(F.col("x").cast("string")).alias("x"))
    message = F.concat(F.lit(f"{var} element "), F.col("x"),
                       F.lit(f" is also held by another instance with equal {', '.join(prop.per)}"))
    return property_rows(plan, df, prop, message)


def monotonic(plans: Mapping[str, MachinePlan], plan: MachinePlan, base: DataFrame, prop: ir.TraceProperty,
              i: int) -> DataFrame:
    (var,) = prop.subject

    def before(*partition: str) -> WindowSpec:
        return Window.partitionBy(*partition).orderBy("ts_ms", "seq", "key", var) \
            .rowsBetween(Window.unboundedPreceding, -1)

    accepted = base.where(F.col("kind") != F.lit(plan.kind("reject")))  # a rejection changes nothing (checks.py)
    load = F.col("kind") == F.lit(plan.kind("load"))  # a load is compared with its own key's rows only (checks.py)
    df = accepted.select("*", F.when(load, F.max(var).over(before(*prop.per, "key")))
                         .otherwise(F.max(var).over(before(*prop.per))).alias("top"))
    df = df.where(F.col(var) < F.col("top"))
    where = F.when(load, F.lit(", held before by this instance (a load)")) \
        .otherwise(F.lit(f", seen before for equal {', '.join(prop.per)}"))
    message = F.concat(F.lit(f"{var} = "), F.col(var).cast("string"), F.lit(" is below "),
                       F.col("top").cast("string"), where)
    return property_rows(plan, df, prop, message)


def _by_position() -> WindowSpec:
    """The key sequences in order, over the staged rows (`pos` numbers them in the checks' order)."""
    return Window.partitionBy("key").orderBy("pos")


def within(plans: Mapping[str, MachinePlan], plan: MachinePlan, base: DataFrame, prop: ir.TraceProperty,
           i: int) -> DataFrame:
    """Rows entering A whose instance reaches B late or never: the first row at or after each one that reaches B
    is found over those rows and the rows in B only (`lead ... IGNORE NULLS`: one forward scan)."""
    end = plan.read.tally().end
    reached = q.in_(q.col("to_state"), plan.states(prop.states_to))
    hit = q.when(reached, q.struct(ts_ms=q.col("ts_ms"), seq=q.col("seq")))
    enter = entering(plan, prop.states_from)
    df = base.where(q.sql(q.or_(reached, enter))).selectExpr("*", q.sql(q.Aliased(hit, "_hit")),
                                                               q.sql(q.Aliased(enter, "_entering")))
    df = df.select("*", F.coalesce(F.col("_hit"), F.expr("lead(_hit, 1) IGNORE NULLS").over(_by_position()))
                   .alias("_next_b")).where("_entering")
    deadline = q.col(f"_deadline_{i}")
    late = q.and_(q.IsNull(q.nested("_next_b", "ts_ms"), negated=True),
                  q.binary(">", q.nested("_next_b", "ts_ms"), deadline))
    hanging = q.and_(q.IsNull(q.col("_next_b")), q.binary(">", q.lit(end), deadline)) if end is not None else q.FALSE
    df = df.where(q.sql(q.or_(q.IsNull(deadline), late, hanging)))
    targets = ", ".join(prop.states_to)
    entered = q.concat("entered ", plan.name_of("to_state"), " at ts ", q.text(q.col("ts_ms")), ", deadline ",
                       q.text(deadline))
    message = q.case([(q.IsNull(deadline), q.lit("the bound cannot be evaluated")),
                      (late, q.concat(entered, f", reached {targets} at ", q.text(q.nested("_next_b", "ts_ms"))))],
                     q.concat(entered, f", not reached by the end of the trace ({end})"))
    return property_rows(plan, df, prop, F.expr(q.sql(message)))


def since(plan: MachinePlan, base: DataFrame, state: str) -> DataFrame:
    """The rows entering `state`, each with `_since`: the time its instance entered the state the row leaves (the
    first row of the run of equal to_states just before it; null for a first row)."""
    run = q.when(q.or_(q.IsNull(q.col("p_to_state")), q.ne(q.col("p_to_state"), q.col("to_state"))), q.col("ts_ms"))
    enter = entering(plan, (state,))
    df = base.selectExpr("*", q.sql(q.Aliased(run, "_run")), q.sql(q.Aliased(enter, "_entering"))) \
        .where("_run IS NOT NULL OR _entering")
    w = _by_position()
    df = df.select("*", F.last("_run", ignorenulls=True).over(
        w.rowsBetween(Window.unboundedPreceding, Window.currentRow)).alias("_entered"))
    return df.select("*", F.lag("_entered", 1).over(w).alias("_since")).where("_entering")


def before(plans: Mapping[str, MachinePlan], plan: MachinePlan, base: DataFrame, prop: ir.TraceProperty,
           i: int) -> DataFrame | None:
    state, other, event = prop.subject[1], prop.subject[2], prop.subject[3]
    theirs = plans.get(other)
    if theirs is None:
        return None
    rows = base if theirs is plan else theirs.staged().where(q.sql(_in_sequence()))
    known = event in {e.name for e in theirs.m.events}  # (an event N does not have: no row of N is one)
    wanted = q.and_(q.eq(q.col("event"), q.lit(theirs.event(event))), theirs.is_kind(*ACCEPTED_KINDS)) if known \
        else q.FALSE
    events = rows.where(q.sql(wanted)) \
        .select(*[F.col(k).alias(f"_e_{k}") for k in prop.per], F.col("ts_ms").alias("_e_ts"))
    entering_rows = since(plan, base, state)
    cond = [F.col(f"_bk_{i}_{k}") == F.col(f"_e_{k}") for k in prop.per]
    cond += [F.col("_e_ts") <= F.col("ts_ms"), F.col("_since").isNull() | (F.col("_e_ts") >= F.col("_since"))]
    df = entering_rows.join(events, cond, "left_anti")
    window = F.when(F.col("_since").isNull(), F.lit("before it")) \
        .otherwise(F.concat(F.lit("since ts "), F.col("_since").cast("string")))
    message = F.concat(F.lit(f"entered {state} at ts "), F.col("ts_ms").cast("string"),
                       F.lit(f" without a {other}.{event} on {', '.join(prop.per)} "), window)
    return property_rows(plan, df, prop, message)


def fenced(plans: Mapping[str, MachinePlan], plan: MachinePlan, base: DataFrame, prop: ir.TraceProperty,
           i: int) -> DataFrame | None:
    event, param, other, var = prop.subject[1], prop.subject[2], prop.subject[3], prop.subject[4]
    theirs_plan = plans.get(other)
    if theirs_plan is None:
        return None
    rows = base if theirs_plan is plan else theirs_plan.staged().where(q.sql(_in_sequence()))
    mine = base.where(q.sql(q.and_(q.eq(q.col("event"), q.lit(plan.event(event))),
                                   plan.is_kind(*ACCEPTED_KINDS)))).select(
        *prop.per, "ts_ms", F.lit(0).alias("flag"), "seq", "key", F.col(f"arg_{param}").alias("value"), "pos")
    theirs = rows.select(*prop.per, "ts_ms", F.lit(1).alias("flag"), "seq", "key", F.col(var).alias("value"),
                         F.lit(-1).alias("pos"))
    w = Window.partitionBy(*prop.per).orderBy("ts_ms", "flag", "seq", "key", "value") \
        .rowsBetween(Window.unboundedPreceding, Window.currentRow)
    df = mine.unionByName(theirs)
    df = df.select("*", F.last(F.when(F.col("flag") == 1, F.col("value")), ignorenulls=True).over(w)
                   .alias("latest"))
    df = df.where("flag = 0 AND latest IS NOT NULL AND value < latest")
    message = F.concat(F.lit(f"{event}.{param} = "), F.col("value").cast("string"),
                       F.lit(f" is below the latest {other}.{var} = "), F.col("latest").cast("string"))
    return property_rows(plan, df, prop, message)


_PLANS: dict[str, Callable[[Mapping[str, MachinePlan], MachinePlan, DataFrame, ir.TraceProperty, int],
                           DataFrame | None]] = {
    "exclusive": exclusive, "monotonic": monotonic, "within": within, "before": before, "fenced": fenced}


def not_checked(plan: MachinePlan, others: Mapping[str, object]) -> list[str]:
    out = []
    for prop in plan.m.traces:
        if prop.form in ("before", "fenced"):
            other = other_machine(prop)
            if other != plan.m.name and other not in others:
                out.append(f"{plan.m.name}.{prop.name}: no {other} rows in the input")
    return out
