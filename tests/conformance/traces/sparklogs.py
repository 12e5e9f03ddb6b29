"""Spark's own reports that generated code failed or was given up — what the checks must never cause.

`CODEGEN_FALLBACKS` are the messages Spark logs when it cannot use the code it generated: Janino failing to compile
it (a method past the JVM's 64 KB), a whole-stage method past `spark.sql.codegen.hugeMethodLimit`, or an expression
projection falling back to the interpreter. `watch` captures them in the running JVM (a log4j appender on the loggers
that write them, at INFO, whatever the session's log level); `fallbacks` finds them in log text (a job's stderr, an
executor's log file); `LOG4J2` is a log4j configuration that writes them to stderr, for JVMs started with it.
"""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager
from typing import Any

CODEGEN_FALLBACKS = ("Failed to compile", "Code grows beyond 64 KB", "Whole-stage codegen disabled",
                     "Found too long generated codes", "falling back to interpreter mode")
LOGGERS = ("org.apache.spark.sql.execution.WholeStageCodegenExec",
           "org.apache.spark.sql.catalyst.expressions.codegen.CodeGenerator",
           "org.apache.spark.sql.catalyst.expressions.CodeGeneratorWithInterpretedFallback")

LOG4J2 = "\n".join([
    "rootLogger.level = warn", "rootLogger.appenderRef.stderr.ref = console",
    "appender.console.type = Console", "appender.console.name = console", "appender.console.target = SYSTEM_ERR",
    "appender.console.layout.type = PatternLayout", "appender.console.layout.pattern = %p %c: %m%n",
    *(line for i, name in enumerate(LOGGERS) for line in (f"logger.codegen{i}.name = {name}",
                                                          f"logger.codegen{i}.level = info")), ""])


def fallbacks(text: str) -> list[str]:
    """The lines of `text` that report a codegen failure or fallback."""
    return [line for line in text.splitlines() if any(m in line for m in CODEGEN_FALLBACKS)]


@contextmanager
def watch(spark: Any, level: str = "INFO") -> Iterator[list[str]]:
    """While inside, every message of the codegen loggers (`level` and up: at DEBUG, the source of every class
    compiled) in `spark`'s JVM; the list yielded is filled when the block ends."""
    jvm = spark.sparkContext._jvm
    log4j = jvm.org.apache.logging.log4j
    ctx = log4j.LogManager.getContext(False)
    config = ctx.getConfiguration()
    writer = jvm.java.io.StringWriter()
    layout = log4j.core.layout.PatternLayout.newBuilder().withPattern("%p %c: %m%n").build()
    appender = log4j.core.appender.WriterAppender.newBuilder().setName("kcoord-codegen-watch") \
        .setTarget(writer).setLayout(layout).build()
    appender.start()
    config.addAppender(appender)
    before = {name: config.getLoggerConfig(name).getLevel() for name in LOGGERS}
    for name in LOGGERS:
        log4j.core.config.Configurator.setLevel(name, getattr(log4j.Level, level))
        config.getLoggerConfig(name).addAppender(appender, getattr(log4j.Level, level), None)
    ctx.updateLoggers()
    found: list[str] = []
    try:
        yield found
    finally:
        for name in LOGGERS:
            config.getLoggerConfig(name).removeAppender("kcoord-codegen-watch")
            log4j.core.config.Configurator.setLevel(name, before[name])
        ctx.updateLoggers()
        appender.stop()
        found += [line for line in str(writer.toString()).splitlines() if line.strip()]


def compiled(logged: list[str]) -> list[str]:
    """The sources Janino compiled, in order, from a `watch` at DEBUG (CodeGenerator logs each one it compiles, not
    one its cache holds)."""
    out, current = [], None
    for line in logged:
        if line.startswith(("DEBUG ", "INFO ", "WARN ", "ERROR ")):
            if current is not None:
                out.append("\n".join(current))
            current = [] if line.startswith("DEBUG org.apache.spark.sql.catalyst.expressions.codegen.CodeGenerator:") \
                else None
        elif current is not None:
            current.append(line)
    if current is not None:
        out.append("\n".join(current))
    return [source for source in out if "/* 001 */" in source]
