"""The command line: exit codes, outputs and files, through typer's runner (same process, real files)."""

from __future__ import annotations

import re
from pathlib import Path

import pytest
from typer.testing import CliRunner

from kcoord.cli import _register, app

_register()
runner = CliRunner()


def run(*args: str) -> tuple[int, str]:
    result = runner.invoke(app, list(args))
    return result.exit_code, result.output


def test_check_spec_clean() -> None:
    code, out = run("check-spec")
    assert code == 0 and "Transaction" in out and "no errors" in out


def test_check_spec_reports_errors_with_caret_and_exits_2(tmp_path: Path) -> None:
    bad = tmp_path / "demo.sm"
    bad.write_text('machine Demo\n  key id: string\n  initial state A "a"\n  event E() "e"\n    from A -> Bogus\n')
    code, out = run("check-spec", str(bad))
    assert code == 2
    assert f"{bad}:5:15: error: unknown state 'Bogus'" in out
    assert "^^^^^" in out


def test_missing_file_is_a_usage_error(tmp_path: Path) -> None:
    code, out = run("check-spec", str(tmp_path / "nope.sm"))
    assert code == 2 and "no such spec file" in out


def test_show_prints_states_rows_and_properties() -> None:
    code, out = run("show", "Transaction")
    assert code == 0
    for needle in ("PrepareEpochFence", "CONCURRENT_TRANSACTIONS", "fresh_is_empty", "epoch_never_decreases"):
        assert needle in out


DOOR = ('machine Door "A door [with a lock]."\n  key id: string\n  kind task\n'
        '  var keys: set[string] = {} "keys used [so far]"\n'
        '  initial state Closed\n  state Locked\n'
        '  event Lock(k: string)\n    from Closed -> Locked ensures keys\' == keys | {k}\n'
        '    reject in Locked with NONE\n'
        '  event Unlock(k: string)\n    requires k in keys\n'
        '    from Locked -> Closed ensures keys\' == keys - {k}\n    reject in Closed with NONE\n'
        '  invariant unlocked_when_closed: state == Closed -> keys == {}\n')


def test_show_prints_types_requires_and_docs_as_written(tmp_path: Path) -> None:
    """Brackets are text, not rich markup: `set[string]` and a doc's `[x]` are printed whole."""
    spec = tmp_path / "door.sm"
    spec.write_text(DOOR)
    code, out = run("show", "Door", "--spec", str(spec))
    assert code == 0, out
    assert "set[string]" in out and "keys used [so far]" in out and "A door [with a lock]." in out
    unlock = next(line for line in out.splitlines() if "Unlock" in line)
    assert "k in keys" in unlock


def test_own_spec_through_diagrams_gen_traces_and_check_traces(tmp_path: Path) -> None:
    """A user's own spec (not bundled) works with every command that reads specs: drawn, traced, checked."""
    spec = tmp_path / "door.sm"
    spec.write_text(DOOR)
    code, out = run("diagrams", "--spec", str(spec), "--format", "dot", "--out", str(tmp_path / "d"))
    assert code == 0, out
    assert [p.name for p in (tmp_path / "d").iterdir()] == ["door.dot"]
    assert "Locked" in (tmp_path / "d" / "door.dot").read_text()
    code, out = run("gen-traces", str(tmp_path / "t"), "--spec", str(spec), "--keys", "3", "--rows", "40")
    assert code == 0, out
    assert [p.name for p in (tmp_path / "t").iterdir()] == ["Door"]
    rows = (tmp_path / "t" / "Door" / "part-0.jsonl").read_text().splitlines()
    assert len(rows) >= 20 and all('"machine": "Door"' in r for r in rows)
    code, out = run("check-traces", str(tmp_path / "t"), "--engine", "python", "--spec", str(spec))
    assert code == 0 and "0 violations" in out, out
    code, out = run("gen-traces", str(tmp_path / "bad"), "--spec", str(spec), "--keys", "3", "--rows", "40",
                    "--mutate", "drop_row", "--mutate", "non_edge_target")
    # two states, each the target of the other's only edge: no row can be given a target that is not an edge
    assert code == 0 and "non_edge_target changed nothing in Door" in out, out
    code, out = run("check-traces", str(tmp_path / "bad"), "--engine", "python", "--spec", str(spec))
    assert code == 1 and "discontinuity" in out, out


@pytest.mark.parametrize(("args", "message"), [
    (["--keys", "0"], "Invalid value for '--keys': Input should be greater than or equal to 1"),
    (["--rows", "-5"], "Invalid value for '--rows': Input should be greater than or equal to 1"),
    (["--mutate", "bogus"], "unknown mutation bogus (choose from drop_row, duplicate_row"),
    (["--format", "csv"], "unknown format 'csv' (choose from jsonl, parquet)"),
])
def test_gen_traces_refuses_bad_options_and_writes_nothing(tmp_path: Path, args: list[str], message: str) -> None:
    code, out = run("gen-traces", str(tmp_path / "t"), *args)
    assert code == 2 and message in " ".join(out.split()), out
    assert not (tmp_path / "t").exists()


@pytest.mark.parametrize(("args", "message"), [
    (["verify", "-j", "-1"], "greater than or equal to 0"),
    (["check-traces", ".", "--max-witnesses", "-1"], "greater than or equal to 0"),
    (["mutate", "--target", "150"], "less than or equal to 100"),
])
def test_counts_out_of_range_are_usage_errors(args: list[str], message: str) -> None:
    code, out = run(*args)
    assert code == 2 and f"Input should be {message}" in out, out


def test_the_spec_readme_s_complete_example_verifies(tmp_path: Path) -> None:
    """The language reference's example is a real spec: it loads and every obligation is proved."""
    text = (Path(__file__).resolve().parents[1] / "spec" / "README.md").read_text(encoding="utf-8")
    example = text.split("## A complete example", 1)[1].split("```\n", 2)[1]
    spec = tmp_path / "group_lease.sm"
    spec.write_text(example)
    code, out = run("verify", "--spec", str(spec), "-j", "1")
    assert code == 0 and re.search(r"total: \d+ hold, 0 fail", out), out


def test_report_files_go_into_new_folders(tmp_path: Path) -> None:
    """`-o reports/x` makes `reports/` (it ran the whole verification, then failed to write)."""
    target = tmp_path / "reports" / "ci" / "verify.xml"
    code, out = run("verify", "StreamsTask", "-f", "junit", "-o", str(target), "-j", "1")
    assert code == 0, out
    assert target.read_text().startswith("<?xml")


@pytest.mark.parametrize(("args", "message"), [
    (["--port", "70000"], "--port 70000: a port is 0 to 65535"),
    (["--port", "65535", "--nodes", "2"], "--port 65535 with --nodes 2: node 1 would listen on 65536"),
    (["--metrics-port", "-1"], "--metrics-port -1: a port is 0 to 65535"),
    (["--port", "19092", "--nodes", "3", "--metrics-port", "19094"],
     "--metrics-port 19094 is node 2's port (--port 19092, --nodes 3: node i listens on port + i)"),
    (["--max-frame-bytes", "0"], "--max-frame-bytes 0: must be positive"),
    (["--set", "groups.initial_rebalance_delay_ms=abc"],
     "--set 'groups.initial_rebalance_delay_ms=abc': groups.initial_rebalance_delay_ms takes a value like 3000"),
    (["--durability", "group", "--group-commit-ms", "-1"], "Input should be greater than or equal to 0"),
    (["--set", "server.queued_max_request_bytes=0"], "server.queued_max_request_bytes=0: must be positive"),
    (["--set", "server.connections_max_idle_ms=-5"], "server.connections_max_idle_ms=-5: must be >= 0"),
    (["--set", "server.max_connections=5"], "--set 'server.max_connections=5': server has no setting"),
    (["--set", "bogus.x=1"], "with SECTION one of txn, groups, partitions, server"),
])
def test_serve_refuses_bad_options_before_opening_anything(tmp_path: Path, args: list[str], message: str) -> None:
    code, out = run("serve", "--data-dir", str(tmp_path / "data"), *args)
    assert code == 2 and message in " ".join(out.split()) and "Traceback" not in out, out
    assert not (tmp_path / "data").exists()


def test_demo_never_empties_a_folder_it_did_not_write(tmp_path: Path) -> None:
    """`kcoord demo --workdir ~/work` would have deleted the folder's files: it refuses before doing anything."""
    precious = tmp_path / "work" / "notes.txt"
    precious.parent.mkdir()
    precious.write_text("mine")
    code, out = run("demo", "--workdir", str(tmp_path / "work"))
    assert code == 2 and "holds files an earlier demo did not write" in " ".join(out.split()), out
    assert precious.read_text() == "mine"
    assert "check the specs" not in out  # refused before the first stage
    from kcoord.cmd_demo import _MARKER, _ours_to_empty

    earlier = tmp_path / "earlier"
    earlier.mkdir()
    (earlier / "traces").mkdir()
    assert not _ours_to_empty(earlier)
    (earlier / _MARKER).write_text("")
    assert _ours_to_empty(earlier) and _ours_to_empty(tmp_path / "new") and _ours_to_empty(tmp_path / "earlier" /
                                                                                          "traces")
    assert not _ours_to_empty(precious)  # a file is not a folder to empty


def test_show_unknown_machine_suggests() -> None:
    code, out = run("show", "Transactoin")
    assert code == 2 and "did you mean 'Transaction'" in out


def test_gen_check_passes_on_a_fresh_checkout() -> None:
    code, out = run("gen", "--check")
    assert code == 0 and "up to date" in out


@pytest.mark.parametrize(("fmt", "ext", "magic"), [
    ("svg", "svg", b"<?xml"), ("png", "png", b"\x89PNG"), ("dot", "dot", b"// Generated"),
    ("mermaid", "mmd", b"%% Generated"),
])
def test_diagrams_in_every_format(tmp_path: Path, fmt: str, ext: str, magic: bytes) -> None:
    code, out = run("diagrams", "Transaction", "--format", fmt, "--out", str(tmp_path))
    assert code == 0, out
    assert (tmp_path / f"transaction.{ext}").read_bytes().startswith(magic)


def test_diagrams_bad_format_is_a_usage_error(tmp_path: Path) -> None:
    code, out = run("diagrams", "--format", "jpeg", "--out", str(tmp_path))
    assert code == 2 and "unknown format" in out


def test_an_output_path_that_is_a_file_is_one_line_and_exit_2(tmp_path: Path) -> None:
    """Through the installed entry point (`main`): a path the system refuses is said in one line, no traceback."""
    import subprocess
    import sys

    taken = tmp_path / "taken"
    taken.write_text("")
    kcoord = Path(sys.executable).parent / "kcoord"
    done = subprocess.run([str(kcoord), "diagrams", "Transaction", "--out", str(taken)], capture_output=True,
                          text=True, timeout=120)
    assert done.returncode == 2
    assert done.stderr.strip() == f"kcoord: error: File exists: {taken}"


@pytest.mark.parametrize("command", ["check-spec", "gen", "diagrams", "show", "demo", "verify", "serve",
                                     "conformance", "simulate", "check-traces", "replay", "mutate"])
def test_every_command_has_help_with_an_example(command: str) -> None:
    code, out = run(command, "--help")
    assert code == 0 and "Example" in out
    # the example lines are laid out as written (click rewraps a paragraph unless it starts with \b)
    example = out[out.index("Example"):].split("\n\n")[0]
    assert all(line.strip().startswith(("Example", "kcoord")) for line in example.splitlines()), example


NOT_UTF8 = b'machine Door\n  key id: string\n  initial state Clos\xe9d\n'  # Latin-1 'é' on line 3, column 21


@pytest.mark.parametrize("args", [
    ["check-spec", "{spec}"],
    ["show", "Door", "--spec", "{spec}"],
    ["verify", "--spec", "{spec}"],
    ["diagrams", "--spec", "{spec}", "--out", "{tmp}/d"],
    ["gen-traces", "{tmp}/t", "--spec", "{spec}"],
    ["check-traces", "{tmp}", "--engine", "python", "--spec", "{spec}"],
    ["check-traces", "{tmp}", "--engine", "spark", "--spec", "{spec}"],
])
@pytest.mark.adversarial
def test_a_spec_that_is_not_utf8_is_one_line_and_exit_2(tmp_path: Path, args: list[str]) -> None:
    """Every command that reads specs says which file, where and what is wrong in one line: no traceback."""
    spec = tmp_path / "door.sm"
    spec.write_bytes(NOT_UTF8)
    result = runner.invoke(app, [a.format(spec=spec, tmp=tmp_path) for a in args])
    assert result.exception is None or isinstance(result.exception, SystemExit), result.exception
    assert result.exit_code == 2, result.output
    errors = [line for line in result.output.splitlines() if "error" in line]
    assert errors[0] == f"{spec}:3:21: error: not UTF-8 text: byte 0xe9: invalid continuation byte " \
                        "(save the file as UTF-8)", result.output
    assert "Traceback" not in result.output and not (tmp_path / "d").exists() and not (tmp_path / "t").exists()


def test_conformance_gen_names_a_stale_unreachable_row_in_one_line(monkeypatch: pytest.MonkeyPatch) -> None:
    """A driver's `unreachable` entry whose row the spec renumbered is a one-line error, not a traceback."""
    from kcoord.conformance.drivers import DRIVERS

    driver = DRIVERS["ClassicGroup"].driver_class()
    monkeypatch.setattr(driver, "unreachable", {"ClassicGroup": [(9999, "JoinNewStaticMember", None, ("Empty",),
                                                                   "a stale entry")]}, raising=False)
    code, out = run("conformance-gen", "ClassicGroup")
    assert code == 1
    assert "kcoord: ClassicGroup: the driver declares row 9999 (JoinNewStaticMember" in out
    assert "Traceback" not in out and "update the driver's `unreachable` list" in out
