"""The checker's lowering: what the rows of an event mean."""

from __future__ import annotations

from kcoord.model import ir
from kcoord.model.pretty import render
from kcoord.model.pyexpr import PythonEvaluator, initial_state

from .helpers import errors, machine

DEMO = """
machine Demo "doc"
  key id: string
  enum Result { COMMIT, ABORT }
  var epoch: int16 = 0
  var parts: set[partition] = {}
  initial state Idle "idle"
  state Busy "busy"
  event Add(e: int16, p: set[partition]) "add"
    let same = e == epoch
    check same else PRODUCER_FENCED
    check not pending else CONCURRENT_TRANSACTIONS
    reject in Busy when p subset parts with NONE
    from Idle -> Busy "open" when p != {} ensures parts' == parts | p, epoch' == epoch + 1
    reject in Idle when p == {} with INVALID_REQUEST
    from Busy -> Busy when not (p subset parts) ensures parts' == parts | p
  event Done(r: Result) "done"
    from Busy -> Idle when r == COMMIT ensures parts' == {} answer NONE
    from Busy -> Idle when r == ABORT ensures parts' == {} answer TRANSACTION_ABORTABLE
    reject in Idle with INVALID_TXN_STATE
  internal event Tick() "tick"
    from Busy -> Busy
  invariant idle_clean: state == Idle -> parts == {}
"""


def test_checks_become_rejection_rows_in_order_and_guard_every_later_row() -> None:
    m = machine(DEMO)
    add = [r for r in m.rows if r.event == "Add"]
    first, second = add[0], add[1]
    assert isinstance(first, ir.Rejection) and first.origin == "check" and first.error == "PRODUCER_FENCED"
    assert render(first.guard) == "e != epoch"
    assert isinstance(second, ir.Rejection) and second.error == "CONCURRENT_TRANSACTIONS"
    assert render(second.guard) == "e == epoch and pending"
    for row in add[2:]:
        assert render(row.guard).startswith("e == epoch and not pending"), render(row.guard)
    assert first.sources == ("Idle", "Busy")


def test_rows_are_disjoint_so_exactly_one_answers() -> None:
    m = machine(DEMO)
    ev = PythonEvaluator()
    s = initial_state(m, {"id": "x"})
    cases = [
        ({"e": 1, "p": frozenset(), "pending": False}, "PRODUCER_FENCED"),
        ({"e": 0, "p": frozenset(), "pending": True}, "CONCURRENT_TRANSACTIONS"),
        ({"e": 0, "p": frozenset(), "pending": False}, "INVALID_REQUEST"),
        ({"e": 0, "p": frozenset({"t-0"}), "pending": False}, "-> Busy"),
    ]
    for args, expected in cases:
        rows = ev.enabled_rows(m, s, "Add", args)
        assert len(rows) == 1, (args, [r.label for r in rows])
        row = rows[0]
        got = f"-> {row.target}" if isinstance(row, ir.Transition) else row.error
        assert got == expected


def test_effects_use_the_pre_state_and_the_frame_rule_keeps_the_rest() -> None:
    m = machine(DEMO)
    ev = PythonEvaluator()
    s = initial_state(m, {"id": "x"})
    (t,) = ev.enabled_rows(m, s, "Add", {"e": 0, "p": frozenset({"a"}), "pending": False})
    assert isinstance(t, ir.Transition)
    post = ev.fire(t, s, {"e": 0, "p": frozenset({"a"}), "pending": False})
    assert post == {"id": "x", "state": "Busy", "epoch": 1, "parts": frozenset({"a"})}
    (t2,) = ev.enabled_rows(m, post, "Tick", {"pending": False})
    assert ev.fire(t2, post, {}) == post  # no ensures: every variable keeps its value


def test_answer_and_internal_are_recorded() -> None:
    m = machine(DEMO)
    done = [r for r in m.transitions if r.event == "Done"]
    assert [t.answer for t in done] == ["NONE", "TRANSACTION_ABORTABLE"]
    assert done[1].answer_code == 120
    assert m.event("Tick").internal and not m.event("Add").internal


def test_condition_text_is_what_the_spec_says() -> None:
    m = machine(DEMO)
    by_event = {(r.event, r.index): r.condition_text for r in m.rows}
    assert by_event[("Add", 0)] == "not (same)"
    assert by_event[("Add", 1)] == "pending"
    assert by_event[("Add", 3)] == "p != {}"


def test_valid_previous_is_derived_from_transitions() -> None:
    m = machine(DEMO)
    assert m.valid_previous("Busy") == {"Idle", "Busy"}
    assert m.valid_previous("Idle") == {"Busy"}


def test_unconditional_reject_conflicts_with_a_transition() -> None:
    messages = errors("""
    machine Demo
      key id: string
      initial state A "a"
      state B "b"
      event E() "e"
        reject in A with INVALID_REQUEST
        from A -> B
      event F() "f"
        from B -> A
    """)
    assert messages == ["E in A is both allowed and rejected (the other row is at demo.sm:6:5)"]


def test_size_other_than_emptiness_is_rejected_because_z3_cannot_express_it() -> None:
    messages = errors("""
    machine Demo
      key id: string
      var s: set[member] = {}
      initial state A "a"
      event E() "e"
        from A -> A when size(s) > 2
    """)
    assert len(messages) == 1 and messages[0].startswith("size() may only test emptiness")


def test_size_compared_with_zero_becomes_an_emptiness_test() -> None:
    m = machine("""
    machine Demo
      key id: string
      var s: set[member] = {}
      initial state A "a"
      event E() "e"
        from A -> A when size(s) > 0
        from A -> A when size(s) == 0
    """)
    assert [render(t.guard) for t in m.transitions] == ["s != {}", "s == {}"]


def test_every_error_in_a_file_is_reported() -> None:
    messages = errors("""
    machine Demo
      key id: string
      var x: int16 = 99999
      initial state A "a"
      state B "b"
      event E() "e"
        from A -> Bee when y > 0
        reject in A with NO_SUCH_ERROR
    """)
    assert "default of 'x' 99999 is outside int16 (-32768..32767)" in messages
    assert "unknown state 'Bee'; did you mean 'B'?" in messages
    assert any(m.startswith("unknown name 'y'") for m in messages)
    assert not any("dead end" in m for m in messages), "no follow-up errors from the row that failed to check"
    assert any(m.startswith("unknown Kafka error 'NO_SUCH_ERROR'") for m in messages)


def test_event_scoped_step_reads_its_parameters_and_applies_only_to_that_event() -> None:
    m = machine("""
    machine Demo
      key id: string
      var epoch: 0..3 = 0
      initial state A "a"
      state B "b"
      event Go(to_b: bool) "go"
        from A -> B when to_b
        from A -> A when not to_b
      event Back() "back"
        from B -> A
      step goes_where_asked on Go: state' == (if to_b then B else A)
    """)
    (step,) = m.steps
    assert step.event == "Go"
    assert [t.event for t in m.transitions if step.applies_to(t)] == ["Go", "Go"]
    assert errors("""
    machine Demo
      key id: string
      initial state A "a"
      event Go(to_b: bool) "go"
        from A -> A
      step s on Og: to_b
      step t: to_b
    """) == ["unknown event 'Og'", "unknown name 'to_b'"]
