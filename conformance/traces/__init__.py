"""Trace checking: recorded executions of the coordinators checked against the spec, on Spark and in pure Python.

Modules: `checks` (the check names, their meaning, the spec tables both checkers use), `readers` (files → validated
rows, malformed rows to quarantine), `logs` (coordinator log directories → rows), `pycheck` (the reference checker:
its per-key checks in `pyrowcheck`, its cross-key properties in `pycrosskey`, its rows held in `pyspill`),
`sparkcheck` (the same checks compiled to Spark SQL), `witness` (violations rendered through the one printer),
`output` (violations table, summary, reports), `job` (the Spark job, also runnable with `spark-submit`), `generate`
(random valid traces; `mutations` break them, `writers` write them), `replay` (a violation → a failing pytest file),
`session` (the SparkSession).
Must not import: kcoord.cli.
"""

# The Python checker keeps up to this many rows of one machine in memory (~1.2 KB per Transaction row); a machine
# with more is spilled to disk by key and checked a bucket at a time. Here, so that the CLI's default costs no import.
MAX_ROWS_IN_MEMORY = 2_000_000


def under_spark_submit() -> bool:
    """This Python process is the driver `spark-submit` started (it passes its JVM's gateway in the environment)."""
    import os

    return "PYSPARK_GATEWAY_PORT" in os.environ
