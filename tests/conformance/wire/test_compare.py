"""The comparison rules of the wire scenarios' observations (`observe`) and the table of differences (`compare`),
without a broker: results made by hand."""

from __future__ import annotations

from kcoord.conformance.wire.compare import Pair, differences, render_differences
from kcoord.conformance.wire.observe import Observations, shape
from kcoord.conformance.wire.runner import Result


def _result(name: str, obs: Observations, status: str = "pass", detail: str = "") -> Result:
    return Result(name, status, 1.0, detail, tuple(obs.items))  # type: ignore[arg-type]


def test_shape_keeps_the_kind_and_drops_the_value() -> None:
    assert [shape(v) for v in (1234, 0, -1, -7, "", "member-1", None, True, b"x")] == [
        "int>=0", "int>=0", "-1", "int<0", "empty", "non-empty", "null", "True", "non-empty"]
    assert shape([(5003, -1), (7, 0)]) == "[[int>=0, -1], [int>=0, int>=0]]"
    assert shape({"b": 2, "a": ""}) == "{a: empty, b: int>=0}"


def test_progress_compares_steps_not_values() -> None:
    ours, theirs = Observations(), Observations()
    for value in (1, 2, 2, 5, 4):
        ours.progress("generation", "g", value)
    for value in (3, 4, 4, 6, 7):
        theirs.progress("generation", "g", value)
    assert [o.compared for o in ours.items] == ["first", "advanced", "same", "advanced", "went back"]
    assert [o.name for o in ours.items] == ["generation", "generation #2", "generation #3", "generation #4",
                                            "generation #5"]
    found = differences([Pair(_result("s", ours), _result("s", theirs))])
    assert [(d.what, d.tested, d.reference) for d in found] == [
        ("generation #5", "went back (4)", "advanced (7)")]


def test_equal_runs_have_no_difference_and_ids_are_compared_by_shape() -> None:
    ours, theirs = Observations(), Observations()
    for obs, producer_id in ((ours, 5003), (theirs, 7)):
        obs.exact("committed offsets", {0: 10})
        obs.shape("producer id", producer_id)
    assert differences([Pair(_result("s", ours), _result("s", theirs))]) == []
    assert render_differences([]) == "no difference"


def test_every_kind_of_difference_is_reported() -> None:
    ours, theirs = Observations(), Observations()
    ours.exact("committed offsets", {0: 10})
    theirs.exact("committed offsets", {0: 5})
    ours.exact("only here", 1)
    theirs.shape("only there", -1)
    pairs = [Pair(_result("a", ours), _result("a", theirs, "fail", "timed out")),
             Pair(_result("b", Observations()), _result("b", Observations()))]
    found = differences(pairs)
    assert [(d.scenario, d.what, d.tested, d.reference) for d in found] == [
        ("a", "result", "PASS", "FAIL: timed out"),
        ("a", "committed offsets", "{0: 10}", "{0: 5}"),
        ("a", "only here", "1", "(not observed)"),
        ("a", "only there", "(not observed)", "-1")]
    table = render_differences(found, "kcoord", "kafka")
    assert table.splitlines()[0].split() == ["scenario", "observed", "kcoord", "kafka"]
    assert table.splitlines()[-1] == "4 difference(s) in 1 scenario(s)"
