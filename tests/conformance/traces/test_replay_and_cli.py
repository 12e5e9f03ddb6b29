"""`kcoord replay` writes a test that fails on the violating witness and passes on the corrected one; the
`check-traces` command's exit codes and outputs (Python engine; the Spark engine shares `job.run`)."""

from __future__ import annotations

import json
import random
import re
from pathlib import Path
from typing import Any

import pytest
from typer.testing import CliRunner

from kcoord.cli import _register, app
from kcoord.conformance.traces.checks import Spec
from kcoord.conformance.traces.generate import Options, generate
from kcoord.conformance.traces.mutations import change_error
from kcoord.conformance.traces.output import read_violations
from kcoord.conformance.traces.replay import Unsupported, render_test
from kcoord.conformance.traces.writers import write_jsonl
from kcoord.model.loader import bundled_machines


def _violations(tmp_path: Path) -> Path:
    machines = {"Transaction": bundled_machines()["Transaction"]}
    traces, _ = generate(machines, 4, Options(keys=4, rows=120))
    traces = {"Transaction": change_error(traces["Transaction"], Spec.of(machines["Transaction"]),
                                          random.Random(2))}
    write_jsonl(traces, str(tmp_path / "traces"))
    return tmp_path / "traces"


def _exec(source: str) -> dict[str, Any]:
    namespace: dict[str, Any] = {}
    exec(compile(source, "test_replay.py", "exec"), namespace)
    return namespace


def test_replay_fails_on_the_witness_and_passes_once_corrected(tmp_path: Path) -> None:
    _register()
    traces = _violations(tmp_path)
    result = CliRunner().invoke(app, ["check-traces", str(traces), "--engine", "python", "--out",
                                      str(tmp_path / "out")])
    assert result.exit_code == 1, result.output
    (v,) = [v for v in read_violations(str(tmp_path / "out" / "violations")) if v.check == "wrong_error"]
    assert v.id in result.output and "<== violation" in result.output
    spilled = CliRunner().invoke(app, ["check-traces", str(traces), "--engine", "python", "--out",
                                       str(tmp_path / "out-spilled"), "--max-rows-in-memory", "5"])
    assert spilled.exit_code == 1, spilled.output
    assert re.search(r"checked from disk: Transaction, \d+ buckets by key", spilled.output)
    assert "checked from disk" not in result.output
    assert read_violations(str(tmp_path / "out-spilled" / "violations")) == \
        read_violations(str(tmp_path / "out" / "violations"))
    assert not list((tmp_path / "out-spilled").glob("kcoord-pycheck-*"))  # the spill files are gone
    replayed = CliRunner().invoke(app, ["replay", v.id, "--violations", str(tmp_path / "out"), "-o",
                                        str(tmp_path / "test_replay.py")])
    assert replayed.exit_code == 0, replayed.output
    namespace = _exec((tmp_path / "test_replay.py").read_text())
    with pytest.raises(AssertionError, match="the spec answers"):
        namespace["replay"](namespace["WITNESS"])
    fixed = json.loads(json.dumps(namespace["WITNESS"]))
    for seg in fixed["segments"]:
        for row in seg["rows"]:
            if row["seq"] == v.seq:
                row["error"] = _spec_error(row)
    namespace["replay"](fixed)


LEASE = ("machine Lease\n  key id: string\n  kind task\n  var takes: int32 = 0\n"
         "  initial state Free\n  state Held\n"
         "  event Take()\n    from Free -> Held ensures takes' == takes + 1\n    reject in Held with NONE\n"
         "  event Give()\n    from Held -> Free\n    reject in Free with NONE\n")


def test_replay_of_a_machine_of_the_user_s_own_spec(tmp_path: Path) -> None:
    """A machine kcoord does not bundle has no generated table: the replay test builds it from the spec file given
    with --spec (and says so when --spec is missing), fails on the witness, passes on the corrected rows."""
    _register()
    spec = tmp_path / "lease.sm"
    spec.write_text(LEASE)
    runner = CliRunner()
    assert runner.invoke(app, ["gen-traces", str(tmp_path / "t"), "--spec", str(spec), "--keys", "2", "--rows", "30",
                               "--mutate", "corrupt_variable"]).exit_code == 0
    checked = runner.invoke(app, ["check-traces", str(tmp_path / "t"), "--engine", "python", "--spec", str(spec),
                                  "--out", str(tmp_path / "out")])
    assert checked.exit_code == 1, checked.output
    v = read_violations(str(tmp_path / "out" / "violations"))[0]
    assert v.machine == "Lease" and v.check in ("effect_mismatch", "frame_mismatch"), v
    missing = runner.invoke(app, ["replay", v.id, "--violations", str(tmp_path / "out")])
    assert missing.exit_code == 2 and "Lease is not a bundled machine: pass its spec with --spec" in \
        " ".join(missing.output.split()), missing.output
    target = tmp_path / "test_replay_lease.py"
    replayed = runner.invoke(app, ["replay", v.id, "--violations", str(tmp_path / "out"), "--spec", str(spec),
                                   "-o", str(target)])
    assert replayed.exit_code == 0, replayed.output
    namespace = _exec(target.read_text())
    with pytest.raises(AssertionError, match="takes is"):
        namespace["replay"](namespace["WITNESS"])
    fixed = json.loads(json.dumps(namespace["WITNESS"]))
    takes = 0
    for seg in fixed["segments"]:  # one key from a fresh instance: `takes` counts its Take transitions
        for row in seg["rows"]:
            takes += row["event"] == "Take" and row["kind"] == "transition"
            row["takes"] = takes
    namespace["replay"](fixed)


def _spec_error(row: dict[str, Any]) -> str:
    m = bundled_machines()["Transaction"]
    r = next(x for x in m.rows if x.index == row["row"])
    return str(getattr(r, "error", None) or getattr(r, "answer", "NONE"))


def test_trace_properties_are_not_replayed() -> None:
    from kcoord.conformance.traces.checks import Violation

    with pytest.raises(Unsupported, match="trace property"):
        render_test(Violation("Transaction", "k", "monotonic", "epochs_monotonic", 3, 3, 3, "x:1", "m", "", "{}"))


@pytest.mark.parametrize(("content", "reason"), [
    ('{"id": ', r"not JSON \(line 1, column 8: Expecting value\)"),
    ("[]", "holds no violation"),
    ('[{"machine": "Transaction"}]', r"violation 1 lacks 'key'"),
    ('"a string"', "a violation is a JSON object"),
    ('{"machine": "Transaction", "key": "k", "check": "wrong_error", "name": "", "seq": "three", "seq_from": 1, '
     '"seq_to": 1, "location": "x:1", "message": "m"}', "violation 1's 'seq' is not an integer"),
    ('{"machine": "Transaction", "key": "k", "check": "wrong_error", "name": "", "seq": 3, "seq_from": 1, '
     '"seq_to": 3, "location": "x:1", "message": "m", "witness_rows": "{oops"}', "witness rows are not JSON"),
])
def test_replay_of_a_bad_violation_file_is_a_usage_error(tmp_path: Path, content: str, reason: str) -> None:
    _register()
    bad = tmp_path / "violation.json"
    bad.write_text(content)
    result = CliRunner().invoke(app, ["replay", str(bad)])
    assert result.exit_code == 2, result.output
    assert result.exception is None or isinstance(result.exception, SystemExit)
    assert re.search(reason, " ".join(result.output.split())), result.output
    assert not list(Path.cwd().glob("test_replay_*.py"))


def test_replay_of_an_unreadable_table_or_a_missing_file_is_a_usage_error(tmp_path: Path) -> None:
    _register()
    table = tmp_path / "out" / "violations"
    table.mkdir(parents=True)
    (table / "part-00000.parquet").write_bytes(b"PAR1 torn")
    result = CliRunner().invoke(app, ["replay", "abc", "--violations", str(tmp_path / "out")])
    assert result.exit_code == 2 and "cannot read the violations table" in result.output, result.output
    missing = CliRunner().invoke(app, ["replay", str(tmp_path / "nowhere.json")])
    assert missing.exit_code == 2 and "no such file" in missing.output, missing.output
    bracketed = tmp_path / "[bold]runs" / "v.json"  # said as it is, not read as rich markup
    missing = CliRunner().invoke(app, ["replay", str(bracketed)])
    assert f"no such file: {bracketed}" in " ".join(missing.output.split()), missing.output


def test_check_traces_exit_codes(tmp_path: Path) -> None:
    _register()
    machines = dict(bundled_machines())
    traces, _ = generate(machines, 8, Options(keys=3, rows=40))
    write_jsonl(traces, str(tmp_path / "clean"))
    runner = CliRunner()
    ok = runner.invoke(app, ["check-traces", str(tmp_path / "clean"), "--engine", "python", "--format", "junit",
                             "--out", str(tmp_path / "o")])
    assert ok.exit_code == 0, ok.output
    assert "<testsuites" in ok.output and (tmp_path / "o" / "summary.json").is_file()
    assert json.loads((tmp_path / "o" / "summary.json").read_text())["violations_total"] == 0
    assert runner.invoke(app, ["check-traces", str(tmp_path / "nope"), "--engine", "python"]).exit_code == 2
    (tmp_path / "empty" / "Transaction").mkdir(parents=True)
    empty = runner.invoke(app, ["check-traces", str(tmp_path / "empty"), "--engine", "python"])
    assert empty.exit_code == 2 and "no trace files" in empty.output, empty.output
    lease = tmp_path / "lease.sm"  # a spec that has none of the traces' machines: every row is quarantined
    lease.write_text("machine Lease\n  key id: string\n  kind task\n  initial state Free\n  state Held\n"
                     "  event Take()\n    from Free -> Held\n    reject in Held with NONE\n"
                     "  event Give()\n    from Held -> Free\n    reject in Free with NONE\n")
    wrong = runner.invoke(app, ["check-traces", str(tmp_path / "clean"), "--engine", "python", "--spec", str(lease)])
    assert wrong.exit_code == 2 and "nothing was checked" in wrong.output and "is --spec right?" in wrong.output, \
        wrong.output
    assert runner.invoke(app, ["check-traces", str(tmp_path / "clean"), "--format", "xml"]).exit_code == 2


def test_a_spark_master_that_cannot_be_reached_is_said_in_one_line(tmp_path: Path) -> None:
    """A standalone master nobody runs is found before the JVM starts (Spark itself retries for a minute); any other
    master Spark cannot start on ends the run with Spark's first line, exit 2. (The second runs the installed entry
    point: in this process the tests' shared session would be reused whatever the master.)"""
    import socket
    import subprocess
    import sys

    _register()
    traces = _violations(tmp_path)
    with socket.socket() as s:  # a port nobody listens on
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
    refused = CliRunner().invoke(app, ["check-traces", str(traces), "--master", f"spark://127.0.0.1:{port}"])
    assert refused.exit_code == 2
    assert f"no Spark master answers at --master spark://127.0.0.1:{port} (127.0.0.1:{port}: Connection refused)" \
        in " ".join(refused.output.split())
    bad = CliRunner().invoke(app, ["check-traces", str(traces), "--master", "spark://:7077"])
    assert bad.exit_code == 2 and "expected spark://HOST[:PORT]" in bad.output
    done = subprocess.run([str(Path(sys.executable).parent / "kcoord"), "check-traces", str(traces), "--master",
                           "no-such-master"], capture_output=True, text=True, timeout=300)
    assert done.returncode == 2
    assert "kcoord: error: cannot start Spark on --master no-such-master: " in done.stderr
    assert "Traceback" not in done.stderr


def test_demo_check_prints_the_report_and_counts_violations(tmp_path: Path) -> None:
    from rich.console import Console

    from kcoord.cmd_traces import demo_check

    traces = _violations(tmp_path)
    console = Console(record=True, width=120)
    found = demo_check(console, [traces], engine="python", report_dir=tmp_path / "out")
    text = console.export_text()
    assert found >= 1 and "wrong_error" in text and f"{found} violations" in text
    assert read_violations(str(tmp_path / "out" / "violations"))


def test_the_job_module_s_own_command_line(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    """`python -m kcoord.conformance.traces.job` (what `spark-submit` runs), Python engine: exit 1 on violations, the
    same violations checked in memory and from disk, 2 for a missing path."""
    from kcoord.conformance.traces.job import main

    traces = _violations(tmp_path)
    assert main([str(traces), "--engine", "python", "--out", str(tmp_path / "mem")]) == 1
    assert "checked from disk" not in capsys.readouterr().out
    assert main([str(traces), "--engine", "python", "--out", str(tmp_path / "disk"), "--max-rows-in-memory", "7"]) == 1
    assert re.search(r"checked from disk: Transaction, \d+ buckets by key", capsys.readouterr().out)
    disk, mem = (read_violations(str(tmp_path / d / "violations")) for d in ("disk", "mem"))
    assert disk == mem and disk
    assert main([str(tmp_path / "nope"), "--engine", "python"]) == 2


@pytest.mark.parametrize("engine", ["python", "spark"])
def test_a_coordinator_log_of_garbage_from_byte_0_is_exit_2_not_a_clean_run(tmp_path: Path, engine: str) -> None:
    """Issue 28, item 6: a `__transaction_state-0` folder whose only segment is garbage from its first byte gives no
    row at all. Nothing could be read, so there is nothing to call clean: exit 2 with one line saying what could not
    be read and why (both engines, before any Spark is started), never "0 violations" and exit 0. The same folder
    beside a readable trace only adds its note to that run's report."""
    _register()
    logs = tmp_path / "data" / "__transaction_state-0"
    logs.mkdir(parents=True)
    (logs / "00000000000000000000.log").write_bytes(random.Random(6).randbytes(5_000))
    runner = CliRunner()
    result = runner.invoke(app, ["check-traces", str(tmp_path / "data"), "--engine", engine])
    assert result.exit_code == 2, result.output
    said = " ".join(result.output.split())
    assert said.startswith("kcoord: error: nothing could be read from the coordinator logs under "), said
    assert "00000000000000000000.log: corrupt from position 0" in said and "0 violations" not in said, said
    assert "Traceback" not in result.output and len(result.output.strip().splitlines()) <= 3, result.output
    beside = _violations(tmp_path)
    mixed = runner.invoke(app, ["check-traces", str(beside), str(tmp_path / "data"), "--engine", "python"])
    assert mixed.exit_code == 1 and "5000 bytes at the end of" in " ".join(mixed.output.split()), mixed.output


def test_a_spark_connect_server_that_cannot_be_used_is_said_in_one_line(tmp_path: Path) -> None:
    """--remote: an address that is not sc://, one nobody listens on, and --remote with another master or the
    Python engine are usage errors found before any session starts (test_spark_cluster runs a real server)."""
    import socket

    _register()
    traces = _violations(tmp_path)
    with socket.socket() as s:  # a port nobody listens on
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
    cases = {(f"sc://127.0.0.1:{port}",): f"no Spark Connect server answers at --remote sc://127.0.0.1:{port} "
                                          f"(127.0.0.1:{port}: Connection refused)",
             ("http://127.0.0.1:15002",): "--remote 'http://127.0.0.1:15002': expected sc://HOST:PORT",
             ("sc://:15002",): "expected HOST[:PORT]",
             ("sc://127.0.0.1", "--engine", "python"): "cannot be combined with --engine python",
             ("sc://127.0.0.1", "--master", "local[2]"): "--remote and --master cannot be combined"}
    for args, said in cases.items():
        refused = CliRunner().invoke(app, ["check-traces", str(traces), "--remote", *args])
        assert refused.exit_code == 2, (args, refused.output)
        assert said in " ".join(refused.output.split()), (args, refused.output)
