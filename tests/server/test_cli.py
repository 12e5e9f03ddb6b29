"""The command line end to end: `kcoord serve` as a process, `kcoord conformance --bootstrap` against it, SIGTERM
(clean exit after flushing), a restart on the same data directory that keeps what was committed, and the demo stage.
"""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import time
from collections.abc import Iterator
from pathlib import Path

import pytest
from rich.console import Console

from kcoord.cmd_serve import demo_stage
from kcoord.conformance.ports import free_port_block

pytestmark = [pytest.mark.wire, pytest.mark.slow]

KCOORD = [str(Path(sys.executable).parent / "kcoord")]  # the installed entry point


def start_serve(data_dir: Path, port: int, trace_dir: Path) -> subprocess.Popen[str]:
    process = subprocess.Popen(
        [*KCOORD, "serve", "--data-dir", str(data_dir), "--port", str(port), "--nodes", "2", "--trace-out",
         str(trace_dir), "--set", "groups.initial_rebalance_delay_ms=0", "--log-level", "warning"],
        stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    assert process.stdout is not None
    deadline = time.monotonic() + 60
    listening = 0
    while listening < 2:
        line = process.stdout.readline()
        assert line and time.monotonic() < deadline, f"kcoord serve did not start: {process.stderr.read()}"
        listening += "listening on" in line
    return process


def stop_serve(process: subprocess.Popen[str]) -> str:
    process.send_signal(signal.SIGTERM)
    out, err = process.communicate(timeout=60)
    assert process.returncode == 0, err
    return out


@pytest.fixture()
def serve(tmp_path: Path) -> Iterator[tuple[subprocess.Popen[str], int]]:
    port = free_port_block(2)
    process = start_serve(tmp_path / "data", port, tmp_path / "traces")
    yield process, port
    if process.poll() is None:
        process.kill()
        process.wait()


def test_conformance_command_passes_against_serve_and_restart_keeps_commits(
        serve: tuple[subprocess.Popen[str], int], tmp_path: Path) -> None:
    process, port = serve
    bootstrap = f"127.0.0.1:{port},127.0.0.1:{port + 1}"
    run = subprocess.run(
        [*KCOORD, "conformance", "--bootstrap", bootstrap, "-s", "advertised-apis", "-s", "bad-input",
         "-s", "coordinator-spread", "-s", "transactions[kafka-python]"],
        capture_output=True, text=True, timeout=300, env={**os.environ, "COLUMNS": "200"})
    assert run.returncode == 0, run.stdout + run.stderr
    assert "4 passed, 0 failed, 0 skipped" in run.stdout
    for name in ("advertised-apis", "bad-input", "coordinator-spread", "transactions[kafka-python]"):
        assert name in run.stdout
    assert "kcoord serve: stopped" in stop_serve(process)
    assert any((tmp_path / "traces" / "Transaction").glob("*.jsonl"))

    restarted = start_serve(tmp_path / "data", port, tmp_path / "traces")
    try:
        import kafka
        from kafka.structs import TopicPartition

        consumer = kafka.KafkaConsumer(bootstrap_servers=bootstrap, isolation_level="read_committed")
        topics = sorted(consumer.topics())
        tps = [TopicPartition(t, p) for t in topics for p in sorted(consumer.partitions_for_topic(t) or ())]
        ends = consumer.end_offsets(tps)  # read_committed: the last stable offsets
        consumer.close()
        assert topics and sum(ends.values()) > 0, ends  # the scenarios' committed records survived the restart
    finally:
        stop_serve(restarted)


def test_conformance_command_usage_errors() -> None:
    run = subprocess.run([*KCOORD, "conformance", "--bootstrap", "nohostport"], capture_output=True, text=True,
                         timeout=60)
    assert run.returncode == 2 and "expected HOST:PORT" in run.stderr
    run = subprocess.run([*KCOORD, "conformance", "--bootstrap", "127.0.0.1:1", "-s", "no-such-scenario"],
                         capture_output=True, text=True, timeout=60)
    assert run.returncode == 2 and "no scenario matches" in run.stderr
    run = subprocess.run([*KCOORD, "conformance", "--bootstrap", "127.0.0.1:1", "-s", "transactions*"],
                         capture_output=True, text=True, timeout=60)
    assert run.returncode == 2, run.stderr
    assert "no broker answers at --bootstrap 127.0.0.1:1 (127.0.0.1:1: Connection refused)" in run.stderr
    run = subprocess.run([*KCOORD, "conformance", "-s", "transactions*"], capture_output=True, text=True, timeout=60)
    assert run.returncode == 2 and "missing option --bootstrap" in run.stderr, run.stderr


def test_conformance_list_needs_no_broker() -> None:
    """`--list` names the scenarios (as selected by -s) without a broker to test."""
    from kcoord.conformance.wire.scenarios import select

    run = subprocess.run([*KCOORD, "conformance", "--list", "-s", "describe-*"], capture_output=True, text=True,
                         timeout=60)
    assert run.returncode == 0, run.stderr
    names = [line.split(": ", 1)[0] for line in run.stdout.splitlines()]
    assert names == [s.name for s in select(["describe-*"])] and "describe-unknown-group" in names
    assert "Dead group without an error up to v5, GROUP_ID_NOT_FOUND with a message" in run.stdout  # one line each


def test_demo_stage(tmp_path: Path) -> None:
    console = Console(record=True, width=200)
    assert demo_stage(console, tmp_path)
    text = console.export_text()
    assert "consumed 6 records" in text and str(tmp_path / "traces") in text
    assert {p.name for p in (tmp_path / "traces").iterdir()} >= {"ClassicGroup", "Transaction", "PartitionProducer"}


def test_serve_on_a_port_in_use_is_a_clear_error(tmp_path: Path) -> None:
    """`kcoord serve` on a taken port says so, without a traceback, and exits 2 (it had loaded its data folder
    first; `KcoordServer.start` closes that again before raising)."""
    import socket

    with socket.socket() as taken:
        taken.bind(("127.0.0.1", 0))
        taken.listen()
        port = taken.getsockname()[1]
        done = subprocess.run([*KCOORD, "serve", "--data-dir", str(tmp_path / "data"), "--port", str(port),
                               "--log-level", "warning"], capture_output=True, text=True, timeout=60)
    assert done.returncode == 2, done.stderr
    assert "kcoord: error: cannot start serving" in done.stderr and "address already in use" in done.stderr
    assert "Traceback" not in done.stderr
    assert (tmp_path / "data" / "__transaction_state-0").is_dir()


def test_serve_does_not_start_a_partition_whose_log_is_damaged_and_says_so_in_one_line(tmp_path: Path) -> None:
    """Damage before a log's last segment cannot be a torn tail: cutting there would drop acknowledged records, so
    that coordinator partition is not loaded (as Kafka's runtime leaves a partition whose load failed), the server
    serves the others, one ERROR line names the segment, the byte and the offset, the metric counts it, and nothing
    is cut."""
    import urllib.request

    from kcoord.impl.storage.log import PartitionLog

    log_dir = tmp_path / "data" / "__transaction_state-0"
    log_dir.mkdir(parents=True)
    with PartitionLog.open(log_dir, segment_bytes=1024) as log:
        for i in range(40):
            log.append([(b"k%d" % i, b"v" * 20)], timestamp_ms=1_000)
    first = min(log_dir.glob("*.log"))
    damaged = bytearray(first.read_bytes())
    damaged[100] ^= 0xFF
    first.write_bytes(bytes(damaged))
    process = subprocess.Popen([*KCOORD, "serve", "--data-dir", str(tmp_path / "data"), "--port", "0",
                                "--metrics-port", "0", "--log-level", "warning"], stdout=subprocess.PIPE,
                               stderr=subprocess.PIPE, text=True)
    try:
        assert process.stdout is not None
        lines = [process.stdout.readline() for _ in range(3)]
        metrics_url = next(line.split()[-1] for line in lines if "metrics on" in line)
        with urllib.request.urlopen(metrics_url, timeout=30) as answer:
            metrics = answer.read().decode()
        assert 'kcoord_partitions_offline{kind="transaction"} 1.0' in metrics
        assert 'kcoord_partitions_offline{kind="group"} 0.0' in metrics
    finally:
        process.send_signal(signal.SIGTERM)
        _, err = process.communicate(timeout=60)
    assert process.returncode == 0, err
    (error,) = [line for line in err.splitlines() if " ERROR " in line]
    assert f"__transaction_state-0 is not loaded: {first}: the batch at byte " in error
    assert "below the recovery point" in error and "delete the later segments" in error and "Traceback" not in err
    assert first.read_bytes() == bytes(damaged)  # nothing was truncated or rewritten


def test_parquet_traces_of_a_killed_server_are_readable_up_to_the_last_seal(tmp_path: Path) -> None:
    """`kcoord serve --trace-format parquet` seals its trace files at each flush (every 10 s): killed with SIGKILL
    after one, it leaves complete part files that the checker reads (a file still open at the kill has no footer and
    is quarantined as `unreadable_file`, never a crash)."""
    import kafka
    import pyarrow.parquet as pq

    from kcoord.conformance.traces.job import Config, run

    port = free_port_block(1)
    traces = tmp_path / "traces"
    process = subprocess.Popen(
        [*KCOORD, "serve", "--data-dir", str(tmp_path / "data"), "--port", str(port), "--trace-out", str(traces),
         "--trace-format", "parquet", "--log-level", "warning"], stdout=subprocess.PIPE, stderr=subprocess.PIPE,
        text=True)
    try:
        assert process.stdout is not None and "listening on" in process.stdout.readline()
        producer = kafka.KafkaProducer(bootstrap_servers=f"127.0.0.1:{port}", transactional_id="sealed")
        producer.init_transactions()
        producer.begin_transaction()
        producer.send("sealed-out", b"v", partition=0)
        producer.commit_transaction()
        producer.close()

        def sealed() -> list[Path]:
            out = []
            for part in (traces / "Transaction").glob("*.parquet"):
                try:
                    pq.read_metadata(part)
                except Exception:  # still open: no footer yet
                    continue
                out.append(part)
            return out

        deadline = time.monotonic() + 40
        while not sealed() and time.monotonic() < deadline:
            time.sleep(0.5)
        assert sealed(), "no Transaction trace file was sealed within 40 s"
    finally:
        process.kill()  # SIGKILL: no flush, no close
        process.wait(timeout=60)
    outcome = run(Config([str(traces)], str(tmp_path / "check"), engine="python"))
    assert outcome.summary.rows_read["Transaction"] >= 3  # InitProducerId, AddPartitions, EndTxn at least
    assert set(outcome.summary.quarantined) <= {"unreadable_file"}
    assert outcome.summary.violations_total == 0, outcome.report


def test_a_data_dir_serves_one_server_at_a_time(tmp_path: Path) -> None:
    """Two servers on one data folder would append to the same logs (Kafka locks each log directory with `.lock`
    for this): the second is refused in one line, exit 2, and the folder is free again once the first stops."""
    from kcoord.impl.server.embedded import ServerThread
    from kcoord.impl.server.serve import DataDirInUse, ServeOptions

    data = tmp_path / "data"
    with ServerThread(ServeOptions(data_dir=data, port=0)):
        with pytest.raises(DataDirInUse, match="is in use by another kcoord serve"):
            ServerThread(ServeOptions(data_dir=data, port=0)).start()
        done = subprocess.run([*KCOORD, "serve", "--data-dir", str(data), "--port", "0", "--log-level", "warning"],
                              capture_output=True, text=True, timeout=60)
        assert done.returncode == 2, done.stderr
        assert f"kcoord: error: cannot start serving: {data} is in use by another kcoord serve" in done.stderr
        assert "Traceback" not in done.stderr
    with ServerThread(ServeOptions(data_dir=data, port=0)) as again:  # released by the first one's stop
        assert again.bootstrap
