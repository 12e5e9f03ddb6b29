"""The `kcoord` command line: the only place that reads argv and the environment.

Owns: the typer application, exit codes (0 ok, 1 problems found, 2 usage or spec error — a path that cannot be read
or written included, 3 solver unknown/timeout) and the shared console. Each group of commands lives in its own
`kcoord.cmd_*` module and registers itself here.
May import: everything.
"""

from __future__ import annotations

import os
import socket
import sys
from pathlib import Path
from typing import NoReturn

import typer
from rich.console import Console

EXIT_OK = 0
EXIT_PROBLEMS = 1
EXIT_USAGE = 2
EXIT_UNKNOWN = 3

app = typer.Typer(
    name="kcoord",
    help="Kafka's group and transaction coordinators, from a formal model: check specs, generate tables and "
    "diagrams, verify invariants with z3, run the coordinators, check traces on Spark.",
    no_args_is_help=True,
    add_completion=False,
    pretty_exceptions_enable=False,
    rich_markup_mode=None,
)


def _width(stream_is_tty: bool) -> int | None:
    """Off a terminal (pipes, CI logs, tests) rich would assume 80 columns and cut names; use COLUMNS or 160."""
    if stream_is_tty:
        return None
    return int(os.environ.get("COLUMNS", "160"))


def console() -> Console:
    """The console for results. Markup is off: what kcoord prints holds spec text, paths, values and error messages
    (`set[string]`, `[Empty]`, `[/x]`) that rich would take for style tags; colour is given with `rich.text.Text`."""
    return Console(highlight=False, markup=False, soft_wrap=True, width=_width(sys.stdout.isatty()))


def err_console() -> Console:
    return Console(stderr=True, highlight=False, markup=False, soft_wrap=True, width=_width(sys.stderr.isatty()))


def usage_error(message: str) -> NoReturn:
    """Say `message` as it is (paths, JSON and Java errors hold brackets rich would read as markup) and exit 2."""
    err_console().print(f"kcoord: error: {message}")
    raise typer.Exit(EXIT_USAGE)


def write_output(path: Path, text: str) -> None:
    """Write a report or file the user named (`-o reports/verify.xml`), making its folder as `--out DIR` does."""
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(text, encoding="utf-8")


def host_ports(text: str, option: str, default_port: int | None = None, scheme: str = "") -> list[tuple[str, int]]:
    """`[scheme]HOST:PORT[,HOST:PORT...]` (a missing port is `default_port`, if there is one) as (host, port) pairs;
    a usage error naming `option` otherwise."""
    out = []
    for part in text.removeprefix(scheme).split(","):
        host, sep, port = part.strip().rpartition(":")
        if (not sep or not port.isdigit()) and default_port is not None:
            host, port = part.strip(), str(default_port)
        if not host or not port.isdigit():
            shape = "HOST:PORT" if default_port is None else "HOST[:PORT]"
            usage_error(f"{option} {text!r}: expected {scheme}{shape}[,{shape}...]")
        out.append((host, int(port)))
    return out


def unreachable_servers(servers: list[tuple[str, int]], timeout_s: float = 5.0) -> str | None:
    """Why none of `servers` accepts a TCP connection, or None when one does: a fast answer before starting
    something that would otherwise wait out its own, much longer, timeouts."""
    problems = []
    for host, port in servers:
        try:
            with socket.create_connection((host, port), timeout=timeout_s):
                return None
        except OSError as e:
            problems.append(f"{host}:{port}: {e.strerror or e}")
    return "; ".join(problems)


def _register() -> None:
    """Import every `kcoord.cmd_*` module; importing one registers its commands on `app`."""
    import importlib
    import pkgutil

    package = importlib.import_module("kcoord")
    for module in sorted(m.name for m in pkgutil.iter_modules(package.__path__) if m.name.startswith("cmd_")):
        importlib.import_module(f"kcoord.{module}")


def main() -> None:
    _register()
    try:
        app()
    except OSError as e:  # a path the user named cannot be used (a file where a folder goes, no permission, disk full)
        err_console().print(f"kcoord: error: {file_problem(e)}")
        sys.exit(EXIT_USAGE)


def file_problem(e: OSError) -> str:
    """An `OSError` as one line: what the system said, and about which path."""
    if e.filename is None:
        return str(e)
    target = f" -> {e.filename2}" if e.filename2 is not None else ""
    return f"{e.strerror or type(e).__name__}: {e.filename}{target}"


if __name__ == "__main__":
    main()
