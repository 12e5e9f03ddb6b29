"""Helpers for model tests: load a spec from a string."""

from __future__ import annotations

import textwrap

from kcoord.model import ir
from kcoord.model.diagnostics import Diagnostics, SourceFile
from kcoord.model.loader import load_sources


def load_text(text: str, path: str = "demo.sm") -> tuple[list[ir.Machine], Diagnostics]:
    return load_sources([SourceFile(path, textwrap.dedent(text).strip() + "\n")])


def machine(text: str, path: str = "demo.sm") -> ir.Machine:
    machines, diags = load_text(text, path)
    assert not diags.has_errors, diags.render()
    (m,) = machines
    return m


def errors(text: str, path: str = "demo.sm") -> list[str]:
    """Every error message (without location) for `text`."""
    _, diags = load_text(text, path)
    return [d.message for d in diags if d.severity == "error"]
