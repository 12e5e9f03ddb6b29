"""Spec file → syntax nodes.

Owns: loading the grammar (`spec.lark`), splitting a file into top-level declarations, parsing each with lark's
LALR parser, and turning lark's exceptions into friendly diagnostics (a table of known-bad inputs → messages); the
lark trees become `kcoord.model.syntax` nodes with spans in `to_syntax.py`. Because each declaration is parsed on
its own, every syntax error in a file is reported in one run.
Must not import: z3, pyspark, the IR or the checker.
"""

from __future__ import annotations

import difflib
import functools
import re
from dataclasses import dataclass
from importlib import resources
from typing import Any

from lark import Lark
from lark.exceptions import UnexpectedCharacters, UnexpectedEOF, UnexpectedInput, UnexpectedToken, VisitError

from . import syntax as s
from .diagnostics import Diagnostics, SourceFile, Span
from .to_syntax import LiteralError, ToSyntax

#: Words that start a top-level declaration (state flags may precede `state`).
MEMBER_KEYWORDS = frozenset(
    {"key", "kind", "enum", "const", "def", "var", "state", "initial", "final", "pending", "expirable", "event",
     "invariant", "step", "trace", "internal", "persist"}
)

#: Known-bad inputs mapped to friendly messages (lark's `match_examples`), tested like any fixture.
FRIENDLY_EXAMPLES: dict[str, list[str]] = {
    "a transition's source and target are separated by '->' (e.g. `from Ongoing -> PrepareCommit`)": [
        "event E()\n from A to B",
        "event E()\n from A, B to B",
    ],
    "'ensures' takes an equation on a primed variable, written with '==' (e.g. `ensures epoch' == epoch + 1`)": [
        "event E()\n from A -> B ensures x' = 1",
    ],
    "a rejection needs a Kafka error name after 'with' (e.g. `with CONCURRENT_TRANSACTIONS`)": [
        "event E()\n reject in A with",
        "event E()\n reject with",
        "event E()\n reject in A when x > 1 with",
    ],
    "comparisons do not chain: write `a <= b and b <= c`": [
        "invariant x: a <= b <= c",
        "invariant x: a == b == c",
        "invariant x: a < b < c",
    ],
    "a declaration keyword inside another declaration: every declaration starts on its own line at the same "
    "indentation as the first one (deeper lines continue the declaration above)": [
        'var x: int16 = 0\n    state B "b"',
        'state A "a"\n    state B "b"',
        'var x: int16 = 0\n    var y: int16 = 0',
    ],
    "a reserved word cannot be used as a name (e.g. `from`, `state`, `in`, `key`, `set`): see spec/README.md": [
        "event E()\n reject in A with\n from A -> B",
        "var in: int16 = 0",
        "var state: int16 = 0",
        "event E(from: int16)",
        "event E(state: int16)",
        "event from()",
    ],
    "a variable needs a type and a default value (e.g. `var producer_epoch: int16 = -1`)": [
        "var x = 1",
        "var x",
        "var x: int16",
    ],
    "an event needs a parameter list, even an empty one (e.g. `event Heartbeat()`)": [
        "event E from A -> B",
        "event E\n from A -> B",
    ],
    "expected ':' and an expression after the property's name (e.g. `invariant name: expression`)": [
        "invariant x y",
        "step x y",
        "invariant x",
    ],
    "a doc string goes right after the name it documents (e.g. `from Ongoing -> PrepareCommit \"why\" when ...`, "
    "`invariant name \"why\": ...`)": [
        'event E()\n from A -> B when x "doc"',
        'event E()\n from A -> B ensures x\' == 1 "doc"',
        'invariant x: y "doc"',
        'event E()\n reject in A when x "doc" with E',
    ],
    "a check needs 'else' and the Kafka error to answer when it fails (e.g. `check epoch == producer_epoch else "
    "PRODUCER_FENCED`)": [
        "event E()\n check x == 1",
        "event E()\n check x == 1 with E",
        "event E()\n check x == 1\n from A -> B",
        "event E()\n check x == 1\n reject with E",
    ],
    "a property's doc string comes before its ':' (e.g. `invariant name \"why\": expression`)": [
        'invariant x "doc" y',
        'step x "doc" y',
        'step x "doc" y\' >= y',
        'invariant x "doc" not y',
    ],
}


@dataclass(frozen=True, slots=True)
class Chunk:
    """One top-level declaration's lines, with its position in the file."""

    first_line: int  # 1-based
    text: str


@functools.cache
def _lark() -> Lark:
    grammar = resources.files("kcoord.model").joinpath("spec.lark").read_text(encoding="utf-8")
    return Lark(grammar, parser="lalr", start=["start", "machine_header", "one_member"], propagate_positions=True,
                maybe_placeholders=True, cache=True)


def split_declarations(text: str) -> list[Chunk]:
    """Split a file into the machine header and one chunk per top-level declaration.

    A declaration starts on a line, outside any string, whose first word is a member keyword (or a near miss of one,
    so that `invarient` is reported as such instead of being swallowed by the declaration above) and whose
    indentation is no deeper than the first declaration's; other lines continue the current declaration.
    """
    lines = text.split("\n")
    starts: list[int] = []
    member_indent: int | None = None
    in_string = False
    for i, line in enumerate(lines):
        was_in_string = in_string
        in_string = _ends_inside_string(line, in_string)
        stripped = line.lstrip()
        if was_in_string or not stripped or stripped.startswith("#"):
            continue
        word = re.match(r"[A-Za-z_]\w*", stripped)
        indent = len(line) - len(stripped)
        if not starts:
            starts.append(i)  # the header (or whatever the file starts with)
            continue
        at_member_indent = member_indent is None or indent <= member_indent
        if word and at_member_indent and (word.group(0) in MEMBER_KEYWORDS or _misspelt_keyword(word.group(0))):
            member_indent = indent if member_indent is None else member_indent
            starts.append(i)
    chunks = []
    for n, start in enumerate(starts):
        end = starts[n + 1] if n + 1 < len(starts) else len(lines)
        chunks.append(Chunk(first_line=start + 1, text="\n".join(lines[start:end])))
    return chunks


def _ends_inside_string(line: str, in_string: bool) -> bool:
    """Whether a double-quoted string is still open at the end of `line` (comments outside strings ignored)."""
    i = 0
    while i < len(line):
        c = line[i]
        if in_string:
            if c == "\\":
                i += 1
            elif c == '"':
                in_string = False
        elif c == '"':
            in_string = True
        elif c == "#":
            break
        i += 1
    return in_string


def _misspelt_keyword(word: str) -> str | None:
    """The declaration keyword `word` is a near miss of (`invarient` -> `invariant`), if any."""
    if word in MEMBER_KEYWORDS or len(word) < 4:
        return None
    close = difflib.get_close_matches(word, sorted(MEMBER_KEYWORDS), n=1, cutoff=0.8)
    return close[0] if close else None


def parse_source(source: SourceFile, diags: Diagnostics) -> s.MachineSyntax | None:
    """Parse one spec file; every syntax error goes to `diags`. Returns None when nothing usable was parsed."""
    diags.add_source(source)
    chunks = split_declarations(source.text)
    if not chunks:
        diags.error(Span.point(source.path, 1, 1), "empty spec file: expected `machine NAME` on the first line")
        return None
    header = _parse_chunk(source, chunks[0], "machine_header", diags)
    members: list[s.MemberDecl] = []
    lost: set[str] = set()
    for chunk in chunks[1:]:
        node = _parse_chunk(source, chunk, "one_member", diags)
        if node is not None:
            members.append(node)
        else:
            lost |= _declared_names(chunk.text)
    if not isinstance(header, tuple):
        if header is not None or not diags.has_errors:
            diags.error(Span.point(source.path, chunks[0].first_line, 1),
                        "expected `machine NAME` at the top of the file")
        return None
    name, doc, span = header
    end_line = source.text.count("\n") + 1
    return s.MachineSyntax(name=name, doc=doc, members=tuple(members), path=source.path,
                           span=Span(source.path, span.line, span.col, end_line, 1), lost_names=frozenset(lost))


def _declared_names(text: str) -> set[str]:
    """Names a declaration that failed to parse would have declared (its name; an enum's members; a key's fields),
    so the checker does not report every later use of them as unknown."""
    names = set(re.findall(r"\b(?:state|var|const|def|enum|event|key)\s+([A-Za-z_]\w*)", text))
    names |= set(re.findall(r"\b([A-Za-z_]\w*)\s*:", text))  # parameters and key fields
    brace = re.search(r"\benum\s+\w+\s*\{([^}]*)", text)
    if brace:
        names |= set(re.findall(r"[A-Za-z_]\w*", brace.group(1)))
    return names


def _parse_chunk(source: SourceFile, chunk: Chunk, start: str, diags: Diagnostics) -> Any:
    first = re.match(r"\s*([A-Za-z_]\w*)", chunk.text)
    hint = _misspelt_keyword(first.group(1)) if first and start == "one_member" else None
    if first and hint:
        col = first.start(1) + 1
        diags.error(Span.point(source.path, chunk.first_line, col, len(first.group(1))),
                    f"unknown declaration '{first.group(1)}'; did you mean '{hint}'?")
        return None
    padded = "\n" * (chunk.first_line - 1) + chunk.text
    parser = _lark()
    try:
        tree = parser.parse(padded, start=start)
    except UnexpectedInput as e:
        diags.error(*_syntax_error(source.path, e, chunk, start))
        return None
    try:
        return ToSyntax(source.path).transform(tree)
    except VisitError as e:  # a literal we can't represent, e.g. an integer with a bad underscore
        orig = e.orig_exc
        if isinstance(orig, LiteralError):
            diags.error(orig.span, orig.message)
            return None
        raise


def _syntax_error(path: str, e: UnexpectedInput, chunk: Chunk, start: str) -> tuple[Span, str]:
    line = getattr(e, "line", chunk.first_line) or chunk.first_line
    col = getattr(e, "column", 1) or 1
    width = 1
    if isinstance(e, UnexpectedToken) and e.token.type != "$END":
        width = max(len(str(e.token)), 1)
    elif isinstance(e, UnexpectedToken | UnexpectedEOF):
        line, col = _end_of_chunk(chunk)
    span = Span.point(path, line, col, width)
    friendly = _friendly(e, start, chunk)
    if friendly is not None:
        return span, friendly
    return span, _generic_message(e)


def _end_of_chunk(chunk: Chunk) -> tuple[int, int]:
    lines = chunk.text.rstrip().split("\n")
    return chunk.first_line + len(lines) - 1, len(lines[-1]) + 1


def _friendly(e: UnexpectedInput, start: str, chunk: Chunk) -> str | None:
    """The friendly message of the first known-bad example that fails the same way as `e`.

    "The same way" means: same LALR state, same set of acceptable tokens, and the same offending token type (or the
    same kind of bad character). lark's own `match_examples` also compares stack depth, which differs between an
    event with parameters and one without, so it misses most real inputs.
    """
    for label, examples in FRIENDLY_EXAMPLES.items():
        for example in examples:
            failure = _failure(example, start)
            if failure is not None and _same_failure(e, failure):
                return label
    return None


@functools.cache
def _failure(example: str, start: str) -> UnexpectedInput | None:
    try:
        _lark().parse(example, start=start)
    except UnexpectedInput as failure:
        return failure
    return None


def _same_failure(a: UnexpectedInput, b: UnexpectedInput) -> bool:
    if isinstance(a, UnexpectedCharacters) and isinstance(b, UnexpectedCharacters):
        return a.char == b.char and a.allowed == b.allowed
    if isinstance(a, UnexpectedToken) and isinstance(b, UnexpectedToken):
        return (a.state.position == b.state.position and a.accepts == b.accepts
                and a.token.type == b.token.type)
    return False


_TOKEN_NAMES = {
    "ARROW": "'->'", "STAR": "'*'", "PLUS": "'+'", "MINUS": "'-'", "BAR": "'|'", "AMP": "'&'",
    "COMPARE": "a comparison", "PRIMED": "a primed name", "NAME": "a name", "INT": "an integer",
    "STRING": "a string", "LPAR": "'('", "RPAR": "')'", "LBRACE": "'{'", "RBRACE": "'}'", "LSQB": "'['",
    "RSQB": "']'", "COMMA": "','", "COLON": "':'", "EQUAL": "'='", "DOT": "'.'", "$END": "end of declaration",
}


def _describe(terminal: str) -> str:
    if terminal in _TOKEN_NAMES:
        return _TOKEN_NAMES[terminal]
    pattern = _lark().get_terminal(terminal).pattern if terminal in {t.name for t in _lark().terminals} else None
    if pattern is not None and pattern.type == "str":
        return f"'{pattern.value}'"
    if pattern is not None and pattern.value.endswith("\\b"):  # a keyword: /reject\b/
        return f"'{pattern.value[:-2]}'"
    return terminal.lower()


def _generic_message(e: UnexpectedInput) -> str:
    if isinstance(e, UnexpectedCharacters):
        if e.char == '"':
            return "unterminated string: a double-quoted string has no closing '\"'"
        return f"unexpected character {e.char!r}"
    if isinstance(e, UnexpectedToken):
        got = "end of declaration" if e.token.type == "$END" else f"'{e.token}'"
        # `accepts` is what the parser could really take here; `expected` is the whole LALR lookahead set
        candidates = getattr(e, "accepts", None) or e.expected
        expected = sorted({_describe(t) for t in candidates})
        if "NAME" in candidates and e.token.type != "NAME" and str(e.token).isidentifier():
            return f"'{e.token}' is a reserved word and cannot be used as a name: see spec/README.md"
        if e.token.type == "NAME":  # `rejects`, `whenever`: a near miss of a keyword that fits here
            keywords = [x.strip("'") for x in expected if x.startswith("'") and x[1:-1].isalpha()]
            close = difflib.get_close_matches(str(e.token), keywords, n=1, cutoff=0.6)
            if close:
                return f"unexpected '{e.token}'; did you mean '{close[0]}'?"
        shown = ", ".join(expected[:8]) + (", ..." if len(expected) > 8 else "")
        return f"unexpected {got}; expected {shown}"
    if isinstance(e, UnexpectedEOF):
        return "unexpected end of file"
    return str(e)
