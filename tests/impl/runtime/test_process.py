"""`tune_gc`: the process setting `kcoord serve` and `kcoord simulate` apply after start-up."""

from __future__ import annotations

import gc

from kcoord.impl.runtime.process import GC_THRESHOLDS, restore_gc, tune_gc


def test_tune_gc_freezes_what_exists_and_restore_undoes_it() -> None:
    before = gc.get_threshold()
    frozen_before = gc.get_freeze_count()
    previous = tune_gc()
    try:
        assert previous == before
        assert gc.get_threshold() == GC_THRESHOLDS
        assert gc.get_freeze_count() > frozen_before  # the objects alive at start-up are never scanned again
    finally:
        restore_gc(previous)
    assert gc.get_threshold() == before
    assert gc.get_freeze_count() == 0


def test_cycles_are_still_collected_after_tune_gc() -> None:
    previous = tune_gc()
    try:
        class Node:
            def __init__(self) -> None:
                self.other: Node | None = None

        collected = []
        a, b = Node(), Node()
        a.other, b.other = b, a
        import weakref

        ref = weakref.ref(a, lambda _: collected.append(True))
        del a, b
        gc.collect(0)
        assert ref() is None and collected == [True]
    finally:
        restore_gc(previous)
