"""A class-data-sharing (CDS) archive of the Spark driver JVM's classes: built once, mapped by every local session.

A fresh driver JVM loads and verifies ~13,000 classes from Spark's jars before its first job; Java's dynamic AppCDS
(`-XX:ArchiveClassesAtExit` once, then `-XX:SharedArchiveFile`) maps them from one file instead: start-up 5.2 → 2.8
JVM CPU-s and a 200k-event check 9.5 → 8.8 (benchmarks/RESULTS.md, issue 33). The archive is only valid for the
JDK that wrote it and the same class path (Spark's jars, by path, size and time), so it lives under a key of both
(`key`), in a folder of this checkout (`default_folder`: build/spark-cds, which `make setup` fills).

Owns: the key, the archive's files (`<key>.jsa`, its size and digest in `<key>.json`, the dumping JVM's output in
`<key>.log`), `build` (a child process runs a small representative check with `-XX:ArchiveClassesAtExit`, written to a
temporary name and renamed when whole), `unusable` (why an archive cannot be used: absent, or not the size it was
written with — a truncated archive crashes the JVM that maps it, SIGBUS), the driver's options (`driver_options`: the
archive, its checksum verified at start, the JVM's CDS messages to a file instead of stdout) and what the JVM said
(`refused`). Only the driver: a cluster's executors are other JVMs, on other machines' JDKs and jars.
Reads two environment variables, the ones Spark's launcher (spark-class) reads to choose the JVM and the jars:
JAVA_HOME (else `java` on PATH) and SPARK_HOME (else pyspark's own folder).
Must not import: kcoord.cli.
"""

from __future__ import annotations

import hashlib
import json
import os
import shlex
import shutil
import subprocess
import sys
import tempfile
from dataclasses import dataclass
from pathlib import Path

#: bumped when what the dump runs or the options below change, so that older archives are rebuilt
FORMAT = "1"

#: options every JVM mapping an archive shares with the one that dumped it; CDS refuses an archive written with
#: compressed object pointers in a JVM without them (a heap of 32 GB or more), so larger drivers start without it
COMPRESSED_OOPS_MAX_GB = 31

#: how long the dumping run may take (it checks ~300 rows a machine twice, then writes ~160 MB): 2 min on 2 busy cores
DUMP_TIMEOUT_S = 600


def default_folder() -> Path:
    """build/spark-cds of the source checkout this module runs from (`make clean` removes it), else the user's
    cache folder."""
    root = Path(__file__).resolve().parents[2]
    if (root / "pyproject.toml").is_file():
        return root / "build" / "spark-cds"
    return Path.home() / ".cache" / "kcoord" / "spark-cds"


def java_home() -> Path | None:
    """The JDK Spark's launcher will run: JAVA_HOME's, else the one `java` on PATH belongs to (None: no Java)."""
    if os.environ.get("JAVA_HOME"):
        return Path(os.environ["JAVA_HOME"]).resolve()
    java = shutil.which("java")
    return Path(java).resolve().parents[1] if java else None


def spark_home() -> Path:
    from pyspark.find_spark_home import _find_spark_home

    return Path(_find_spark_home()).resolve()


def key(java: Path, spark: Path) -> str:
    """A name for the archive of this JDK (its release file, its libjvm's size and time) and these Spark jars (their
    folder, names, sizes and times: the class path CDS checks), readable at a glance: `spark-4.3.0-jdk-17.0.21.1-…`."""
    digest = hashlib.sha256(f"format {FORMAT}\n".encode())
    release = java / "release"
    digest.update(release.read_bytes() if release.is_file() else str(java).encode())
    for libjvm in sorted(java.glob("lib/*/libjvm.so")):
        digest.update(_stamp(libjvm))
    digest.update(str(spark).encode())
    for jar in sorted((spark / "jars").glob("*.jar")):
        digest.update(_stamp(jar))
    return f"spark-{_spark_version(spark)}-jdk-{_java_version(release)}-{digest.hexdigest()[:16]}"


def _stamp(path: Path) -> bytes:
    st = path.stat()
    return f"{path.name} {st.st_size} {st.st_mtime_ns}\n".encode()


def _spark_version(spark: Path) -> str:
    jars = sorted((spark / "jars").glob("spark-core_*.jar"))
    return jars[0].stem.rpartition("-")[2] if jars else "unknown"


def _java_version(release: Path) -> str:
    if release.is_file():
        for line in release.read_text(errors="replace").splitlines():
            if line.startswith("JAVA_VERSION="):
                return line.partition("=")[2].strip('"')
    return "unknown"


@dataclass(frozen=True, slots=True)
class Archive:
    folder: Path
    key: str

    @property
    def jsa(self) -> Path:
        return self.folder / f"{self.key}.jsa"

    @property
    def meta(self) -> Path:
        return self.folder / f"{self.key}.json"

    @property
    def log(self) -> Path:
        return self.folder / f"{self.key}.log"


def locate(folder: Path) -> Archive | None:
    """The archive of the JDK and the jars a session would start with, in `folder` (it may not exist yet); None
    when there is no Java to key it on."""
    java = java_home()
    return Archive(folder, key(java, spark_home())) if java is not None else None


def unusable(archive: Archive, *, thorough: bool = False) -> str | None:
    """Why `archive` cannot be mapped (None: it can): absent, or not the size it was written with (a truncated
    archive crashes the JVM). `thorough`: its digest too (reads ~160 MB; `build` does, a session does not — the
    JVM verifies its checksum at start)."""
    if not archive.jsa.is_file() or not archive.meta.is_file():
        return f"no class-data archive {archive.jsa.name} in {archive.folder} (`kcoord spark-archive` builds it)"
    try:
        written = json.loads(archive.meta.read_text())
        size, sha256 = int(written["size"]), str(written["sha256"])
    except (OSError, ValueError, KeyError, TypeError) as e:
        return f"{archive.meta} is unreadable ({e})"
    actual = archive.jsa.stat().st_size
    if actual != size:
        return f"{archive.jsa} is damaged: {actual} bytes, written with {size}"
    if thorough and _sha256(archive.jsa) != sha256:
        return f"{archive.jsa} is damaged: its digest is not the one it was written with"
    return None


def _sha256(path: Path) -> str:
    digest = hashlib.sha256()
    with open(path, "rb") as f:
        while chunk := f.read(1 << 20):
            digest.update(chunk)
    return digest.hexdigest()


def fits(driver_memory: str | None) -> bool:
    """Whether a driver with this heap (`spark.driver.memory`: 8g, 40960m...) keeps compressed object pointers, as
    the archive's JVM did."""
    if not driver_memory:
        return True
    units = {"k": 1 / 1024**2, "m": 1 / 1024, "g": 1, "t": 1024}
    text = driver_memory.strip().lower().removesuffix("b")
    try:
        gb = float(text[:-1]) * units[text[-1]] if text[-1] in units else float(text) / 1024**3
    except ValueError:
        return False
    return gb <= COMPRESSED_OOPS_MAX_GB


def driver_options(archive: Archive, log: Path) -> str:
    """The driver JVM's options that map `archive`: its checksum verified first (a damaged one is refused, not
    mapped), the JVM's CDS messages written to `log` instead of stdout (the CLI's report goes there; read them with
    `refused`), and the VM's own output (a JVM that cannot start with an archive says why on stdout, "Error occurred
    during initialization of VM") on stderr."""
    return " ".join(shlex.quote(o) for o in (
        f"-XX:SharedArchiveFile={archive.jsa}", "-XX:+VerifySharedSpaces", "-Xlog:cds*=off",
        f"-Xlog:cds=info:file={log}", "-XX:+DisplayVMOutputToStderr"))


def refused(log: Path) -> str | None:
    """What the JVM said when it did not map the archive, from the CDS messages `driver_options` sent to `log`
    (None: it mapped it, or wrote nothing there — a session that was already running)."""
    try:
        lines = log.read_text(errors="replace").splitlines()
    except OSError:
        return None
    reasons = [line.rpartition("] ")[2] for line in lines
               if "UseSharedSpaces:" in line or "[error]" in line or "[warning]" in line]
    if reasons:
        return "; ".join(r.removeprefix("UseSharedSpaces: ").strip() for r in reasons)
    if lines and not any("Mapped dynamic region" in line for line in lines):
        return "the JVM did not map it"
    return None


class CannotBuild(Exception):
    """The archive could not be built (the message says why, in one line); checks start Spark without it."""


def build(folder: Path) -> tuple[Archive, bool]:
    """The archive of this JDK and these jars in `folder`, dumped now unless a whole one is there already (then
    False); archives of other keys in `folder` are removed once the new one is in place. The dumping run is a child
    process (`dump`) whose output goes to `<key>.log`; it writes to a temporary name, renamed when whole."""
    archive = locate(folder)
    if archive is None:
        raise CannotBuild("no Java found (JAVA_HOME, or java on PATH)")
    if unusable(archive, thorough=True) is None:
        return archive, False
    folder.mkdir(parents=True, exist_ok=True)
    partial = folder / f"{archive.key}.jsa.partial-{os.getpid()}"
    code = f"from kcoord.conformance.traces.sparkcds import dump; dump({str(partial)!r})"
    try:
        with open(archive.log, "w", encoding="utf-8") as log:
            done = subprocess.run([sys.executable, "-c", code], stdin=subprocess.DEVNULL, stdout=log,
                                  stderr=subprocess.STDOUT, timeout=DUMP_TIMEOUT_S, check=False)
        if done.returncode != 0 or not partial.is_file():
            raise CannotBuild(f"the dumping run failed (exit status {done.returncode}): see {archive.log}")
        size = partial.stat().st_size
        archive.meta.unlink(missing_ok=True)
        os.replace(partial, archive.jsa)
        _write_atomically(archive.meta, json.dumps({"size": size, "sha256": _sha256(archive.jsa)}) + "\n")
    except subprocess.TimeoutExpired:
        raise CannotBuild(f"the dumping run took over {DUMP_TIMEOUT_S} s: see {archive.log}") from None
    except OSError as e:
        raise CannotBuild(f"cannot write the archive in {folder}: {e}") from None
    finally:
        partial.unlink(missing_ok=True)
    for other in folder.iterdir():
        if not other.name.startswith(archive.key) and other.suffix in (".jsa", ".json", ".log"):
            other.unlink(missing_ok=True)
    return archive, True


def _write_atomically(path: Path, text: str) -> None:
    with tempfile.NamedTemporaryFile("w", dir=path.parent, prefix=path.name, delete=False) as f:
        f.write(text)
        f.flush()
        os.fsync(f.fileno())
    os.chmod(f.name, 0o644)
    os.replace(f.name, path)


#: the dumping run's traces: every bundled machine, a few keys, one mutation so that violations are planned too
DUMP_KEYS, DUMP_ROWS = 5, 300


def dump(target: str) -> None:
    """(The child process of `build`.) A local session whose JVM writes the classes it loaded to `target` when it
    exits: it checks a small generated trace of every bundled machine, with violations, twice — with Spark's
    interpreted expressions (a small input's) and with generated code (a large one's) — then the JVM is stopped and
    waited for (the dump takes a few seconds after the session stops)."""
    import random
    from unittest import mock

    from pyspark import SparkContext

    from kcoord.conformance.traces import job, session
    from kcoord.conformance.traces.checks import Spec
    from kcoord.conformance.traces.generate import Options, generate
    from kcoord.conformance.traces.mutations import MUTATIONS
    from kcoord.conformance.traces.writers import write_parquet
    from kcoord.model.loader import bundled_machines

    machines = dict(bundled_machines())
    traces, _ = generate(machines, 1, Options(keys=DUMP_KEYS, rows=DUMP_ROWS))
    rng = random.Random(1)
    traces = {m: MUTATIONS["corrupt_variable"](rows, Spec.of(machines[m]), rng) for m, rows in traces.items()}
    with tempfile.TemporaryDirectory(prefix="kcoord-spark-cds-") as work:
        write_parquet(traces, machines, os.path.join(work, "traces"))
        options = f"-XX:ArchiveClassesAtExit={shlex.quote(target)} -Xlog:cds*=off -Xlog:cds=warning:stderr"
        spark = session.local_session("local[*]", rows=session.SMALL_INPUT_ROWS, archive_folder=None,
                                      extra_java_options=options)
        config = job.Config([os.path.join(work, "traces")], os.path.join(work, "out"), engine="spark")
        for interpreted_rows in (session.INTERPRETED_ROWS, -1):
            with mock.patch.object(session, "INTERPRETED_ROWS", interpreted_rows):
                outcome = job.run(config, machines, spark=spark)
            print(f"checked {sum(outcome.summary.rows_read.values())} rows: "
                  f"{outcome.summary.violations_total} violations", flush=True)
        gateway = SparkContext._gateway
        spark.stop()
        assert gateway is not None and gateway.proc is not None, "pyspark started no JVM of its own"
        gateway.proc.stdin.close()  # (the JVM exits when its stdin closes, and writes the archive then)
        gateway.proc.wait(timeout=DUMP_TIMEOUT_S)
