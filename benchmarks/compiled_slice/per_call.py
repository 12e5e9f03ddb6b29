"""`encode_new_batch` called N times on one small record (a transaction-log-sized key and value), as the coordinator
logs call it: MODE `py` (the Python encoder), `rs` (kcoord_fast's, through the Python function), `direct` (kcoord_fast's
called directly with positional arguments), `none` (the loop alone); and a crossing alone: `noop-rs` (kcoord_fast.noop,
eight integers, no work) against `noop-py` (a Python function of eight parameters, no work). compiled_slice.sh runs
it under cachegrind for two N and takes the difference: instructions per call."""

from __future__ import annotations

import sys

import kcoord.impl.storage.batch as batch

mode, n = sys.argv[1], int(sys.argv[2])
entries = [(b"\x00\x00\x00\x0ctxn-producer-3", b"\x00\x01" + bytes(58))]
encode = batch.encode_new_batch
fast = batch._fast  # type: ignore[attr-defined]


def noop_py(a: int, b: int, c: int, d: int, e: int, f: int, g: int, h: int) -> None:
    pass


if mode in ("py", "rs"):
    if mode == "py":
        batch._fast = None  # type: ignore[attr-defined]
    for i in range(n):
        encode(entries, base_offset=i, timestamp_ms=1_700_000_000_000, producer_id=-1, producer_epoch=-1,
               base_sequence=-1, transactional=False, control=False, partition_leader_epoch=0)
elif mode == "direct":
    for i in range(n):
        fast(entries, i, 1_700_000_000_000, -1, -1, -1, 0, 0)
elif mode.startswith("noop"):
    noop = __import__("kcoord_fast").noop if mode == "noop-rs" else noop_py
    for i in range(n):
        noop(i, 1_700_000_000_000, -1, -1, -1, 0, 0, 0)
else:
    for _ in range(n):
        pass
