"""`benchmarks.trace_data.tile_sim`: copies of one simulator run are independent traces — the reference checker finds
in three copies three times the run's violations (none), and a copy that kept its group ids would share them."""

from __future__ import annotations

from pathlib import Path

import pytest

from benchmarks import trace_data


@pytest.fixture(scope="module")
def sim(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return trace_data.make_sim(tmp_path_factory.mktemp("sim"), 5_000, seed=1)


def test_copies_of_a_simulator_run_are_as_clean_as_the_run(sim: Path, tmp_path: Path) -> None:
    trace_data.validate_sim_tiling(sim, tmp_path, copies=3)
    assert trace_data.sim_rows(tmp_path / "sim-sample") == 3 * trace_data.sim_rows(sim)
    assert {d.name for d in (tmp_path / "sim-sample").iterdir()} == {d.name for d in sim.iterdir() if d.is_dir()}


def test_copies_that_kept_their_group_ids_would_hold_one_partition_twice(sim: Path, tmp_path: Path,
                                                                         monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(trace_data, "RENAMED", tuple(c for c in trace_data.RENAMED if c != "group_id"))
    with pytest.raises(AssertionError, match=r"3 copies have [1-9][0-9]* violations, the run 0"):
        trace_data.validate_sim_tiling(sim, tmp_path, copies=3)
