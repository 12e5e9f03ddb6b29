"""The Spark driver's class-data archive (`sparkcds`): its key, when it is refused, that a session maps it, and that
`kcoord check-traces` reports the same with it, without it and with a damaged one."""

from __future__ import annotations

import json
import logging
import os
import re
import shutil
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

from kcoord.conformance.traces import session, sparkcds


def _jdk_and_spark(tmp_path: Path) -> tuple[Path, Path]:
    java, spark = tmp_path / "jdk", tmp_path / "spark"
    (java / "lib" / "server").mkdir(parents=True)
    (java / "release").write_text('JAVA_VERSION="17.0.21.1"\n')
    (java / "lib" / "server" / "libjvm.so").write_bytes(b"x" * 10)
    (spark / "jars").mkdir(parents=True)
    for name in ("spark-core_2.13-4.3.0.jar", "janino-3.1.9.jar"):
        (spark / "jars" / name).write_bytes(b"jar")
    return java, spark


def test_the_key_changes_with_the_jdk_the_jars_and_the_format(tmp_path: Path,
                                                                monkeypatch: pytest.MonkeyPatch) -> None:
    java, spark = _jdk_and_spark(tmp_path)
    first = sparkcds.key(java, spark)
    assert first.startswith("spark-4.3.0-jdk-17.0.21.1-") and first == sparkcds.key(java, spark)
    seen = {first}

    def changed(what: str) -> None:
        now = sparkcds.key(java, spark)
        assert now not in seen, f"the key did not change with {what}"
        seen.add(now)

    (java / "release").write_text('JAVA_VERSION="17.0.22"\n')
    changed("the JDK's release")
    (java / "lib" / "server" / "libjvm.so").write_bytes(b"y" * 11)
    changed("libjvm.so")
    (spark / "jars" / "extra.jar").write_bytes(b"jar")
    changed("a jar added")
    (spark / "jars" / "janino-3.1.9.jar").write_bytes(b"other")
    changed("a jar replaced")
    shutil.copytree(spark, tmp_path / "spark2")
    spark = tmp_path / "spark2"
    changed("the jars' folder (the class path CDS checks)")
    monkeypatch.setattr(sparkcds, "FORMAT", "other")
    changed("the archive's format (what the dump runs, the options)")


def test_driver_memory_of_32_gb_or_more_maps_no_archive() -> None:
    assert all(sparkcds.fits(m) for m in (None, "", "1g", "8g", "31g", "4096m"))
    assert not any(sparkcds.fits(m) for m in ("32g", "40g", "40960m", "1t", "lots"))


def _archive(folder: Path, content: bytes, size: int | None = None) -> sparkcds.Archive:
    import hashlib

    archive = sparkcds.Archive(folder, "k")
    folder.mkdir(parents=True, exist_ok=True)
    archive.jsa.write_bytes(content)
    archive.meta.write_text(json.dumps({"size": len(content) if size is None else size,
                                        "sha256": hashlib.sha256(b"whole").hexdigest()}))
    return archive


def test_an_archive_is_refused_when_absent_truncated_or_damaged(tmp_path: Path) -> None:
    assert "no class-data archive" in str(sparkcds.unusable(sparkcds.Archive(tmp_path / "none", "k")))
    whole = _archive(tmp_path / "whole", b"whole")
    assert sparkcds.unusable(whole) is None and sparkcds.unusable(whole, thorough=True) is None
    truncated = _archive(tmp_path / "truncated", b"who", size=5)
    assert sparkcds.unusable(truncated) == f"{truncated.jsa} is damaged: 3 bytes, written with 5"
    flipped = _archive(tmp_path / "flipped", b"whale")
    assert sparkcds.unusable(flipped) is None  # (the JVM verifies the checksum: test_check_traces_...)
    assert "digest" in str(sparkcds.unusable(flipped, thorough=True))
    whole.meta.write_text("{")
    assert "unreadable" in str(sparkcds.unusable(whole))


def test_a_truncated_archive_is_not_given_to_the_jvm_and_said_once(tmp_path: Path,
                                                                    caplog: pytest.LogCaptureFixture) -> None:
    """A truncated archive would crash the JVM mapping it (SIGBUS): the session starts without it, one warning."""
    archive = sparkcds.locate(tmp_path)
    assert archive is not None
    archive.jsa.write_bytes(b"x" * 10)
    archive.meta.write_text(json.dumps({"size": 20, "sha256": "0"}))
    with caplog.at_level(logging.INFO, logger=session.LOG.name):
        assert session.driver_archive(tmp_path) is None
    assert [r.levelname for r in caplog.records] == ["WARNING"]
    assert caplog.records[0].getMessage() == (
        f"Spark starts without its class-data archive: {archive.jsa} is damaged: 10 bytes, written with 20")
    caplog.clear()
    with caplog.at_level(logging.INFO, logger=session.LOG.name):
        assert session.driver_archive(tmp_path / "empty") is None  # (none built: today's start, said at INFO)
        assert session.driver_archive(tmp_path, driver_memory="64g") is None
    assert [r.levelname for r in caplog.records] == ["INFO"]


def test_the_jvm_s_cds_messages_say_whether_it_mapped_the_archive(tmp_path: Path) -> None:
    log = tmp_path / "cds.log"
    mapped = ("[0.011s][info][cds] Opened archive /x/a.jsa.\n"
              "[0.017s][info][cds] Mapped dynamic region #0 at base 0x00007f2cf6bcd000 top 0x00007f2cfa5a1000 "
              "(ReadWrite)\n")
    log.write_text(mapped)
    assert sparkcds.refused(log) is None
    log.write_text(mapped + "[0.087s][info][cds] UseSharedSpaces: Checksum verification failed.\n")
    assert sparkcds.refused(log) == "Checksum verification failed."
    log.write_text("[0.011s][info][cds] Opened archive /x/a.jsa.\n")
    assert sparkcds.refused(log) == "the JVM did not map it"
    assert sparkcds.refused(tmp_path / "never-written.log") is None


def _built() -> sparkcds.Archive:
    archive = sparkcds.locate(session.ARCHIVE_FOLDER)
    assert archive is not None
    why = sparkcds.unusable(archive)
    assert why is None, f"{why}: `make setup` (or `kcoord spark-archive`) builds it before the tests"
    return archive


@pytest.mark.slow
def test_the_shared_session_s_driver_maps_the_archive(spark: Any) -> None:
    """The tests' session (local_session, the CLI's) started its JVM with the archive: the JVM has the file mapped
    (/proc/PID/maps), and its first Spark class came from it (the class-data region, not a jar)."""
    archive = _built()
    pid = int(spark.sparkContext._jvm.java.lang.ProcessHandle.current().pid())
    maps = Path(f"/proc/{pid}/maps").read_text()
    assert str(archive.jsa) in maps, f"the driver JVM {pid} has not mapped {archive.jsa}"
    flags = spark.sparkContext._jvm.java.lang.management.ManagementFactory.getRuntimeMXBean().getInputArguments()
    assert f"-XX:SharedArchiveFile={archive.jsa}" in list(flags)
    assert session.THREAD_STACK in list(flags)  # (the tasks' threads: a StackOverflowError there ends the JVM)


@pytest.mark.slow
def test_check_traces_with_a_damaged_archive_reports_what_the_python_checker_reports(tmp_path: Path) -> None:
    """`kcoord check-traces --engine spark` in a fresh process with a copy of the archive with four bytes changed (the
    JVM's checksum refuses it, the JVM starts without it, one line in stderr): the report and exit status of
    `--engine python`, and no CDS message of the JVM on stdout. (A fresh process with the archive whole: the
    shared session's driver above maps it, and test_spark_checker's Spark runs report what Python reports.)"""
    archive = _built()
    traces = tmp_path / "traces"
    kcoord = [str(Path(sys.executable).with_name("kcoord"))]  # (the console script the venv installed)
    subprocess.run([*kcoord, "gen-traces", str(traces), "--rows", "60", "--keys", "3", "--mutate", "drop_row"],
                   check=True, capture_output=True)
    damaged = tmp_path / "damaged"
    damaged.mkdir()
    shutil.copy(archive.meta, damaged / archive.meta.name)
    shutil.copy(archive.jsa, damaged / archive.jsa.name)
    os.chmod(damaged / archive.jsa.name, 0o644)
    with open(damaged / archive.jsa.name, "r+b") as f:
        f.seek(archive.jsa.stat().st_size // 2)
        f.write(b"\xde\xad\xbe\xef")
    started = {}  # (both engines' processes at once: they share nothing but the input, which neither writes)
    for engine, folder in (("python", archive.folder), ("spark", damaged)):
        env = {**os.environ, "KCOORD_SPARK_ARCHIVE": str(folder)}
        started[engine] = subprocess.Popen([*kcoord, "check-traces", str(traces), "--engine", engine], env=env,
                                           stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    runs = {}
    for engine, process in started.items():
        stdout, stderr = process.communicate(timeout=600)
        runs[engine] = subprocess.CompletedProcess(process.args, process.returncode, stdout, stderr)

    def report(done: subprocess.CompletedProcess[str]) -> str:
        return re.sub(r"\((python|spark), [0-9.]+ s\)", "(ENGINE, N s)", done.stdout)

    assert runs["python"].returncode == runs["spark"].returncode == 1, runs["spark"].stderr[-2000:]
    assert "(spark, " in runs["spark"].stdout
    assert report(runs["python"]) == report(runs["spark"]) and "violations" in report(runs["spark"])
    assert not any("cds" in r.stdout.lower() or "shared" in r.stdout.lower() for r in runs.values())
    said = [line for r in runs.values() for line in r.stderr.splitlines() if "class-data archive" in line]
    assert said == [f"Spark's JVM did not use the class-data archive {damaged / archive.jsa.name}: "
                    "Checksum verification failed."]


@pytest.mark.slow
def test_a_driver_jvm_that_does_not_start_with_the_archive_is_started_without_it(tmp_path: Path) -> None:
    """A fresh process whose driver JVM cannot start with the archive's options (here sharing required, -Xshare:on,
    of an archive that is not there: the JVM exits at once; Spark's launcher ignores options the JVM does not know,
    so an unknown one would not do): the session starts again without them, says so in one line, and runs."""
    _built()
    code = """
import logging
from kcoord.conformance.traces import session, sparkcds
options = sparkcds.driver_options
sparkcds.driver_options = lambda archive, log: options(archive, log) + " -Xshare:on -XX:SharedArchiveFile=/nowhere.jsa"
spark = session.local_session("local[1]", rows=0)
flags = spark.sparkContext._jvm.java.lang.management.ManagementFactory.getRuntimeMXBean().getInputArguments()
print("rows", spark.range(7).count(), "archive option", any("Xshare" in f for f in flags))
spark.stop()
"""
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=300, cwd=tmp_path)
    assert done.returncode == 0, done.stderr[-2000:]
    assert done.stdout.strip().splitlines() == ["rows 7 archive option False"]  # (the JVM's complaint: on stderr)
    assert "Unable to use shared archive" in done.stderr
    said = [line for line in done.stderr.splitlines() if "class-data archive" in line]
    assert len(said) == 1 and said[0].startswith("Spark's JVM did not start with the class-data archive"), said
