"""The checker on a real Spark cluster: a standalone master and two workers started from pyspark's own jars on
loopback; `kcoord check-traces --master spark://…` and the job module under `spark-submit` give the violations the
shared local session gives, and no stage's generated code fails or is given up, on the driver or on an executor.
The same for a Spark Connect server (`kcoord check-traces --remote sc://…`)."""

from __future__ import annotations

import json
import os
import random
import signal
import socket
import subprocess
import sys
import time
import urllib.request
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from kcoord.conformance.traces.checks import Spec
from kcoord.conformance.traces.generate import MUTATIONS, Options, generate, write_parquet
from kcoord.conformance.traces.job import Config, run
from kcoord.conformance.traces.output import read_violations
from kcoord.model.loader import bundled_machines

from .sparklogs import LOG4J2, fallbacks

pytestmark = [pytest.mark.spark, pytest.mark.slow]

SPARK_HOME = Path(__import__("pyspark").__file__).parent
KCOORD = str(Path(sys.executable).parent / "kcoord")


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


class Cluster:
    """A standalone master and two one-core workers (`spark-class`), on loopback, with their own conf folder."""

    def __init__(self, root: Path) -> None:
        self.root = root
        self.conf = root / "conf"
        self.conf.mkdir(parents=True)
        (self.conf / "log4j2.properties").write_text(LOG4J2)
        (self.conf / "spark-defaults.conf").write_text(
            "spark.executor.memory 512m\nspark.executor.cores 1\nspark.ui.enabled false\n"
            "spark.sql.shuffle.partitions 4\n")
        self.port, self.ui = _free_port(), _free_port()
        self.master = f"spark://127.0.0.1:{self.port}"
        self.env = os.environ | {"SPARK_HOME": str(SPARK_HOME), "SPARK_CONF_DIR": str(self.conf),
                                 "SPARK_LOCAL_IP": "127.0.0.1", "PYSPARK_PYTHON": sys.executable,
                                 "PYSPARK_DRIVER_PYTHON": sys.executable}
        self.processes: list[subprocess.Popen[bytes]] = []

    def start(self) -> None:
        spark_class = str(SPARK_HOME / "bin" / "spark-class")
        self._spawn("master", [spark_class, "org.apache.spark.deploy.master.Master", "--host", "127.0.0.1",
                               "--port", str(self.port), "--webui-port", str(self.ui)])
        for i in range(2):
            self._spawn(f"worker{i}", [spark_class, "org.apache.spark.deploy.worker.Worker", "--host", "127.0.0.1",
                                       "--cores", "1", "--memory", "1g", "--webui-port", str(_free_port()),
                                       "--work-dir", str(self.root / f"work{i}"), self.master])
        deadline = time.monotonic() + 120
        while time.monotonic() < deadline:
            if self.alive_workers() == 2:
                return
            time.sleep(1)
        raise AssertionError(f"the workers did not register with {self.master}: {self.logs()[-2000:]}")

    def _spawn(self, name: str, cmd: list[str]) -> None:
        log = (self.root / f"{name}.log").open("wb")
        self.processes.append(subprocess.Popen(cmd, env=self.env, stdout=log, stderr=subprocess.STDOUT,
                                               start_new_session=True))

    def alive_workers(self) -> int:
        try:
            with urllib.request.urlopen(f"http://127.0.0.1:{self.ui}/json/", timeout=5) as r:
                return int(json.loads(r.read())["aliveworkers"])
        except OSError:
            return 0

    def logs(self) -> str:
        """The master's and workers' logs and every executor's stderr."""
        files = sorted(self.root.glob("*.log")) + sorted(self.root.glob("work*/app-*/*/stderr"))
        return "\n".join(f.read_text(errors="replace") for f in files)

    def executor_logs(self) -> list[Path]:
        return sorted(self.root.glob("work*/app-*/*/stderr"))

    def stop(self) -> None:
        for p in self.processes:  # (each in a session of its own: the JVM spark-class started goes with it)
            if p.poll() is None:
                os.killpg(p.pid, signal.SIGTERM)
        for p in self.processes:
            try:
                p.wait(timeout=30)
            except subprocess.TimeoutExpired:
                os.killpg(p.pid, signal.SIGKILL)
                p.wait(timeout=30)


@pytest.fixture
def cluster(tmp_path: Path) -> Iterator[Cluster]:
    c = Cluster(tmp_path / "cluster")
    try:
        c.start()
        yield c
    finally:
        c.stop()


SESSIONS = "org.apache.spark.sql.connect.service.SessionHolder"


class ConnectServer:
    """A Spark Connect server (pyspark's own jars, `local[2]`) listening on loopback, with its own conf folder."""

    def __init__(self, root: Path) -> None:
        root.mkdir(parents=True)
        # (the server's sessions logged: the check must have run there)
        (root / "log4j2.properties").write_text(LOG4J2 + f"logger.sessions.name = {SESSIONS}\n"
                                                         "logger.sessions.level = info\n")
        self.port = _free_port()
        self.url = f"sc://127.0.0.1:{self.port}"
        self.log = root / "server.log"
        env = os.environ | {"SPARK_HOME": str(SPARK_HOME), "SPARK_CONF_DIR": str(root), "SPARK_LOCAL_IP": "127.0.0.1"}
        cmd = [str(SPARK_HOME / "bin" / "spark-submit"), "--class",
               "org.apache.spark.sql.connect.service.SparkConnectServer", "--master", "local[2]",
               "--conf", "spark.connect.grpc.binding.address=127.0.0.1",
               "--conf", f"spark.connect.grpc.binding.port={self.port}", "--conf", "spark.ui.enabled=false",
               "--conf", "spark.sql.shuffle.partitions=2", "spark-internal"]
        with self.log.open("wb") as log:
            self.process = subprocess.Popen(cmd, env=env, stdout=log, stderr=subprocess.STDOUT,
                                            start_new_session=True)

    def wait_ready(self, timeout_s: float = 180) -> None:
        deadline = time.monotonic() + timeout_s
        while time.monotonic() < deadline and self.process.poll() is None:
            try:
                with socket.create_connection(("127.0.0.1", self.port), timeout=1):
                    return
            except OSError:
                time.sleep(1)
        raise AssertionError(f"no Spark Connect server at {self.url}: {self.log.read_text(errors='replace')[-2000:]}")

    def stop(self) -> None:
        if self.process.poll() is None:
            os.killpg(self.process.pid, signal.SIGTERM)
        try:
            self.process.wait(timeout=30)
        except subprocess.TimeoutExpired:
            os.killpg(self.process.pid, signal.SIGKILL)
            self.process.wait(timeout=30)


@pytest.fixture
def connect_server(tmp_path: Path) -> Iterator[ConnectServer]:
    server = ConnectServer(tmp_path / "connect")
    try:
        server.wait_ready()
        yield server
    finally:
        server.stop()


def _identities(out: Path) -> dict[Any, str]:
    return {v.identity: v.message for v in read_violations(str(out / "violations"))}


def _mutated_traces(spark: Any, root: Path, out: Path) -> dict[Any, str]:
    """Traces of every bundled machine broken by every mutation, written to `root` as Parquet; the violations the
    shared local session finds in them (written to `out`)."""
    machines = dict(bundled_machines())
    traces, _ = generate(machines, 21, Options(keys=4, rows=80))
    rng = random.Random(21)
    for name in sorted(MUTATIONS):
        traces = {m: MUTATIONS[name](rows, Spec.of(machines[m]), rng) for m, rows in traces.items()}
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
    assert _identities(tmp_path / "cli") == expected

    from kcoord.conformance.traces import job

    submitted = subprocess.run(
        [str(SPARK_HOME / "bin" / "spark-submit"), "--master", cluster.master, job.__file__, str(root), "--out",
         str(tmp_path / "submit")], env=cluster.env, capture_output=True, text=True, timeout=900)
    assert submitted.returncode == 1, submitted.stderr[-3000:]
    assert _identities(tmp_path / "submit") == expected

    assert len(cluster.executor_logs()) >= 4  # two applications, an executor on each worker
    assert fallbacks(done.stderr + submitted.stderr + cluster.logs()) == []
