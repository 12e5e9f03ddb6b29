"""The checker on a real Spark cluster: a standalone master and two workers started from pyspark's own jars on
loopback; `kcoord check-traces --master spark://…` and the job module under `spark-submit` give the violations the
shared local session gives, and no stage's generated code fails or is given up, on the driver or on an executor.
The same for a Spark Connect server (`kcoord check-traces --remote sc://…`)."""

from __future__ import annotations

import random
import subprocess
import sys
from collections import Counter
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from kcoord.conformance.traces.duckengine import ENGINE
from kcoord.conformance.traces.generate import Options, generate
from kcoord.conformance.traces.job import Config, run
from kcoord.conformance.traces.mutations import mutate_every
from kcoord.conformance.traces.output import read_violations
from kcoord.conformance.traces.standalone import SESSIONS, SPARK_HOME, Cluster, ConnectServer
from kcoord.conformance.traces.writers import write_parquet
from kcoord.model.loader import bundled_machines

from .sparklogs import LOG4J2, fallbacks

pytestmark = [pytest.mark.spark, pytest.mark.slow]

KCOORD = str(Path(sys.executable).parent / "kcoord")


@pytest.fixture
def cluster(tmp_path: Path) -> Iterator[Cluster]:
    c = Cluster(tmp_path / "cluster", LOG4J2)
    try:
        c.start()
        yield c
    finally:
        c.stop()


@pytest.fixture
def connect_server(tmp_path: Path) -> Iterator[ConnectServer]:
    server = ConnectServer(tmp_path / "connect", LOG4J2)
    try:
        server.wait_ready()
        yield server
    finally:
        server.stop()


def _identities(out: Path) -> Counter[tuple[Any, str]]:
    """The violations as (identity, message) pairs, counted: two rows of a key with one seq may both break a check
    (a mutation duplicated a row), one identity with two messages, read in any order."""
    return Counter((v.identity, v.message) for v in read_violations(str(out / "violations")))


def _mutated_traces(spark: Any, root: Path, out: Path) -> Counter[tuple[Any, str]]:
    """Traces of every bundled machine broken by every mutation, written to `root` as Parquet; the violations the
    shared local session finds in them (written to `out`)."""
    machines = dict(bundled_machines())
    traces, _ = generate(machines, 21, Options(keys=4, rows=80))
    rng = random.Random(21)
    traces = mutate_every(traces, machines, rng)
    write_parquet(traces, machines, str(root))
    local = run(Config([str(root)], str(out), engine="spark"), machines, spark=spark)
    expected = _identities(out)
    assert expected and local.exit_code == 1
    return expected


def test_a_spark_connect_server_finds_what_local_spark_finds(spark: Any, connect_server: ConnectServer,
                                                            tmp_path: Path) -> None:
    root = tmp_path / "traces"
    expected = _mutated_traces(spark, root, tmp_path / "local")
    done = subprocess.run([KCOORD, "check-traces", str(root), "--remote", connect_server.url, "--out",
                           str(tmp_path / "cli")], capture_output=True, text=True, timeout=900)
    assert done.returncode == 1, done.stderr[-3000:]
    assert f"engine: spark (--remote {connect_server.url})" in done.stderr
    assert f"({ENGINE}, " in done.stdout, done.stdout[:500]  # the server's Python workers ran the DuckDB tasks
    assert _identities(tmp_path / "cli") == expected
    server_log = connect_server.log.read_text(errors="replace")
    assert f"INFO {SESSIONS}: Session with" in server_log
    assert fallbacks(done.stderr + server_log) == []


def test_a_standalone_cluster_finds_what_local_spark_finds(spark: Any, cluster: Cluster, tmp_path: Path) -> None:
    root = tmp_path / "traces"
    expected = _mutated_traces(spark, root, tmp_path / "local")
    done = subprocess.run([KCOORD, "check-traces", str(root), "--master", cluster.master, "--out",
                           str(tmp_path / "cli")], env=cluster.env, capture_output=True, text=True, timeout=900)
    assert done.returncode == 1, done.stderr[-3000:]
    assert "engine: spark (--master spark://" in done.stderr
    assert f"({ENGINE}, " in done.stdout, done.stdout[:500]  # the workers' Python ran the DuckDB tasks
    assert _identities(tmp_path / "cli") == expected

    from kcoord.conformance.traces import job

    submitted = subprocess.run(
        [str(SPARK_HOME / "bin" / "spark-submit"), "--master", cluster.master, job.__file__, str(root), "--out",
         str(tmp_path / "submit")], env=cluster.env, capture_output=True, text=True, timeout=900)
    assert submitted.returncode == 1, submitted.stderr[-3000:]
    assert _identities(tmp_path / "submit") == expected and f"({ENGINE}, " in submitted.stdout

    assert len(cluster.executor_logs()) >= 4  # two applications, an executor on each worker
    assert fallbacks(done.stderr + submitted.stderr + cluster.logs()) == []
