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


@pytest.fixture(scope="module")
def outside(tmp_path_factory: pytest.TempPathFactory) -> Iterator[tuple[Cluster, ConnectServer]]:
    """The standalone cluster and the Spark Connect server, both spawned first thing and waited for only by the test
    that uses each: their JVMs boot while the local run and the other test work (booting them one after another,
    each when its test starts, was ~20-30 s of waiting)."""
    root = tmp_path_factory.mktemp("outside")
    c = Cluster(root / "cluster", LOG4J2)
    server: ConnectServer | None = None
    try:
        c.spawn()
        server = ConnectServer(root / "connect", LOG4J2)
        yield c, server
    finally:
        if server is not None:
            server.stop()
        c.stop()


@pytest.fixture
def cluster(outside: tuple[Cluster, ConnectServer]) -> Cluster:
    outside[0].wait_ready()
    return outside[0]


@pytest.fixture
def connect_server(outside: tuple[Cluster, ConnectServer]) -> ConnectServer:
    outside[1].wait_ready()
    return outside[1]


def _identities(out: Path) -> Counter[tuple[Any, str]]:
    """The violations as (identity, message) pairs, counted: two rows of a key with one seq may both break a check
    (a mutation duplicated a row), one identity with two messages, read in any order."""
    return Counter((v.identity, v.message) for v in read_violations(str(out / "violations")))


@pytest.fixture(scope="module")
def mutated(spark: Any, tmp_path_factory: pytest.TempPathFactory, outside: tuple[Cluster, ConnectServer]
            ) -> tuple[Path, Counter[tuple[Any, str]]]:
    """Traces of every bundled machine broken by every mutation, written as Parquet (read-only: both tests read them,
    neither may change the other's input); the violations the shared local session finds in them. Made once for
    both tests: the same seed gave both the same traces and the same local run. (After `outside`: the cluster and
    the server boot meanwhile.)"""
    import os

    base = tmp_path_factory.mktemp("cluster-traces")
    root, out = base / "traces", base / "local"
    machines = dict(bundled_machines())
    traces, _ = generate(machines, 21, Options(keys=4, rows=80))
    rng = random.Random(21)
    traces = mutate_every(traces, machines, rng)
    write_parquet(traces, machines, str(root))
    for path in root.rglob("*"):
        if path.is_file():
            os.chmod(path, 0o444)
    local = run(Config([str(root)], str(out), engine="spark"), machines, spark=spark)
    expected = _identities(out)
    assert expected and local.exit_code == 1
    return root, expected


def test_a_spark_connect_server_finds_what_local_spark_finds(
        mutated: tuple[Path, Counter[tuple[Any, str]]], connect_server: ConnectServer, tmp_path: Path) -> None:
    root, expected = mutated
    done = subprocess.run([KCOORD, "check-traces", str(root), "--remote", connect_server.url, "--out",
                           str(tmp_path / "cli")], capture_output=True, text=True, timeout=900)
    assert done.returncode == 1, done.stderr[-3000:]
    assert f"engine: spark (--remote {connect_server.url})" in done.stderr
    assert f"({ENGINE}, " in done.stdout, done.stdout[:500]  # the server's Python workers ran the DuckDB tasks
    assert _identities(tmp_path / "cli") == expected
    server_log = connect_server.log.read_text(errors="replace")
    assert f"INFO {SESSIONS}: Session with" in server_log
    assert fallbacks(done.stderr + server_log) == []


def test_a_standalone_cluster_finds_what_local_spark_finds(
        mutated: tuple[Path, Counter[tuple[Any, str]]], cluster: Cluster, tmp_path: Path) -> None:
    root, expected = mutated
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
