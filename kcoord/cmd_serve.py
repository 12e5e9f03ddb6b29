"""`kcoord serve`: run the coordinators as a Kafka-protocol endpoint that real clients use.

Reads the command line, configures logging (stderr, or `--log-file`), builds `ServeOptions` and runs
`KcoordServer` until SIGTERM or SIGINT, then stops cleanly (listeners closed, logs and traces flushed, exit 0).
Prints one line per listening node (`node N listening on HOST:PORT`) and the metrics address, so scripts and tests
can wait for them.
"""

from __future__ import annotations

import asyncio
import dataclasses
import errno
import logging
import signal
import sys
import time
from pathlib import Path
from typing import TYPE_CHECKING, Annotated, Any

import typer
from rich.console import Console
from rich.text import Text

from .cli import app, usage_error

if TYPE_CHECKING:  # the server imports the whole implementation: imported when `serve` runs, not on every command
    from kcoord.impl.cluster import ClusterConfig
    from kcoord.impl.server.connection import ListenerSettings
    from kcoord.impl.server.serve import ServeOptions

_DURABILITY_MODES = ("fsync", "os", "group")  # group: the old name of fsync, kept for old command lines


def _settings(values: list[str]) -> tuple[ClusterConfig, ListenerSettings]:
    """`groups.initial_rebalance_delay_ms=100`-style overrides of the cluster configuration's sections and of the
    listeners' (`server.connections_max_idle_ms`, `server.queued_max_request_bytes`)."""
    from kcoord.impl.cluster import ClusterConfig
    from kcoord.impl.server.connection import ListenerSettings

    config = ClusterConfig()
    defaults: dict[str, Any] = {"txn": config.txn, "groups": config.groups, "partitions": config.partitions,
                                "server": ListenerSettings()}
    sections: dict[str, dict[str, Any]] = {}
    for item in values:
        name, sep, raw = item.partition("=")
        section, dot, key = name.partition(".")
        if not sep or not dot or section not in defaults:
            usage_error(f"--set {item!r}: expected SECTION.KEY=VALUE with SECTION one of {', '.join(defaults)}")
        current = defaults[section]
        if key not in {f.name for f in dataclasses.fields(current)}:
            usage_error(f"--set {item!r}: {section} has no setting {key!r}")
        old = getattr(current, key)
        try:
            value: Any = raw.lower() in ("1", "true", "yes") if isinstance(old, bool) else type(old)(raw)
        except ValueError:
            usage_error(f"--set {item!r}: {section}.{key} takes a value like {old!r}")
        sections.setdefault(section, {})[key] = value
    try:
        listener = dataclasses.replace(defaults["server"], **sections.pop("server", {}))
        return dataclasses.replace(config, **{s: dataclasses.replace(getattr(config, s), **kv)
                                              for s, kv in sections.items()}), listener
    except ValueError as e:
        usage_error(str(e))


def _configure_logging(level: str, log_file: Path | None) -> None:
    handler: logging.Handler = logging.FileHandler(log_file) if log_file else logging.StreamHandler(sys.stderr)
    handler.setFormatter(logging.Formatter("%(asctime)s %(levelname)s %(name)s: %(message)s"))
    logging.basicConfig(level=getattr(logging, level.upper()), handlers=[handler], force=True)


class _CannotStart(Exception):
    """`kcoord serve` could not start (a port in use, a data folder in use or that it may not write, a damaged
    partition.metadata or producer-id-blocks file): said in one line, exit 2. (A partition whose log or epoch file
    is damaged does not stop the start: that partition is not started, and said so.)"""


async def _serve(options: ServeOptions) -> None:
    stop = asyncio.Event()
    loop = asyncio.get_running_loop()
    for signum in (signal.SIGTERM, signal.SIGINT):
        loop.add_signal_handler(signum, stop.set)
    from kcoord.impl.runtime.process import tune_gc
    from kcoord.impl.server.serve import DataDirInUse, KcoordServer
    from kcoord.impl.storage._files import DamagedFileError

    server = KcoordServer(options)
    try:
        await server.start()
    except OSError as e:  # (start closed whatever it had opened)
        hint = " (choose another --port or --metrics-port; --port 0 picks free ports)" \
            if e.errno == errno.EADDRINUSE else ""
        raise _CannotStart(f"cannot start serving: {e}{hint}") from None
    except (DataDirInUse, DamagedFileError) as e:  # (a damaged topic id or next producer id: not guessed)
        raise _CannotStart(f"cannot start serving: {e}") from None
    tune_gc()  # a long-running process: start-up objects frozen, fewer young collections (impl/runtime/process.py)
    try:
        for endpoint in server.endpoints:
            print(f"kcoord serve: node {endpoint.node_id} listening on {endpoint.host}:{endpoint.port}", flush=True)
        if server.metrics_address is not None:
            host, port = server.metrics_address
            print(f"kcoord serve: metrics on http://{host}:{port}/metrics", flush=True)
        print(f"kcoord serve: data in {options.data_dir}; stop with SIGTERM or Ctrl-C", flush=True)
        await stop.wait()
    finally:
        await server.stop()
    print("kcoord serve: stopped", flush=True)


@app.command("serve")
def serve(
    data_dir: Annotated[Path, typer.Option(help="Where logs live; a restart reloads everything from here.")]
    = Path("kcoord-data"),
    host: Annotated[str, typer.Option(help="Address to bind (loopback by default).")] = "127.0.0.1",
    port: Annotated[int, typer.Option(help="Port of node 0; node i listens on port + i (0: free ports).")] = 9092,
    nodes: Annotated[int, typer.Option(help="Nodes (brokers) in the cluster.")] = 1,
    advertised_host: Annotated[str | None, typer.Option(help="Host named in Metadata (default: --host).")] = None,
    trace_out: Annotated[Path | None, typer.Option(help="Record execution traces under this folder.")] = None,
    trace_format: Annotated[str, typer.Option(help="jsonl or parquet.")] = "jsonl",
    metrics_port: Annotated[int | None, typer.Option(help="Serve Prometheus metrics on this port.")] = None,
    max_frame_bytes: Annotated[int, typer.Option(help="Largest request accepted (socket.request.max.bytes).")]
    = 104_857_600,
    durability: Annotated[str, typer.Option(help="fsync (default: acknowledged = on disk; writes that arrive while an "
                                            "fsync runs share the next) or os (acknowledged = in the page cache, "
                                            "Kafka's default: kept on a process crash, lost on power failure). "
                                            "group: an alias of fsync.")] = "fsync",
    fsync_method: Annotated[str, typer.Option(help="How --durability fsync puts a round of writes on disk; every "
                                              "method promises the same (acknowledged = on disk, each log's "
                                              "write-back error reported to that log). syncfs: one syncfs(2) of the "
                                              "data directory's file system per round (less CPU than an fsync per "
                                              "log; it also writes back every other dirty file of that file system, "
                                              "so on a disk busy with other writers a round can take longer). "
                                              "fsync: each log of the round fsynced, side by side. auto (default): "
                                              "syncfs where it reports write-back errors (Linux 5.8 and later), "
                                              "else fsync.")] = "auto",
    group_commit_ms: Annotated[int | None, typer.Option(help="Ignored (kept for old command lines): fsync mode has "
                                                        "no linger.", min=0, hidden=True)] = None,
    set_: Annotated[list[str] | None, typer.Option("--set", help="Override a setting: SECTION.KEY=VALUE (SECTION: "
                                                   "txn, groups, partitions or server), e.g. "
                                                   "groups.initial_rebalance_delay_ms=0 or "
                                                   "server.connections_max_idle_ms=60000.")] = None,
    check_records: Annotated[bool, typer.Option(help="Decode every coordinator record written and compare it with "
                                                "the state it describes before installing that state (a self-check "
                                                "the tests run with; ~4 % of a transaction's CPU).")] = False,
    log_level: Annotated[str, typer.Option(help="debug, info, warning or error.")] = "info",
    log_file: Annotated[Path | None, typer.Option(help="Log here instead of stderr.")] = None,
) -> None:
    """Serve Kafka's group and transaction coordinator APIs (and the data-partition APIs clients need) to real
    Kafka clients, from an in-process cluster of --nodes nodes.

    \b
    Example: kcoord serve --data-dir /tmp/kc --nodes 3 --metrics-port 9404 --trace-out /tmp/kc-traces
    """
    if durability not in _DURABILITY_MODES:
        usage_error(f"--durability {durability!r}: expected one of {', '.join(_DURABILITY_MODES)}")
    if trace_format not in ("jsonl", "parquet"):
        usage_error(f"--trace-format {trace_format!r}: expected jsonl or parquet")
    if log_level.upper() not in ("DEBUG", "INFO", "WARNING", "ERROR"):
        usage_error(f"--log-level {log_level!r}: expected debug, info, warning or error")
    from kcoord.impl.server.serve import ServeOptions, run_event_loop
    from kcoord.impl.storage.log import Durability

    config, listener = _settings(set_ or [])
    config = dataclasses.replace(config, durability=Durability.named(durability), check_records=check_records)
    _configure_logging(log_level, log_file)
    if group_commit_ms is not None:
        logging.getLogger("kcoord").warning("--group-commit-ms is ignored: --durability fsync shares fsyncs between "
                                            "the writes that arrive while one runs, and never waits for company")
    try:
        options = ServeOptions(data_dir=data_dir, host=host, port=port, nodes=nodes, advertised_host=advertised_host,
                               trace_out=trace_out, trace_format=trace_format,  # type: ignore[arg-type]
                               metrics_port=metrics_port, max_frame_bytes=max_frame_bytes, cluster=config,
                               listener=listener, fsync_method=fsync_method)  # type: ignore[arg-type]
    except ValueError as e:
        usage_error(str(e))
    try:
        run_event_loop(_serve(options))
    except _CannotStart as e:
        usage_error(str(e))
    finally:
        logging.shutdown()


def demo_stage(out: Console, workdir: Path) -> bool:
    """`make demo`'s server stage: serve from `workdir`, run a kafka-python group and a transaction against it, stop,
    and say where the traces are (`workdir/traces`, for the trace checker that runs next)."""
    from kcoord.impl.cluster import ClusterConfig
    from kcoord.impl.group.config import GroupConfig
    from kcoord.impl.server.embedded import ServerThread
    from kcoord.impl.server.serve import ServeOptions

    data_dir, trace_dir = workdir / "serve-data", workdir / "traces"
    config = ClusterConfig(groups=GroupConfig(initial_rebalance_delay_ms=0))
    options = ServeOptions(data_dir=data_dir, port=0, trace_out=trace_dir, cluster=config)
    started = time.monotonic()
    try:
        with ServerThread(options) as server:
            out.print(f"  kcoord serve listening on {server.bootstrap} (data in {data_dir})")
            summary = _demo_workload(server.bootstrap)
    except Exception as e:  # a failed stage is reported, not raised: the demo goes on to say what passed
        out.print(Text.assemble("  ", ("server stage failed", "red"), f": {type(e).__name__}: {e}"))
        return False
    for line in summary:
        out.print(f"  {line}")
    files = sorted(str(p.relative_to(trace_dir)) for p in trace_dir.rglob("*.jsonl"))
    out.print(f"  stopped after {time.monotonic() - started:.1f}s; traces in {trace_dir}: {', '.join(files)}")
    return bool(files)


def _demo_workload(bootstrap: str) -> list[str]:
    import kafka
    from kafka.structs import OffsetAndMetadata, TopicPartition

    producer = kafka.KafkaProducer(bootstrap_servers=bootstrap, acks="all", enable_idempotence=True)
    for i in range(6):
        producer.send("demo-in", b"in-%d" % i, partition=0)
    producer.flush()
    producer.close()
    consumer = kafka.KafkaConsumer("demo-in", bootstrap_servers=bootstrap, group_id="demo-group",
                                   enable_auto_commit=False, auto_offset_reset="earliest",
                                   isolation_level="read_committed", session_timeout_ms=6000)
    # metadata after subscribing, before the first poll: avoids kafka-python 3.0.12 dropping a rejoin's assignment
    # (conformance/wire/members.py `_await_topic_metadata` says how)
    if not consumer.partitions_for_topic("demo-in"):
        raise RuntimeError("no metadata for topic demo-in after producing to it")
    records: list[Any] = []
    deadline = time.monotonic() + 30
    while len(records) < 6 and time.monotonic() < deadline:
        records += [r for rs in consumer.poll(200).values() for r in rs]
    if len(records) < 6:
        raise RuntimeError(f"the group read {len(records)} of 6 records in 30 s")
    txn = kafka.KafkaProducer(bootstrap_servers=bootstrap, transactional_id="demo-txn")
    txn.init_transactions()
    txn.begin_transaction()
    for r in records:
        txn.send("demo-out", r.value.replace(b"in", b"out"), partition=0)
    txn.send_offsets_to_transaction({TopicPartition("demo-in", 0): OffsetAndMetadata(6, "", -1)},
                                    consumer.group_metadata())
    txn.commit_transaction()
    txn.begin_transaction()
    txn.send("demo-out", b"aborted", partition=0)
    txn.abort_transaction()
    txn.close()
    committed = consumer.committed(TopicPartition("demo-in", 0))
    consumer.close()
    return [f"group demo-group consumed {len(records)} records; committed offset {committed} through a transaction",
            "transaction demo-txn: 1 commit (6 records + offsets), 1 abort"]
