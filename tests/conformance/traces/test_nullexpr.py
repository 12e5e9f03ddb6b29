"""The Python checker evaluates a condition on a row with nulls as the SQL checkers do: SQL's three-valued logic."""

from __future__ import annotations

import pytest

from kcoord.conformance.traces.checks import Spec
from kcoord.conformance.traces.pyrowcheck import MachineChecker
from kcoord.model import ir
from kcoord.model.loader import bundled_machines

X = ir.ParamRef("x", ir.INT_ANY)
Y = ir.ParamRef("y", ir.BOOL)
X_KNOWN = ir.Binary("ge", X, ir.Lit(0, ir.INT_ANY), ir.BOOL)  # x >= 0: unknown for a null x


def _checker() -> MachineChecker:
    return MachineChecker(Spec.of(dict(bundled_machines())["ConsumerGroupMember"]), [], None)


@pytest.mark.parametrize("y, holds", [(True, True), (False, False)])
def test_or_with_a_null_operand_is_kleenes_whatever_the_order(y: bool, holds: bool) -> None:
    """`x >= 0 or y` and `y or x >= 0` with x null: true when y is (SQL's `NULL OR TRUE`), else unknown — which
    does not hold, and is not false either."""
    k, args = _checker(), {"x": None, "y": y}
    for e in (ir.Binary("or", X_KNOWN, Y, ir.BOOL), ir.Binary("or", Y, X_KNOWN, ir.BOOL)):
        assert k.holds(e, {}, args) is holds, e
        assert k.not_false(e, {}, args), e


@pytest.mark.parametrize("y, not_false", [(True, True), (False, False)])
def test_and_with_a_null_operand_is_kleenes_whatever_the_order(y: bool, not_false: bool) -> None:
    """`x >= 0 and y` / `y and x >= 0` with x null: false when y is (SQL's `NULL AND FALSE`), else unknown."""
    k, args = _checker(), {"x": None, "y": y}
    for e in (ir.Binary("and", X_KNOWN, Y, ir.BOOL), ir.Binary("and", Y, X_KNOWN, ir.BOOL)):
        assert not k.holds(e, {}, args), e
        assert k.not_false(e, {}, args) is not_false, e


def test_unknown_values_propagate_as_in_sql() -> None:
    """`not`, arithmetic, membership and `if` with a null: `not (x + 1 in {1})` unknown; `if x >= 0 then..`
    takes the else branch (`CASE WHEN NULL`); `min(x, 3)` skips the null (`least`)."""
    k, args = _checker(), {"x": None, "y": True}
    one = ir.Lit(1, ir.INT_ANY)
    member = ir.Unary("not", ir.Binary("in", ir.Binary("add", X, one, ir.INT_ANY),
                                       ir.SetLit((one,), ir.SetType(ir.INT_ANY)), ir.BOOL), ir.BOOL)
    assert not k.holds(member, {}, args) and k.not_false(member, {}, args)
    assert k.holds(ir.Ite(X_KNOWN, ir.FALSE, Y, ir.BOOL), {}, args)
    three = ir.Lit(3, ir.INT_ANY)
    assert k.holds(ir.Binary("eq", ir.Call("min", (X, three), ir.INT_ANY), three, ir.BOOL), {}, args)
