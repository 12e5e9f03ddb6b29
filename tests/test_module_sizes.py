"""Modules of a few hundred lines (style.md): no hand-written module of the packages is over `MAX_LINES`.

The generated ones (`impl/_generated/`, `conformance/generated/`) are left out: their size is the spec's. `OVER` lists
the modules still over the limit, each with its size when listed: one may shrink, never grow, and leaves the list
once it is under the limit (the test says so), so the list only shrinks.
"""

from __future__ import annotations

from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
FOLDERS = ("impl", "model", "conformance", "kcoord")
GENERATED = ("impl/_generated", "conformance/generated")
MAX_LINES = 600
#: modules over `MAX_LINES` still to split, and their size when listed (a ceiling: remove a module once it is under)
OVER: dict[str, int] = {}


def sizes(root: Path = ROOT) -> dict[str, int]:
    """Lines of every hand-written module under the package folders, by path relative to `root`."""
    out = {}
    for folder in FOLDERS:
        for path in sorted((root / folder).rglob("*.py")):
            rel = path.relative_to(root).as_posix()
            if "__pycache__" in path.parts or rel.startswith(GENERATED):
                continue
            out[rel] = len(path.read_text(encoding="utf-8").splitlines())
    return out


def problems(found: dict[str, int], over: dict[str, int]) -> list[str]:
    out = []
    for rel, lines in sorted(found.items()):
        ceiling = over.get(rel)
        if ceiling is None and lines > MAX_LINES:
            out.append(f"{rel}: {lines} lines, over {MAX_LINES}: split it along a real seam")
        elif ceiling is not None and lines > ceiling:
            out.append(f"{rel}: {lines} lines, grown past the {ceiling} it was listed with in OVER")
        elif ceiling is not None and lines <= MAX_LINES:
            out.append(f"{rel}: {lines} lines, no longer over {MAX_LINES}: remove it from OVER")
    out += [f"{rel}: listed in OVER but not found" for rel in sorted(set(over) - set(found))]
    return out


def test_no_module_is_over_the_limit() -> None:
    assert problems(sizes(), OVER) == []


@pytest.mark.parametrize(("lines", "over", "expected"), [
    (MAX_LINES + 1, {}, "over 600: split it"),
    (MAX_LINES + 5, {"impl/big.py": MAX_LINES + 4}, "grown past the 604"),
    (MAX_LINES, {"impl/big.py": MAX_LINES + 4}, "remove it from OVER"),
])
def test_the_rule_catches_a_large_module(tmp_path: Path, lines: int, over: dict[str, int], expected: str) -> None:
    (tmp_path / "impl").mkdir()
    (tmp_path / "impl" / "big.py").write_text("x = 1\n" * lines, encoding="utf-8")
    (tmp_path / "impl" / "_generated").mkdir()
    (tmp_path / "impl" / "_generated" / "table.py").write_text("x = 1\n" * 5000, encoding="utf-8")
    (found,) = problems(sizes(tmp_path), over)
    assert found.startswith("impl/big.py") and expected in found


def test_a_listed_module_that_is_gone_is_reported(tmp_path: Path) -> None:
    assert problems(sizes(tmp_path), {"impl/gone.py": 700}) == ["impl/gone.py: listed in OVER but not found"]
