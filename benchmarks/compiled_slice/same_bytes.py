"""The compiled `encode_new_batch` (kcoord_fast, this folder's Rust) gives the bytes the Python one gives: random
batches (null and empty keys and values, lengths across the one- and two-byte varint bounds, 70,000-byte values,
every flag, producer fields at their bounds) and one of 10,000 records (offset deltas past the small-varint table).
Run with the patched tree first on PYTHONPATH (compiled_slice.sh does)."""

from __future__ import annotations

import random

import kcoord.impl.storage.batch as batch

fast = batch._fast  # type: ignore[attr-defined]
assert fast is not None, "kcoord_fast did not import: build it first (compiled_slice.sh)"


def both(entries: list[tuple[bytes | None, bytes | None]], **kw: object) -> None:
    batch._fast = None  # type: ignore[attr-defined]
    want = batch.encode_new_batch(entries, **kw)  # type: ignore[arg-type]
    batch._fast = fast  # type: ignore[attr-defined]
    got = batch.encode_new_batch(entries, **kw)  # type: ignore[arg-type]
    assert got == want, kw


rng = random.Random(1)
for _ in range(20_000):
    entries = [(None if rng.random() < .3 else rng.randbytes(rng.choice([0, 1, 5, 63, 64, 200, 9000, 20000])),
                None if rng.random() < .2 else rng.randbytes(rng.choice([0, 3, 127, 128, 300, 70000])))
               for _ in range(rng.randrange(1, 12))]
    transactional = rng.random() < .5
    producer_id = rng.choice([-1, rng.randrange(0, 2**50)])
    both(entries, base_offset=rng.randrange(0, 2**40), timestamp_ms=rng.randrange(-1, 2**41),
         producer_id=1 if transactional and producer_id < 0 else producer_id,
         producer_epoch=rng.choice([-1, 0, 5, 32767]), base_sequence=rng.choice([-1, 0, 99, 2**31 - 1]),
         transactional=transactional, control=rng.random() < .3, partition_leader_epoch=rng.choice([-1, 0, 7]))
both([(b"k", b"v")] * 10_000, base_offset=5, timestamp_ms=9)
print("same bytes: 20,001 batches")
