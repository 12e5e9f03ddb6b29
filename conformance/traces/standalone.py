"""Spark outside this process, started from pyspark's own jars on loopback: a standalone cluster (a master and two
one-core workers) and a Spark Connect server. What the cluster tests and `benchmarks/bench_cluster.py` run the
checker on, as a user runs it on theirs (`kcoord check-traces --master spark://…`, `--remote sc://…`).

Owns: starting them on free ports with their own conf folders, waiting until they serve, their logs, stopping them
(each process in its own session, so the JVMs spark-class and spark-submit start go with it).
Must not import: kcoord.cli.
"""

from __future__ import annotations

import json
import os
import signal
import socket
import subprocess
import sys
import time
import urllib.request
from pathlib import Path

import pyspark

SPARK_HOME = Path(pyspark.__path__[0])


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


#: the settings of the applications a `Cluster` runs, unless the caller gives others
CLUSTER_DEFAULTS = {"spark.executor.memory": "512m", "spark.executor.cores": "1", "spark.ui.enabled": "false",
                    "spark.sql.shuffle.partitions": "4"}


class Cluster:
    """A standalone master and two one-core workers (`spark-class`), on loopback, with their own conf folder
    (`log4j`: its log4j2.properties; `defaults`: its spark-defaults.conf, read by every application started with
    `env`, `kcoord check-traces --master` included)."""

    def __init__(self, root: Path, log4j: str = "", defaults: dict[str, str] | None = None,
                 worker_memory: str = "1g") -> None:
        self.root = root
        self.conf = root / "conf"
        self.conf.mkdir(parents=True)
        (self.conf / "log4j2.properties").write_text(log4j)
        settings = defaults if defaults is not None else CLUSTER_DEFAULTS
        (self.conf / "spark-defaults.conf").write_text("".join(f"{k} {v}\n" for k, v in settings.items()))
        self.worker_memory = worker_memory
        self.port, self.ui = free_port(), free_port()
        self.master = f"spark://127.0.0.1:{self.port}"
        self.env = os.environ | {"SPARK_HOME": str(SPARK_HOME), "SPARK_CONF_DIR": str(self.conf),
                                 "SPARK_LOCAL_IP": "127.0.0.1", "PYSPARK_PYTHON": sys.executable,
                                 "PYSPARK_DRIVER_PYTHON": sys.executable}
        self.processes: list[subprocess.Popen[bytes]] = []

    def start(self) -> None:
        self.spawn()
        self.wait_ready()

    def spawn(self) -> None:
        """The master and the workers started, not waited for (`wait_ready`)."""
        spark_class = str(SPARK_HOME / "bin" / "spark-class")
        self._spawn("master", [spark_class, "org.apache.spark.deploy.master.Master", "--host", "127.0.0.1",
                               "--port", str(self.port), "--webui-port", str(self.ui)])
        for i in range(2):
            self._spawn(f"worker{i}", [spark_class, "org.apache.spark.deploy.worker.Worker", "--host", "127.0.0.1",
                                       "--cores", "1", "--memory", self.worker_memory, "--webui-port", str(free_port()),
                                       "--work-dir", str(self.root / f"work{i}"), self.master])

    def wait_ready(self) -> None:
        """Until both workers registered with the master (at most 120 s)."""
        deadline = time.monotonic() + 120
        while time.monotonic() < deadline:
            if self.alive_workers() == 2:
                return
            time.sleep(1)
        raise RuntimeError(f"the workers did not register with {self.master}: {self.logs()[-2000:]}")

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

    def worker_pids(self) -> list[int]:
        """The workers' processes (their JVMs: spark-class execs java); executors are their children."""
        return [p.pid for p in self.processes[1:]]

    def executor_logs(self) -> list[Path]:
        return sorted(self.root.glob("work*/app-*/*/stderr"))

    def stop(self) -> None:
        stop(self.processes)


SESSIONS = "org.apache.spark.sql.connect.service.SessionHolder"


class ConnectServer:
    """A Spark Connect server (pyspark's own jars, `local[2]`) listening on loopback, with its own conf folder
    (`log4j`: its log4j2.properties, to which the server's session log is added at INFO: `SESSIONS` then logs each
    client session it serves)."""

    def __init__(self, root: Path, log4j: str = "") -> None:
        root.mkdir(parents=True)
        (root / "log4j2.properties").write_text(log4j + f"logger.sessions.name = {SESSIONS}\n"
                                                        "logger.sessions.level = info\n")
        self.port = free_port()
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
        raise RuntimeError(f"no Spark Connect server at {self.url}: {self.log.read_text(errors='replace')[-2000:]}")

    def stop(self) -> None:
        stop([self.process])


def stop(processes: list[subprocess.Popen[bytes]]) -> None:
    """SIGTERM to each process's session (the JVM spark-class or spark-submit started goes with it), SIGKILL to
    those still running 30 s later."""
    for p in processes:
        if p.poll() is None:
            os.killpg(p.pid, signal.SIGTERM)
    for p in processes:
        try:
            p.wait(timeout=30)
        except subprocess.TimeoutExpired:
            os.killpg(p.pid, signal.SIGKILL)
            p.wait(timeout=30)
