"""The checker's last pass: structure. Every state is reachable from the initial one and every state that is not
final has a way out (skipped when declarations or rows were lost to earlier errors: it would only repeat them), and
no two rows of a state and event overlap as written (a transition and a rejection, two rejections, or two
transitions not both marked `choice`). Everything that needs z3 (disjointness under guards, totality,
inductiveness) is the verifier's.
Must not import: lark, z3, pyspark.
"""

from __future__ import annotations

from collections import deque

from . import ir
from .check_context import Checking
from .pretty import render


class Structure:
    def __init__(self, ck: Checking) -> None:
        self.ck = ck

    def run(self) -> None:
        if self.ck.structure and not self.ck.rows_incomplete:
            self._reachability()
        self._conflicts()  # compares only rows that checked, so it is meaningful even after other errors

    def _reachability(self) -> None:
        ck = self.ck
        if not ck.states or sum(st.initial for st in ck.states) != 1:
            return
        edges: dict[str, set[str]] = {st.name: set() for st in ck.states}
        for t in ck.rows.transitions:
            if t.target is None:
                continue  # a `stay` row leads nowhere new
            for src in t.sources:
                edges[src].add(t.target)
        initial = next(st.name for st in ck.states if st.initial)
        seen = {initial}
        queue = deque([initial])
        while queue:
            for nxt in sorted(edges[queue.popleft()]):
                if nxt not in seen:
                    seen.add(nxt)
                    queue.append(nxt)
        for st in ck.states:
            if st.name not in seen:
                ck.diags.error(st.span, f"state '{st.name}' is unreachable: no transition leads to it from the "
                                        f"initial state '{initial}'")
            elif not st.final and not edges[st.name]:
                ck.diags.error(st.span, f"state '{st.name}' has no outgoing transition (a dead end): add one, or "
                                        "mark it `final`")

    def _conflicts(self) -> None:
        """Rows that are syntactically both allowed and rejected, or two transitions with the same guard."""
        ck = self.ck
        by_key: dict[tuple[str, str], list[ir.Row]] = {}
        rows: list[ir.Row] = [*ck.rows.transitions, *ck.rows.rejections]
        for row in sorted(rows, key=lambda r: r.index):
            for src in row.sources:
                by_key.setdefault((src, row.event), []).append(row)
        reported: set[tuple[int, int]] = set()
        final = {st.name for st in ck.states if st.final}
        for (state, event), same in sorted(by_key.items()):
            if state in final:
                continue  # rows out of a final state are already errors
            for i, a in enumerate(same):
                for b in same[i + 1:]:
                    if (a.index, b.index) in reported or not _overlap(a, b):
                        continue
                    if isinstance(a, ir.Transition) and isinstance(b, ir.Transition) and a.choice and b.choice:
                        continue
                    reported.add((a.index, b.index))
                    ck.diags.error(b.span, _conflict_message(state, event, a, b))


def _overlap(a: ir.Row, b: ir.Row) -> bool:
    """Syntactic overlap: one row is unconditional, or both have the same condition as written."""
    if (isinstance(a, ir.Rejection) and a.origin == "check") or (isinstance(b, ir.Rejection) and b.origin == "check"):
        return False  # check rows are disjoint from everything after them by construction
    unconditional = (isinstance(a.local_guard, ir.Lit) and a.local_guard.value is True) or \
        (isinstance(b.local_guard, ir.Lit) and b.local_guard.value is True)
    return unconditional or render(a.local_guard) == render(b.local_guard)


def _conflict_message(state: str, event: str, a: ir.Row, b: ir.Row) -> str:
    if isinstance(a, ir.Transition) and isinstance(b, ir.Transition):
        return (f"{event} in {state} has two transitions that can both fire (to {a.target or state} at {a.span} and "
                f"to {b.target or state} here); make the guards disjoint or mark both `choice`")
    if isinstance(a, ir.Rejection) and isinstance(b, ir.Rejection):
        return (f"{event} in {state} is rejected twice under the same condition ({a.error} at {a.span} and "
                f"{b.error} here)")
    return f"{event} in {state} is both allowed and rejected (the other row is at {a.span})"
