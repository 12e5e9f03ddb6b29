"""Source spans and user-facing diagnostics for spec files.

Owns: `Span`, `SourceFile`, `Diagnostic`, the `Diagnostics` collector and the one renderer that prints
`spec/x.sm:12:5: error: message` followed by the source line and a caret. Errors in the user's spec are always
collected and reported together; an `IllegalStateError` (our own bug) never goes through here.
Must not import: anything outside `kcoord.model` and the standard library.
"""

from __future__ import annotations

import difflib
from collections.abc import Iterable, Iterator
from dataclasses import dataclass, field
from typing import Literal

Severity = Literal["error", "warning"]


@dataclass(frozen=True, slots=True, order=True)
class Span:
    """A region of a source file; lines and columns are 1-based, `end_col` is exclusive."""

    path: str
    line: int
    col: int
    end_line: int
    end_col: int

    def __str__(self) -> str:
        return f"{self.path}:{self.line}:{self.col}"

    @staticmethod
    def point(path: str, line: int, col: int, width: int = 1) -> Span:
        return Span(path, line, col, line, col + max(width, 1))


#: A span for things the compiler made up (e.g. defaults) and that have no place in a file.
NO_SPAN = Span("<builtin>", 0, 0, 0, 0)


@dataclass(frozen=True, slots=True)
class SourceFile:
    """The text of one spec file, as given to the parser, kept for rendering carets."""

    path: str
    text: str

    def line_text(self, line: int) -> str:
        lines = self.text.splitlines()
        return lines[line - 1] if 1 <= line <= len(lines) else ""


@dataclass(frozen=True, slots=True)
class Diagnostic:
    span: Span
    message: str
    severity: Severity = "error"
    notes: tuple[str, ...] = ()

    def render(self, source: SourceFile | None = None) -> str:
        head = f"{self.span}: {self.severity}: {self.message}"
        out = [head]
        if source is not None and self.span.line > 0:
            text = source.line_text(self.span.line).replace("\t", " ")
            gutter = f"{self.span.line:>5} | "
            out.append(gutter + text)
            single_line = self.span.end_line == self.span.line
            width = (self.span.end_col - self.span.col) if single_line else len(text) - self.span.col + 1
            out.append(" " * (len(gutter) - 2) + "| " + " " * (self.span.col - 1) + "^" * max(width, 1))
        out.extend(f"      = note: {n}" for n in self.notes)
        return "\n".join(out)


@dataclass(slots=True)
class Diagnostics:
    """Collects every problem found in one or more files; never stops at the first."""

    sources: dict[str, SourceFile] = field(default_factory=dict)
    items: list[Diagnostic] = field(default_factory=list)

    def add_source(self, source: SourceFile) -> None:
        self.sources[source.path] = source

    def error(self, span: Span, message: str, *notes: str) -> None:
        self.items.append(Diagnostic(span, message, "error", tuple(notes)))

    def warning(self, span: Span, message: str, *notes: str) -> None:
        self.items.append(Diagnostic(span, message, "warning", tuple(notes)))

    def extend(self, other: Iterable[Diagnostic]) -> None:
        self.items.extend(other)

    @property
    def has_errors(self) -> bool:
        return any(d.severity == "error" for d in self.items)

    def __iter__(self) -> Iterator[Diagnostic]:
        return iter(sorted(self.items, key=lambda d: (d.span, d.message)))

    def __len__(self) -> int:
        return len(self.items)

    def render(self) -> str:
        rendered = [d.render(self.sources.get(d.span.path)) for d in self]
        return "\n".join(rendered)


class SpecError(Exception):
    """Raised when a spec has errors; carries every diagnostic found."""

    def __init__(self, diagnostics: Diagnostics) -> None:
        self.diagnostics = diagnostics
        super().__init__(diagnostics.render())


def suggest(name: str, known: Iterable[str]) -> str | None:
    """The closest known name, for 'did you mean' notes.

    In order: a case-insensitive match; the best similarity match (difflib ratio >= 0.6); else the nearest name by
    edit distance when it is at most 2 edits and leaves at least one character in common position (`Bee` -> `B`).
    """
    pool = sorted(set(known))
    for k in pool:
        if k.lower() == name.lower():
            return k
    close = difflib.get_close_matches(name, pool, n=1, cutoff=0.6)
    if close:
        return close[0]
    scored = sorted((_edit_distance(name.lower(), k.lower()), k) for k in pool)
    if scored and scored[0][0] <= 2 and scored[0][0] < max(len(name), len(scored[0][1])):
        return scored[0][1]
    return None


def _edit_distance(a: str, b: str) -> int:
    """Levenshtein distance (small strings only: names in a spec)."""
    previous = list(range(len(b) + 1))
    for i, ca in enumerate(a, 1):
        current = [i]
        for j, cb in enumerate(b, 1):
            current.append(min(previous[j] + 1, current[j - 1] + 1, previous[j - 1] + (ca != cb)))
        previous = current
    return previous[-1]


def unknown_name_message(kind: str, name: str, known: Iterable[str]) -> tuple[str, tuple[str, ...]]:
    """`unknown state 'Ongong'` plus a `did you mean 'Ongoing'?` note when something is close."""
    hint = suggest(name, known)
    message = f"unknown {kind} '{name}'" + (f"; did you mean '{hint}'?" if hint else "")
    return message, ()
