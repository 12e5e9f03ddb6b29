"""Rendering verification results: text (one line per obligation), JSON, SARIF 2.1.0 and JUnit XML.

Owns: the four report formats and the exit code rule (1 on a failure, else 3 on an unknown, else 0). Every
counterexample is printed through `kcoord.model.printer`, the one printer for executions.
Must not import: lark, z3, pyspark.
"""

from __future__ import annotations

import json
from collections.abc import Sequence
from typing import Any
from xml.sax.saxutils import escape, quoteattr

from .printer import render_execution
from .verify_result import Result

MARK = {"holds": "✓", "fails": "✗", "unknown": "?", "trace-only": "~"}


def exit_code(results: Sequence[Result]) -> int:
    if any(r.failed for r in results):
        return 1
    if any(r.status == "unknown" for r in results):
        return 3
    return 0


def render_text(results: Sequence[Result], *, verbose: bool = False, timings: bool = True,
                warnings: bool = True) -> str:
    """Failures in full (with counterexamples); holds as one line each when `verbose`, else counted per machine.
    Without `timings` the output is deterministic (golden files); without `warnings`, warnings are only counted."""
    out: list[str] = []
    for machine in _machines(results):
        mine = [r for r in results if r.machine == machine]
        out.append(f"{machine}")
        for r in mine:
            if r.status == "holds" and not verbose:
                continue
            if r.status in ("fails", "trace-only") and r.severity == "warning" and not warnings:
                continue
            if r.status == "trace-only" and not warnings:
                continue
            severity = " (warning)" if r.status == "fails" and r.severity == "warning" else ""
            took = f"  ({r.elapsed_ms:.0f} ms)" if timings else ""
            out.append(f"  {MARK[r.status]} {r.title}{took}{severity}")
            if r.status != "holds":
                out.append(f"      {r.span}: {r.detail}" if r.detail else f"      {r.span}")
                out += [f"      related: {s}" for s in r.related]
            if r.counterexample is not None:
                out.append(render_execution(r.counterexample, indent="      "))
        out.append("  " + _summary(mine, timings=timings))
    out.append(_summary(results, total=True, timings=timings))
    return "\n".join(out)


def _machines(results: Sequence[Result]) -> list[str]:
    seen: list[str] = []
    for r in results:
        if r.machine not in seen:
            seen.append(r.machine)
    return seen


def _summary(results: Sequence[Result], total: bool = False, timings: bool = True) -> str:
    counts = {s: sum(1 for r in results if r.status == s) for s in MARK}
    warnings = sum(1 for r in results if r.status == "fails" and r.severity == "warning")
    ms = sum(r.elapsed_ms for r in results)
    head = "total: " if total else ""
    return (f"{head}{counts['holds']} hold, {counts['fails'] - warnings} fail, {warnings} warning(s), "
            f"{counts['unknown']} unknown, {counts['trace-only']} checked on traces only"
            + (f" ({ms:.0f} ms solving)" if timings else ""))


def _json_result(r: Result) -> dict[str, Any]:
    return {
        "machine": r.machine, "kind": r.kind, "title": r.title, "status": r.status, "severity": r.severity,
        "location": {"path": r.span.path, "line": r.span.line, "column": r.span.col},
        "related": [{"path": s.path, "line": s.line, "column": s.col} for s in r.related],
        "elapsed_ms": round(r.elapsed_ms, 3), "detail": r.detail,
        "counterexample": None if r.counterexample is None else render_execution(r.counterexample, indent=""),
    }


def render_json(results: Sequence[Result]) -> str:
    return json.dumps({"exit_code": exit_code(results), "results": [_json_result(r) for r in results]}, indent=2)


def render_sarif(results: Sequence[Result]) -> str:
    """SARIF 2.1.0: one rule per obligation kind, one result per failed, unknown or warning obligation."""
    kinds = sorted({r.kind for r in results})
    sarif_results = []
    for r in results:
        if r.status == "holds":
            continue
        level = {"fails": "error" if r.severity == "error" else "warning", "unknown": "warning",
                 "trace-only": "note"}[r.status]
        text = f"{r.title}: {r.detail}" if r.detail else r.title
        if r.counterexample is not None:
            text += "\n" + render_execution(r.counterexample, indent="  ")
        sarif_results.append({
            "ruleId": f"kcoord/{r.kind}", "level": level, "message": {"text": text},
            "locations": [_sarif_location(r.span.path, r.span.line, r.span.col)],
            "relatedLocations": [_sarif_location(s.path, s.line, s.col) for s in r.related],
        })
    doc = {
        "$schema": "https://json.schemastore.org/sarif-2.1.0.json",
        "version": "2.1.0",
        "runs": [{
            "tool": {"driver": {"name": "kcoord verify", "informationUri": "https://github.com/kcoord/kcoord",
                                "rules": [{"id": f"kcoord/{k}", "shortDescription": {"text": k}} for k in kinds]}},
            "results": sarif_results,
        }],
    }
    return json.dumps(doc, indent=2)


def _sarif_location(path: str, line: int, col: int) -> dict[str, Any]:
    return {"physicalLocation": {"artifactLocation": {"uri": path},
                                 "region": {"startLine": max(line, 1), "startColumn": max(col, 1)}}}


def render_junit(results: Sequence[Result]) -> str:
    """JUnit XML: a test suite per machine, a test case per obligation (failure, skipped for trace-only)."""
    lines = ['<?xml version="1.0" encoding="UTF-8"?>', "<testsuites>"]
    for machine in _machines(results):
        mine = [r for r in results if r.machine == machine]
        failures = sum(1 for r in mine if r.failed)
        errors = sum(1 for r in mine if r.status == "unknown")
        skipped = sum(1 for r in mine if r.status == "trace-only")
        seconds = sum(r.elapsed_ms for r in mine) / 1000
        lines.append(f"  <testsuite name={quoteattr(machine)} tests=\"{len(mine)}\" failures=\"{failures}\" "
                     f"errors=\"{errors}\" skipped=\"{skipped}\" time=\"{seconds:.3f}\">")
        for r in mine:
            attrs = f"classname={quoteattr(f'{machine}.{r.kind}')} name={quoteattr(r.title)} " \
                    f"time=\"{r.elapsed_ms / 1000:.3f}\" file={quoteattr(r.span.path)} line=\"{r.span.line}\""
            body = ""
            detail = r.detail + ("\n" + render_execution(r.counterexample) if r.counterexample else "")
            if r.failed:
                body = f"<failure message={quoteattr(r.detail)}>{escape(detail)}</failure>"
            elif r.status == "fails":
                body = f"<system-out>{escape('warning: ' + detail)}</system-out>"
            elif r.status == "unknown":
                body = f"<error message={quoteattr(r.detail or 'unknown')}/>"
            elif r.status == "trace-only":
                body = f"<skipped message={quoteattr(r.detail)}/>"
            lines.append(f"    <testcase {attrs}>{body}</testcase>" if body else f"    <testcase {attrs}/>")
        lines.append("  </testsuite>")
    lines.append("</testsuites>")
    return "\n".join(lines)


RENDERERS = {"text": render_text, "json": render_json, "sarif": render_sarif, "junit": render_junit}
