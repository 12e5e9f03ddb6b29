"""`encode_new_batch` called N times on one small record (a transaction-log-sized key and value), as the coordinator
logs call it: MODE `py` (the Python encoder), `rs` (kcoord_fast's), `none` (the loop alone). compiled_slice.sh runs
it under cachegrind for two N and takes the difference: instructions per call."""

from __future__ import annotations

import sys

import kcoord.impl.storage.batch as batch

mode, n = sys.argv[1], int(sys.argv[2])
if mode == "py":
    batch._fast = None  # type: ignore[attr-defined]
entries = [(b"\x00\x00\x00\x0ctxn-producer-3", b"\x00\x01" + bytes(58))]
encode = batch.encode_new_batch
for i in range(n):
    if mode != "none":
        encode(entries, base_offset=i, timestamp_ms=1_700_000_000_000, producer_id=-1, producer_epoch=-1,
               base_sequence=-1, transactional=False, control=False, partition_leader_epoch=0)
