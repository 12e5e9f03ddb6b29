"""Golden diagnostics for a corpus of bad specs.

Every `tests/model/bad_specs/<name>.sm` is a small spec with one kind of mistake; it is loaded with
`kcoord.model.loader.load_files` and the rendered diagnostics (`Diagnostics.render()`: `path:line:col: error: message`,
the source line and a caret, paths relative to the repository root) must equal `bad_specs/<name>.expected` exactly.
The first comment line of each `.sm` says what the case shows.

Update switch: run

    KCOORD_UPDATE_GOLDEN=1 .venv/bin/python -m pytest tests/model/test_bad_specs.py

to rewrite every `.expected` file from the current output (and to create the golden file of a new case); then review
the diff before committing. Without the switch, a missing or different golden file fails the test.

`KNOWN_ISSUES` lists the cases whose current output is not what it should be (a confusing message, a wrong place, a
missing error, a cascade of follow-up errors). They are still checked against their golden files, so a change in the
front end shows up as a diff; when the issue is fixed, regenerate the golden file, check it reads right and drop the
entry.
"""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from kcoord.model.loader import load_files
from kcoord.model.parser import FRIENDLY_EXAMPLES

REPO = Path(__file__).resolve().parents[2]
CORPUS = Path("tests/model/bad_specs")  # relative to REPO, so diagnostics show `tests/model/bad_specs/<name>.sm`
UPDATE = os.environ.get("KCOORD_UPDATE_GOLDEN") == "1"

#: case name -> what is wrong with the current output (and what it should say instead).
KNOWN_ISSUES: dict[str, str] = {
    # ---- messages that could still be better
    "let_after_row": "besides the clause-order error, the row above the `let` reports the let's name as unknown",
}


def _cases() -> list[str]:
    return sorted(p.stem for p in (REPO / CORPUS).glob("*.sm"))


def _render(name: str, monkeypatch: pytest.MonkeyPatch) -> tuple[str, bool]:
    monkeypatch.chdir(REPO)
    _, diags = load_files([CORPUS / f"{name}.sm"])
    text = diags.render()
    return (text + "\n" if text else ""), diags.has_errors


@pytest.mark.parametrize("name", _cases())
def test_bad_spec_diagnostics(name: str, monkeypatch: pytest.MonkeyPatch) -> None:
    actual, has_errors = _render(name, monkeypatch)
    golden = REPO / CORPUS / f"{name}.expected"
    if UPDATE:
        golden.write_text(actual, encoding="utf-8")
    assert has_errors or name in KNOWN_ISSUES, f"{name}.sm is in the bad-spec corpus but loads without errors"
    assert golden.exists(), f"no golden file {golden.name}; run with KCOORD_UPDATE_GOLDEN=1 to create it"
    assert actual == golden.read_text(encoding="utf-8"), (
        f"diagnostics of {name}.sm differ from {golden.name}"
        + (f" (known issue: {KNOWN_ISSUES[name]})" if name in KNOWN_ISSUES else "")
        + "; if the new output is right, run with KCOORD_UPDATE_GOLDEN=1"
    )


def test_corpus_is_consistent() -> None:
    cases = set(_cases())
    assert len(cases) >= 30
    orphans = sorted(p.stem for p in (REPO / CORPUS).glob("*.expected") if p.stem not in cases)
    assert not orphans, f"golden files without a spec: {orphans}"
    assert not sorted(set(KNOWN_ISSUES) - cases), "KNOWN_ISSUES names a case that does not exist"


def test_every_friendly_message_has_a_case() -> None:
    """Each entry of the parser's friendly-message table is shown by at least one golden file."""
    goldens = "\n".join(p.read_text(encoding="utf-8") for p in (REPO / CORPUS).glob("*.expected"))
    missing = [label for label in FRIENDLY_EXAMPLES if label not in goldens]
    assert not missing, f"friendly messages no bad spec shows: {missing}"
