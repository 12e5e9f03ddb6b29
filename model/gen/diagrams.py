"""Generator of state diagrams: `diagrams/<machine>.dot`, `.svg` (rendered by Graphviz's `dot`) and `.mmd` (Mermaid).

Owns: how a machine is drawn. Initial states have an entry arrow and a bold border, final states a double border,
pending-only states a dashed border; edges carry the event and its guard as written; one note lists the invariants.
Rows between the same two states are merged into one edge with one line per row. Output is deterministic.
Must not import: z3, pyspark.
"""

from __future__ import annotations

import shutil
import subprocess

import graphviz

from .. import ir
from ..pretty import render
from .common import GeneratedFile, header, module_name

MAX_GUARD_CHARS = 44


class DotNotFoundError(RuntimeError):
    """Graphviz's `dot` binary is missing (`make` installs Debian's graphviz)."""


def _guard_text(row: ir.Transition) -> str:
    text = row.condition_text
    if text == "true":
        return row.event
    if len(text) > MAX_GUARD_CHARS:
        text = text[: MAX_GUARD_CHARS - 1] + "…"
    return f"{row.event} [{text}]"


def _edges(m: ir.Machine) -> dict[tuple[str, str], list[str]]:
    edges: dict[tuple[str, str], list[str]] = {}
    for t in m.transitions:
        for src in t.sources:
            label = _guard_text(t) + (" (stay)" if t.is_stay else "")
            lines = edges.setdefault((src, t.target_from(src)), [])
            if label not in lines:
                lines.append(label)
    return dict(sorted(edges.items()))


def dot_source(m: ir.Machine) -> str:
    g = graphviz.Digraph(m.name, graph_attr={"rankdir": "TB", "nodesep": "0.6", "ranksep": "0.7",
                                             "fontname": "Helvetica", "labelloc": "t",
                                             "label": f"{m.name} ({m.kind})"},
                         node_attr={"shape": "box", "style": "rounded", "fontname": "Helvetica"},
                         edge_attr={"fontname": "Helvetica", "fontsize": "10"})
    g.node("__start", label="", shape="point", width="0.15")
    for st in m.states:
        attrs = {"tooltip": st.doc or st.name}
        styles = ["rounded"]
        if st.initial:
            attrs["penwidth"] = "2"
        if st.pending:
            styles.append("dashed")
        if st.final:
            attrs["peripheries"] = "2"
        attrs["style"] = ",".join(styles)
        flags = [f for f in st.flags if f != "initial"]
        label = st.name + (f"\\n«{', '.join(flags)}»" if flags else "")
        g.node(st.name, label=label, **attrs)
    g.edge("__start", m.initial.name)
    for (src, dst), lines in _edges(m).items():
        g.edge(src, dst, label="\\l".join(lines) + "\\l")
    if m.invariants:
        text = "\\l".join(f"{inv.name}: {render(inv.expr)}" for inv in m.invariants) + "\\l"
        g.node("__invariants", label=f"invariants\\l{text}", shape="note", style="", fontsize="9")
    source: str = g.source
    return header(m, "//") + source


def mermaid_source(m: ir.Machine) -> str:
    out = [header(m, "%%").rstrip("\n"), "stateDiagram-v2", f"    [*] --> {m.initial.name}"]
    for st in m.states:
        if st.doc:
            out.append(f"    {st.name} : {st.name}")
    for (src, dst), lines in _edges(m).items():
        label = "<br/>".join(_mermaid_escape(line) for line in lines)
        out.append(f"    {src} --> {dst} : {label}")
    for st in m.states:
        if st.final:
            out.append(f"    {st.name} --> [*]")
    pending = [st.name for st in m.states if st.pending]
    if pending:
        out.append("    classDef pending stroke-dasharray: 5 5")
        out.append(f"    class {','.join(pending)} pending")
    if m.invariants:
        out.append(f"    note right of {m.initial.name}")
        out.append("        invariants:")
        out += [f"        {_mermaid_escape(inv.name + ': ' + render(inv.expr))}" for inv in m.invariants]
        out.append("    end note")
    return "\n".join(out) + "\n"


def _mermaid_escape(text: str) -> str:
    return text.replace(":", "#58;").replace(";", "#59;").replace("{", "#123;").replace("}", "#125;")


def render_dot(source: str, fmt: str) -> bytes:
    """Run Graphviz's `dot` on `source` (the real binary; `svg` or `png`)."""
    if shutil.which("dot") is None:
        raise DotNotFoundError("Graphviz's `dot` is not installed; run `make setup` (installs Debian's graphviz)")
    done = subprocess.run(["dot", f"-T{fmt}"], input=source.encode(), capture_output=True, check=False)
    if done.returncode != 0:
        raise RuntimeError(f"dot -T{fmt} failed: {done.stderr.decode(errors='replace')}")
    return done.stdout


FORMATS = ("dot", "svg", "mermaid", "png")
EXTENSIONS = {"dot": "dot", "svg": "svg", "mermaid": "mmd", "png": "png"}


def diagram_files(m: ir.Machine, formats: tuple[str, ...] = ("dot", "svg", "mermaid"),
                  folder: str = "diagrams") -> list[GeneratedFile]:
    name = module_name(m)
    dot = dot_source(m)
    out: list[GeneratedFile] = []
    for fmt in formats:
        path = f"{folder}/{name}.{EXTENSIONS[fmt]}"
        if fmt == "dot":
            out.append(GeneratedFile(path, dot.encode()))
        elif fmt == "mermaid":
            out.append(GeneratedFile(path, mermaid_source(m).encode()))
        else:
            out.append(GeneratedFile(path, render_dot(dot, fmt)))
    return out
