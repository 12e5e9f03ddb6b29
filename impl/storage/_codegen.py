"""What the codec's reader and writer compilers share: the lines of a generated function, the struct formats of the
fixed-width types, and the grouping of consecutive fixed-width fields into one `struct` call.
Must not import: `kcoord.model`.
"""

from __future__ import annotations

from .declarations import FieldDecl

FORMAT = {"int8": "b", "int16": "h", "int32": "i", "int64": "q", "bool": "?"}
WIDTH = {"b": 1, "h": 2, "i": 4, "q": 8, "?": 1}


class Source:
    """Lines of one generated function, with fresh local names."""

    def __init__(self) -> None:
        self.lines: list[str] = []
        self.n = 0

    def fresh(self, stem: str) -> str:
        self.n += 1
        return f"{stem}{self.n}"

    def add(self, indent: int, line: str) -> None:
        self.lines.append("    " * indent + line)


def runs(fields: tuple[FieldDecl, ...], version: int) -> list[list[FieldDecl]]:
    """The untagged fields of `version` in order, consecutive fixed-width ones grouped (one struct call reads or
    writes a group), any other field alone."""
    out: list[list[FieldDecl]] = []
    for f in fields:
        if version not in f.versions or version in f.tagged:
            continue
        if f.type in FORMAT and out and out[-1][0].type in FORMAT:
            out[-1].append(f)
        else:
            out.append([f])
    return out
