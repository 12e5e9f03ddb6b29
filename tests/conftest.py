"""Shared fixtures: one local SparkSession for the whole test session (starting one costs 5–10 s), one reference
Apache Kafka 4.0 cluster for the whole session (three brokers and a controller, ~10 s to start); logging errors of
background threads after a test are not reported."""

from __future__ import annotations

import errno
import logging
import os
import sys
import threading
import traceback
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

import pytest


class _JvmWatch:
    """Watches the shared session's driver JVM: if it exits while the tests run, says once (on stderr, at once) with
    what code, during which test and with what the JVM left (an `hs_err_pid*.log`: a crash of the JVM itself; exit
    -9: killed, e.g. by the kernel when memory ran out), and every later test asking for the session fails at its
    set-up with that line, not with py4j's `Connection refused`."""

    def __init__(self, proc: Any, stderr: Path) -> None:
        self.proc = proc
        self.stderr = stderr
        self.died: str | None = None
        self._stop = threading.Event()
        self._guard_stdin()
        threading.Thread(target=self._watch, name="spark-jvm-watch", daemon=True).start()

    def _guard_stdin(self) -> None:
        """The driver JVM exits when its stdin (a pipe from this process) reaches EOF: an `os.close` of that pipe's
        number anywhere in this process (a descriptor closed twice, its number reused by the pipe) is refused, with
        where it came from, and fails the test that did it."""
        pipe = self.proc.stdin.fileno()
        real_close = os.close

        def close(fd: int) -> None:
            if fd == pipe:
                where = "".join(traceback.format_stack(limit=8)[:-1])
                raise OSError(errno.EBADF, f"refused: closing descriptor {fd}, the Spark driver JVM's stdin pipe "
                                           f"(a descriptor closed twice?), at\n{where}")
            real_close(fd)

        os.close = close

    def _watch(self) -> None:
        while not self._stop.wait(0.5):
            code = self.proc.poll()
            if code is not None:
                during = os.environ.get("PYTEST_CURRENT_TEST", "between tests")
                crash = sorted(Path.cwd().glob(f"hs_err_pid{self.proc.pid}*.log"))
                said = self.stderr.read_text(errors="replace").splitlines() if self.stderr.exists() else []
                self.died = (f"the shared Spark session's driver JVM (pid {self.proc.pid}) exited with code {code} "
                             f"during {during}" + (f"; the JVM's crash log: {crash[0]}" if crash else "") +
                             f"; the last lines of its stderr ({self.stderr}):\n" + "\n".join(said[-80:]))
                print(f"\n*** {self.died}", file=sys.__stderr__, flush=True)
                return

    def stop(self) -> None:
        self._stop.set()


@contextmanager
def _stderr_to(path: Path) -> Iterator[None]:
    """Inside, this process's descriptor 2 is `path` (appended to): a child started here keeps it as its stderr."""
    sys.stderr.flush()
    saved = os.dup(2)
    with open(path, "ab") as f:
        os.dup2(f.fileno(), 2)
    try:
        yield
    finally:
        os.dup2(saved, 2)
        os.close(saved)


@pytest.fixture(scope="session")
def spark(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Any]:
    """The driver JVM's stderr (Spark's log at ERROR, a dying thread's stack) goes to a file of its own, not to the
    output pytest captured for whichever test started it; `_JvmWatch` shows its end if the JVM dies."""
    from kcoord.conformance.traces.session import local_session

    stderr = tmp_path_factory.mktemp("spark-driver") / "stderr.log"
    with _stderr_to(stderr):
        session = local_session("local[2]", shuffle_partitions=2, rows=0)  # (small inputs only: C1 suffices)
    global _watch
    _watch = _JvmWatch(session.sparkContext._gateway.proc, stderr)
    yield session
    _watch.stop()
    if _watch.died is not None:
        pytest.fail(_watch.died, pytrace=False)
    session.stop()


_watch: _JvmWatch | None = None


@pytest.fixture(autouse=True)
def _spark_jvm_alive(request: pytest.FixtureRequest) -> None:
    """A test asking for the shared session after its JVM died fails with why (`_JvmWatch`)."""
    if _watch is not None and _watch.died is not None and "spark" in request.fixturenames:
        pytest.fail(_watch.died, pytrace=False)


#: Kafka 4.0's defaults with the waits that only slow tests down made short: the same as `kcoord serve`'s in the
#: tests (tests/server/served_cluster.py `fast_cluster_config`), so both brokers are driven alike
REFERENCE_SETTINGS = {
    "group.initial.rebalance.delay.ms": "0",
    "group.consumer.heartbeat.interval.ms": "300",
    "group.consumer.min.heartbeat.interval.ms": "300",
    "group.consumer.session.timeout.ms": "6000",
    "group.consumer.min.session.timeout.ms": "6000",
    "transaction.abort.timed.out.transaction.cleanup.interval.ms": "1000",
    # no group-metadata cleanup during a run (Kafka's default: every 10 min): it deletes an empty group without
    # offsets, and where its tick falls is timing, not behaviour — it once deleted test_kafka_tools' KIP-848 group
    # between its members leaving and --reset-offsets, which then made a classic group (fast_cluster_config: the same)
    "offsets.retention.check.interval.ms": "86400000",
}


@pytest.fixture(scope="session")
def reference_kafka(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Any]:
    """Apache Kafka 4.0 (the jars `make` fetched), three brokers, started once for the whole run; a test that stops a
    broker leaves the cluster to `ensure_running` for the next one."""
    from kcoord.conformance.reference.broker import ReferenceKafka, ReferenceOptions

    options = ReferenceOptions(tmp_path_factory.mktemp("kafka-reference"), port=0, nodes=3,
                               settings=REFERENCE_SETTINGS)
    with ReferenceKafka(options) as cluster:
        yield cluster


#: The suite runs in two pytest-xdist workers (`make test`: `-n 2 --dist loadgroup`). A group's tests run in one
#: worker, one after another: the test modules of the shared SparkSession are one group, those of the shared reference
#: Kafka cluster another, and every other module is a group of its own (its module fixtures made once). So the cluster
#: starts once a run and the session once in the Spark group's worker — and once more in the Kafka group's, for the
#: two tests that read the reference cluster's logs with Spark (test_logs_on_kafka's; a test of both is the Kafka
#: group's). The groups go by path, because xdist's scheduler sees test ids only; `pytest_collection_modifyitems`
#: refuses a test of the session or of the cluster outside its group.
SPARK_TESTS = ("tests/conformance/traces/test_duckdb_props.py", "tests/conformance/traces/test_duckengine.py",
               "tests/conformance/traces/test_duckspark.py", "tests/conformance/traces/test_duckstage.py",
               "tests/conformance/traces/test_log_checks.py", "tests/conformance/traces/test_spark_archive.py",
               "tests/conformance/traces/test_spark_checker.py", "tests/conformance/traces/test_spark_cluster.py",
               "tests/model/test_spark_backend.py")
KAFKA_TESTS = ("tests/conformance/reference/", "tests/server/test_java_clients.py", "tests/server/test_kafka_tools.py")


def xdist_group(nodeid: str) -> str:
    """The group a test id runs in: "spark", "kafka" or its module's path."""
    path = nodeid.split("::", 1)[0]
    if path.startswith(SPARK_TESTS):
        return "spark"
    if path.startswith(KAFKA_TESTS):
        return "kafka"
    return path


def pytest_xdist_make_scheduler(config: pytest.Config, log: Any) -> Any:
    """`--dist loadgroup` by `xdist_group` (pytest 9 keeps a test's id where xdist's own loadgroup cannot add its
    group to it, so its `xdist_group` marks would not group anything)."""
    if config.getvalue("dist") != "loadgroup":
        return None
    from xdist.scheduler import LoadScopeScheduling

    class ByGroup(LoadScopeScheduling):
        def _split_scope(self, nodeid: str) -> str:
            return xdist_group(nodeid)

    return ByGroup(config, log)


def pytest_collection_modifyitems(items: list[pytest.Item]) -> None:
    """A test of the shared SparkSession or of the shared reference Kafka cluster in a module outside SPARK_TESTS or
    KAFKA_TESTS would start another session or cluster in another worker: refused, saying where to list it."""
    for item in items:
        names = set(getattr(item, "fixturenames", ()))
        kafka = bool(item.get_closest_marker("kafka") or "reference_kafka" in names)
        spark = bool(item.get_closest_marker("spark") or names & {"spark", "mutated_traces", "generated_traces"})
        needs = "kafka" if kafka else "spark" if spark else None
        if needs is not None and xdist_group(item.nodeid) != needs:
            raise pytest.UsageError(f"{item.nodeid} uses the shared {needs} fixture: list its module in "
                                    f"tests/conftest.py {needs.upper()}_TESTS (its tests then run in the {needs} "
                                    "group's worker)")


def pytest_configure(config: pytest.Config) -> None:
    """Background threads of the clients and of py4j log after pytest has closed the streams it captured for a test
    (a reconnect attempt once a test's server stopped, py4j closing its connections at interpreter exit); logging
    then prints "--- Logging error ---" with a traceback for each. Those are not the tests' findings: drop them.

    pytest-xdist's workers start with COLUMNS=80 and LINES=24 in their environment, a serial run with neither: the
    command line's tables off a terminal are as wide as COLUMNS says (`kcoord.cli._width`), so they are dropped too,
    and every test sees the width a user's pipe or CI log gets."""
    logging.raiseExceptions = False
    for name in ("COLUMNS", "LINES"):
        os.environ.pop(name, None)
