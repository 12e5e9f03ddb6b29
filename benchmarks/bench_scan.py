"""The batch decoder's two loops on their own: the last-value scan of a coordinator log and the careful decode.

Run: ``.venv/bin/python benchmarks/bench_scan.py [--records N] [--repeat R] [--instructions]``.

A buffer of ``__transaction_state``-like records (keys of 20-40 bytes, values of 60-200 bytes: one- and two-byte
varints, as the coordinator writes them) in one-record batches (fsync per batch) and in 40-record batches (group
commit) is scanned by ``BatchDecoder.last_values`` (every batch plain, none below the recovery point: each CRC is
checked) and decoded by ``BatchDecoder.located`` (every batch and record built). Times are CPU seconds
(``time.process_time``), the median of ``--repeat``, as records per CPU-second. ``--instructions`` counts CPU
instructions per record under valgrind's cachegrind instead (machine-independent: the difference between a run of
4N and one of N records, divided by 3N, so start-up cancels out). Works on any checkout of kcoord (the decoder moved
from ``storage.batch`` to ``storage.batch_decoder``), so that two trees can be compared side by side in one run.
"""

from __future__ import annotations

import argparse
import os
import random
import re
import statistics
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable
from pathlib import Path

from kcoord.impl.storage.batch import LastValues, encode_new_batch

try:
    from kcoord.impl.storage.batch_decoder import BatchDecoder
except ImportError:  # a tree from before the decoder had its own module
    from kcoord.impl.storage.batch import BatchDecoder  # type: ignore[attr-defined,no-redef]

CASES = ("last_values/1", "last_values/40", "located/1", "located/40")


def log_bytes(records: int, per_batch: int, seed: int = 7) -> bytes:
    rng = random.Random(seed)
    parts, offset = [], 0
    while offset < records:
        n = min(per_batch, records - offset)
        entries = [(f"txn-{rng.randrange(10_000):05d}-{'x' * rng.randrange(10, 30)}".encode(),
                    rng.randbytes(rng.randrange(60, 200))) for _ in range(n)]
        parts.append(encode_new_batch(entries, base_offset=offset, timestamp_ms=1_700_000_000_000 + offset))
        offset += n
    return b"".join(parts)


def runner(case: str, buf: bytes) -> Callable[[], int]:
    loop = case.split("/")[0]

    def last_values() -> int:
        into = LastValues()
        assert not list(BatchDecoder(buf).last_values(into, lambda offset, position: None, 4096))
        return into.records

    def located() -> int:
        return sum(len(batch.records) for _, _, batch in BatchDecoder(buf).located())

    return last_values if loop == "last_values" else located


def cpu_rates(records: int, repeat: int) -> dict[str, float]:
    out = {}
    buffers = {per: log_bytes(records, per) for per in (1, 40)}
    for case in CASES:
        run = runner(case, buffers[int(case.split("/")[1])])
        times = []
        for _ in range(repeat):
            start = time.process_time()
            assert run() == records
            times.append(time.process_time() - start)
        out[case] = records / statistics.median(times)
    return out


def instructions(records: int) -> dict[str, float]:
    """CPU instructions per record of each case (cachegrind; N and 4N records, the difference over 3N)."""
    out = {}
    with tempfile.TemporaryDirectory() as tmp:
        files = {}
        for per in (1, 40):
            for n in (records, 4 * records):
                files[per, n] = Path(tmp) / f"log-{per}-{n}"
                files[per, n].write_bytes(log_bytes(n, per))
        for case in CASES:
            counts = []
            for n in (records, 4 * records):
                done = subprocess.run(
                    ["valgrind", "--tool=cachegrind", "--cache-sim=no", f"--cachegrind-out-file={tmp}/cg",
                     sys.executable, __file__, "--one", case, "--file", str(files[int(case.split("/")[1]), n])],
                    capture_output=True, text=True, check=True, env={**os.environ, "PYTHONHASHSEED": "0"})
                match = re.search(r"I\s+refs:\s+([\d,]+)", done.stderr)
                assert match, done.stderr
                counts.append(int(match.group(1).replace(",", "")))
            out[case] = (counts[1] - counts[0]) / (3 * records)
    return out


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--records", type=int, default=200_000)
    parser.add_argument("--repeat", type=int, default=5)
    parser.add_argument("--instructions", action="store_true", help="count instructions with valgrind instead")
    parser.add_argument("--one", choices=CASES, help=argparse.SUPPRESS)  # one run of one case (under valgrind)
    parser.add_argument("--file", type=Path, help=argparse.SUPPRESS)  # its log
    args = parser.parse_args()
    tree = Path(__import__("kcoord").__file__).resolve().parents[1]
    if args.one:
        runner(args.one, args.file.read_bytes())()
        return
    print(f"tree {tree}, {args.records:,} records\n")
    if args.instructions:
        print("| loop / records per batch | CPU instructions per record |\n|---|---:|")
        for case, count in instructions(args.records).items():
            print(f"| {case} | {count:,.0f} |")
        return
    print("| loop / records per batch | records per CPU-second |\n|---|---:|")
    for case, rate in cpu_rates(args.records, args.repeat).items():
        print(f"| {case} | {rate:,.0f} |")


if __name__ == "__main__":
    main()
