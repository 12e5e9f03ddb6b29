"""Spark's Python daemon for a local session's DuckDB tasks (`duckspark`): pyspark's own daemon
(`pyspark.daemon.manager`), which forks one Python worker per concurrent task, run after importing what every such
task imports — so that the imports are paid once, in the daemon, not once per worker (issue 33: a cold 1M-event
check 0.6–0.8 CPU-s lower with two workers, lower in 14 of 14 pairs: benchmarks/RESULTS.md, i33u and i33w).

Owns: `PRELOADED` (what the daemon imports before it forks) and the daemon itself (run as
`python -m kcoord.conformance.traces.sparkdaemon`: Spark's `spark.python.daemon.module`, which `session.local_session`
sets when the workers' interpreter can import this module; never on a cluster or over Spark Connect, whose workers
need not have kcoord).

Why forking after these imports is safe: pyspark's daemon imports its worker module only after the fork because some
imports start threads, and a thread's locks are not the child's. The threads these start are idle when the daemon
forks (it forks only from its accept loop) and fork-aware: pyarrow's jemalloc background thread (jemalloc takes its
locks around a fork), numpy's OpenBLAS server (likewise), and the scheduler thread of DuckDB's default database, which
the tasks never use (each opens its own connection of one thread). A module missing here (a worker's Python without
duckdb) is simply not preloaded: the task then fails to import it as it would under pyspark's own daemon, and the
caller falls back as it does there (`duckengine`).
Must not import: any other module of kcoord (the daemon's imports are what the workers get), kcoord.cli.
"""

from __future__ import annotations

import importlib

#: imported by the daemon before it forks its workers: what a `duckspark` task imports, and pyspark's worker itself
#: (imported by pyspark's daemon after each fork)
PRELOADED = ("pyspark.worker", "pyarrow", "pyarrow.ipc", "pyarrow.parquet", "duckdb", "pandas")


def preload() -> list[str]:
    """`PRELOADED`'s modules imported; those that are not installed skipped (their names returned)."""
    missing = []
    for name in PRELOADED:
        try:
            importlib.import_module(name)
        except ImportError:
            missing.append(name)
    return missing


if __name__ == "__main__":
    from pyspark import daemon

    preload()
    daemon.manager()
