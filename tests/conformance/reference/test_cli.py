"""`kcoord kafka-reference` end to end: a real Apache Kafka started from the fetched jars answers on the printed
bootstrap and stops cleanly on SIGTERM (exit 0, its processes gone); the one-line refusals (port in use, jars missing,
a data folder formatted for another node count, a node whose storage cannot be formatted)."""

from __future__ import annotations

import signal
import socket
import subprocess
import sys
import time
from pathlib import Path

import pytest

from kcoord.conformance.ports import free_port_block
from kcoord.conformance.wire.raw import api_versions

pytestmark = [pytest.mark.wire, pytest.mark.slow, pytest.mark.kafka]

KCOORD = [str(Path(sys.executable).parent / "kcoord")]


def _start(data_dir: Path, port: int) -> tuple[subprocess.Popen[str], str]:
    process = subprocess.Popen([*KCOORD, "kafka-reference", "--data-dir", str(data_dir), "--port", str(port)],
                               stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    assert process.stdout is not None
    deadline = time.monotonic() + 120
    while True:
        line = process.stdout.readline()
        assert line and time.monotonic() < deadline, f"kafka-reference did not start: {process.stderr.read()}"
        if "bootstrap" in line:
            return process, line.split("bootstrap ")[1].split(";")[0]


def test_serves_kafka_and_stops_on_sigterm(tmp_path: Path) -> None:
    port = free_port_block(2)
    process, bootstrap = _start(tmp_path / "kafka", port)
    try:
        assert bootstrap == f"127.0.0.1:{port}"
        versions = api_versions(("127.0.0.1", port))
        assert versions[68] == (0, 1)  # ConsumerGroupHeartbeat v0-v1: Apache Kafka 4.0's own answer
        assert (tmp_path / "kafka" / "node-0" / "meta.properties").exists()
    finally:
        process.send_signal(signal.SIGTERM)
        out, err = process.communicate(timeout=90)
    assert process.returncode == 0, err
    assert out.rstrip().endswith("kafka-reference: stopped")
    with pytest.raises(OSError):
        socket.create_connection(("127.0.0.1", port), timeout=1).close()
    # the second start finds the storage formatted and keeps the cluster id
    cluster_id = (tmp_path / "kafka" / "kcoord-reference.json").read_text()
    process, _ = _start(tmp_path / "kafka", port)
    process.send_signal(signal.SIGTERM)
    process.communicate(timeout=90)
    assert (tmp_path / "kafka" / "kcoord-reference.json").read_text() == cluster_id


def _refused(*args: str) -> str:
    done = subprocess.run([*KCOORD, "kafka-reference", *args], capture_output=True, text=True, timeout=60)
    assert done.returncode == 2, done
    lines = done.stderr.strip().splitlines()
    assert len(lines) == 1, done.stderr
    return lines[0]


def test_one_line_refusals(tmp_path: Path) -> None:
    with socket.socket() as taken:
        taken.bind(("127.0.0.1", 0))
        taken.listen()
        port = taken.getsockname()[1]
        assert f"port {port} on 127.0.0.1 is in use" in _refused("--data-dir", str(tmp_path / "a"), "--port", str(port))
    assert "run make" in _refused("--data-dir", str(tmp_path / "b"), "--libs", str(tmp_path))
    (tmp_path / "c").mkdir()
    (tmp_path / "c" / "kcoord-reference.json").write_text('{"cluster_id": "x", "nodes": 1}\n')
    assert "holds a reference Kafka of 1 node(s), not 3" in _refused("--data-dir", str(tmp_path / "c"), "--nodes", "3",
                                                                      "--port", "0")
    (tmp_path / "d").mkdir()
    (tmp_path / "d" / "node-1").write_text("")  # a file where node 1's log folder goes: its format fails
    assert _refused("--data-dir", str(tmp_path / "d"), "--nodes", "3", "--port", "0") == (
        "kcoord: error: formatting node-1's storage failed: No available log directories to format.")
    assert not (tmp_path / "d" / "kcoord-reference.json").exists()


def test_a_killed_launcher_leaves_no_kafka_behind(tmp_path: Path) -> None:
    """The nodes get the kernel's parent-death signal: a test run killed mid-way does not leak JVMs."""
    script = ("import os, sys\nfrom pathlib import Path\n"
              "from kcoord.conformance.reference.broker import ReferenceKafka, ReferenceOptions\n"
              "k = ReferenceKafka(ReferenceOptions(Path(sys.argv[1]), port=0)).start()\n"
              "print(*[p.pid for p in k.processes.values()], flush=True)\nos._exit(0)\n")
    done = subprocess.run([sys.executable, "-c", script, str(tmp_path / "kafka")], capture_output=True, text=True,
                          timeout=120, check=True)
    pids = [int(p) for p in done.stdout.split()]
    assert pids
    deadline = time.monotonic() + 60
    while any(Path(f"/proc/{pid}").exists() for pid in pids):
        assert time.monotonic() < deadline, f"Kafka node(s) {pids} outlived their launcher"
        time.sleep(0.2)
