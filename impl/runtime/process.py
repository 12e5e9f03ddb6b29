"""Process-wide settings for a long-running coordinator process (`kcoord serve`, `kcoord simulate`).

The coordinators keep every loaded instance (dicts, sets, tuples) alive for the life of the process and allocate a
few short-lived containers per request. CPython's cyclic garbage collector is triggered by container allocations
(700 by default) and every collection of the older generations walks all the long-lived instances, although the
coordinators' request path creates almost no reference cycles. Measured on the transaction coordinator benchmark
(valgrind, instructions per committed transaction): the collector is ~5 % of the work with the defaults.

`tune_gc` is what a server does about it (the approach of Instagram's `gc.freeze`): after start-up, move everything
that exists to the permanent generation (never scanned again; objects created later are collected as usual) and
collect the young generation every 10,000 container allocations instead of 700. Cycles are still collected, only
less often. It is a process setting, never applied by the library on import: an embedding program decides.
"""

from __future__ import annotations

import gc

#: (young, middle, old) generation thresholds used by `tune_gc` (CPython's defaults: 700, 10, 10)
GC_THRESHOLDS = (10_000, 20, 20)


def tune_gc() -> tuple[int, int, int]:
    """Freeze what exists now and raise the young-generation threshold; returns the previous thresholds (for
    `restore_gc`). Call it once start-up (imports, loading the logs) is done."""
    previous = gc.get_threshold()
    gc.collect()  # what is garbage now is not frozen
    gc.freeze()
    gc.set_threshold(*GC_THRESHOLDS)
    return previous


def restore_gc(previous: tuple[int, int, int]) -> None:
    """Undo `tune_gc`: the earlier thresholds, and the frozen objects scanned again."""
    gc.set_threshold(*previous)
    gc.unfreeze()
