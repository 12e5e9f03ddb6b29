"""The Python backend: the translation and the evaluator agree with the language's meaning."""

from __future__ import annotations

import pytest

from kcoord.model.pyexpr import PythonEvaluator, to_python

from .helpers import machine

M = machine("""
machine Demo
  key id: string
  enum Color { RED, GREEN }
  var n: int32 = 0
  var s: set[member] = {}
  var c: Color = RED
  var flag: bool = false
  initial state A "a"
  state B "b"
  event E() "e"
    from A -> B
    from B -> A
  invariant i1: n >= 0 -> n + 1 > n
  invariant i2: (s | {"x"}) - {"y"} subset (s | {"x"})
  invariant i3: if flag then c == GREEN else c == RED or c == GREEN
  invariant i4: state in {A, B} and "m" not in (s & {"z"})
  invariant i5: min(n, 3) <= max(n, 3)
""")


@pytest.mark.parametrize("name", ["i1", "i2", "i3", "i4", "i5"])
def test_tautologies_hold_on_assorted_states(name: str) -> None:
    inv = next(i for i in M.invariants if i.name == name)
    ev = PythonEvaluator()
    for n in (-5, 0, 7):
        for s in (frozenset(), frozenset({"x", "y"}), frozenset({"m", "z"})):
            for flag, c in ((False, "RED"), (True, "GREEN"), (False, "GREEN")):
                state = {"id": "k", "state": "A", "n": n, "s": s, "c": c, "flag": flag}
                assert ev.holds(inv.expr, state), (name, state)


def test_translation_is_deterministic_and_folds_constant_membership() -> None:
    inv = next(i for i in M.invariants if i.name == "i4")
    src = to_python(inv.expr)
    assert src == to_python(inv.expr)
    assert "(s['state'] in {'A', 'B'})" in src


def test_implication_false_only_when_premise_true_and_conclusion_false() -> None:
    m = machine("""
    machine Demo
      key id: string
      var a: bool = false
      var b: bool = false
      initial state A "a"
      event E() "e"
        from A -> A
      invariant imp: a -> b
    """)
    ev = PythonEvaluator()
    table = {(a, b): ev.holds(m.invariants[0].expr, {"state": "A", "id": "", "a": a, "b": b})
             for a in (False, True) for b in (False, True)}
    assert table == {(False, False): True, (False, True): True, (True, False): False, (True, True): True}
