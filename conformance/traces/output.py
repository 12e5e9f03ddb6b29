"""What a trace check writes and prints: the violations table, the summary per check, and reports (text, JSON,
JUnit), the same for both engines.

Owns: the violations table's columns (`VIOLATION_FIELDS`, written as Parquet under `<out>/violations/`), `Summary`,
and the renderers. Witness text comes from `witness` (the one printer); this module only lays reports out.
Must not import: pyspark, kcoord.cli.
"""

from __future__ import annotations

import json
import os
from collections.abc import Sequence
from dataclasses import asdict, dataclass, field
from typing import Any
from xml.sax.saxutils import escape, quoteattr

from .checks import CHECKS, Violation

VIOLATION_FIELDS = (("id", "string"), ("machine", "string"), ("key", "string"), ("check", "string"),
                    ("name", "string"), ("seq", "int64"), ("seq_from", "int64"), ("seq_to", "int64"),
                    ("location", "string"), ("message", "string"), ("witness", "string"),
                    ("witness_rows", "string"))
FORMATS = ("text", "json", "junit")
SHOWN = 50  # violations printed in full in a report; the table has all of them


@dataclass(slots=True)
class Summary:
    engine: str
    rows_read: dict[str, int] = field(default_factory=dict)
    quarantined: dict[str, int] = field(default_factory=dict)  # reason code → rows
    violations: dict[str, dict[str, int]] = field(default_factory=dict)  # machine → check → count
    not_checked: list[str] = field(default_factory=list)
    seconds: float = 0.0
    spilled: dict[str, int] = field(default_factory=dict)  # python engine: machine → buckets it was checked in

    @property
    def violations_total(self) -> int:
        return sum(n for checks in self.violations.values() for n in checks.values())

    @property
    def quarantined_total(self) -> int:
        return sum(self.quarantined.values())

    @property
    def nothing_checked(self) -> bool:
        """Rows were read but every one was quarantined (the wrong --spec, or a broken writer): not a clean run."""
        return not sum(self.rows_read.values()) and self.quarantined_total > 0

    def as_dict(self) -> dict[str, Any]:
        out = asdict(self)
        out["violations_total"] = self.violations_total
        out["quarantined_total"] = self.quarantined_total
        return out


def count(violations: Sequence[Violation]) -> dict[str, dict[str, int]]:
    out: dict[str, dict[str, int]] = {}
    for v in violations:
        out.setdefault(v.machine, {}).setdefault(v.check, 0)
        out[v.machine][v.check] += 1
    return {m: dict(sorted(c.items(), key=lambda kv: CHECKS.index(kv[0]))) for m, c in sorted(out.items())}


def record(v: Violation) -> dict[str, Any]:
    return {"id": v.id, "machine": v.machine, "key": v.key, "check": v.check, "name": v.name, "seq": v.seq,
            "seq_from": v.seq_from, "seq_to": v.seq_to, "location": v.location, "message": v.message,
            "witness": v.witness, "witness_rows": v.witness_rows}


class UnreadableViolations(ValueError):
    """A violations file or table that cannot be read back (with where and why)."""


_REQUIRED = ("machine", "key", "check", "name", "seq", "seq_from", "seq_to", "location", "message")


def from_record(r: dict[str, Any]) -> Violation:
    return Violation(r["machine"], r["key"], r["check"], r["name"], int(r["seq"]), int(r["seq_from"]),
                     int(r["seq_to"]), r["location"], r["message"], r.get("witness") or "", r.get("witness_rows") or "")


def _checked_record(r: object, n: int) -> Violation:
    """`from_record` of the `n`th item of a file a user hands in, with what is wrong with it if anything is."""
    if not isinstance(r, dict):
        raise UnreadableViolations(f"item {n} is a {type(r).__name__}: a violation is a JSON object")
    for name in _REQUIRED:
        if r.get(name) is None:
            raise UnreadableViolations(f"violation {n} lacks {name!r}")
    for name in ("seq", "seq_from", "seq_to"):
        if isinstance(r[name], bool) or not isinstance(r[name], int):
            raise UnreadableViolations(f"violation {n}'s {name!r} is not an integer: {r[name]!r}")
    return from_record(r)


def write_violations(violations: Sequence[Violation], out_dir: str) -> str:
    """The violations table as `<out>/violations/part-00000.parquet` (the Spark engine writes part files)."""
    import pyarrow as pa
    import pyarrow.parquet as pq

    types = {"string": pa.string(), "int64": pa.int64()}
    schema = pa.schema([pa.field(n, types[t]) for n, t in VIOLATION_FIELDS])
    folder = os.path.join(out_dir, "violations")
    os.makedirs(folder, exist_ok=True)
    path = os.path.join(folder, "part-00000.parquet")
    pq.write_table(pa.Table.from_pylist([record(v) for v in violations], schema=schema), path)
    return folder


def read_violations(path: str) -> list[Violation]:
    """A violations table (folder or file, Parquet) or a JSON file of one violation, a list of them, or a JSON
    report (`{"violations": [...]}`). Raises `UnreadableViolations` saying what is wrong with a bad one."""
    if path.endswith(".json"):
        try:
            with open(path, encoding="utf-8") as f:
                data = json.load(f)
        except json.JSONDecodeError as e:
            raise UnreadableViolations(f"{path} is not JSON (line {e.lineno}, column {e.colno}: {e.msg})") from None
        except (OSError, UnicodeDecodeError) as e:
            raise UnreadableViolations(f"cannot read {path}: {e}") from None
        items = data.get("violations", [data]) if isinstance(data, dict) else data
        if not isinstance(items, list):
            raise UnreadableViolations(f"{path}: a violation is a JSON object (or a list of them)")
        try:
            return [_checked_record(r, n) for n, r in enumerate(items, 1)]
        except UnreadableViolations as e:
            raise UnreadableViolations(f"{path}: {e}") from None
    import pyarrow as pa
    import pyarrow.parquet as pq

    try:
        table = pq.read_table(path)
    except (OSError, pa.ArrowException) as e:
        raise UnreadableViolations(f"cannot read the violations table {path}: {e}") from None
    return [from_record(r) for r in table.to_pylist()]


def write_summary(summary: Summary, out_dir: str) -> None:
    os.makedirs(out_dir, exist_ok=True)
    with open(os.path.join(out_dir, "summary.json"), "w", encoding="utf-8") as f:
        json.dump(summary.as_dict(), f, indent=2, sort_keys=True)
        f.write("\n")


# ---------------------------------------------------------------- reports


def render(fmt: str, summary: Summary, shown: Sequence[Violation]) -> str:
    return {"text": render_text, "json": render_json, "junit": render_junit}[fmt](summary, shown)


def render_text(summary: Summary, shown: Sequence[Violation]) -> str:
    lines = []
    for v in shown:
        lines.append(f"{v.location}: {v.check}{' ' + v.name if v.name else ''}: {v.machine} key {v.key} seq "
                     f"{v.seq}: {v.message}  [id {v.id}]")
        if v.witness:
            lines += ["  " + line for line in v.witness.splitlines()]
        lines.append("")
    more = summary.violations_total - len(shown)
    if more > 0:
        lines.append(f"... and {more} more violations (see the violations table)")
    lines.append(_summary_text(summary))
    return "\n".join(lines)


def _summary_text(s: Summary) -> str:
    rows = sum(s.rows_read.values())
    out = [f"checked {rows} rows of {len(s.rows_read)} machines ({s.engine}, {s.seconds:.1f} s): "
           f"{s.violations_total} violations, {s.quarantined_total} malformed rows quarantined"]
    for machine, checks in s.violations.items():
        out += [f"  {machine:<22} {check:<22} {n}" for check, n in checks.items()]
    out += [f"  quarantined {code}: {n}" for code, n in sorted(s.quarantined.items())]
    if s.nothing_checked:
        hint = " (the spec has no machine of that name: is --spec right?)" if "unknown_machine" in s.quarantined \
            else ""
        out.append(f"  nothing was checked: all {s.quarantined_total} rows were quarantined{hint}")
    out += [f"  not checked: {what}" for what in s.not_checked]
    out += [f"  checked from disk: {machine}, {n} buckets by key (more rows than --max-rows-in-memory)"
            for machine, n in sorted(s.spilled.items())]
    return "\n".join(out)


def render_json(summary: Summary, shown: Sequence[Violation]) -> str:
    return json.dumps({"summary": summary.as_dict(), "violations": [record(v) for v in shown]}, indent=2,
                      sort_keys=True)


def render_junit(summary: Summary, shown: Sequence[Violation]) -> str:
    """One test suite per machine, one test case per check; each violation shown is a failure."""
    by_case: dict[tuple[str, str], list[Violation]] = {}
    for v in shown:
        by_case.setdefault((v.machine, v.check), []).append(v)
    lines = ['<?xml version="1.0" encoding="UTF-8"?>',
             f'<testsuites name="kcoord check-traces" failures="{summary.violations_total}">']
    for machine in sorted(summary.rows_read):
        counts = summary.violations.get(machine, {})
        lines.append(f'  <testsuite name={quoteattr(machine)} tests="{len(CHECKS)}" '
                     f'failures="{sum(1 for c in CHECKS if counts.get(c))}">')
        for check in CHECKS:
            lines.append(f'    <testcase classname={quoteattr(machine)} name={quoteattr(check)}>')
            if counts.get(check):
                body = "\n".join(f"{v.location}: key {v.key} seq {v.seq}: {v.message}\n{v.witness}"
                                 for v in by_case.get((machine, check), []))
                lines.append(f'      <failure message="{counts[check]} violations">{escape(body)}</failure>')
            lines.append("    </testcase>")
        lines.append("  </testsuite>")
    lines.append("</testsuites>")
    return "\n".join(lines)
