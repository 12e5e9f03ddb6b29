"""The compiled server (impl/native/server) under a bench_clients.py workload (txn2, the default, or txn; 8
connections) for SECONDS, its data directory kept for `kcoord check-traces`: ``python run_once.py BINARY DATA_DIR
os|fsync SECONDS [WORKLOAD]``. Prints what was done."""

from __future__ import annotations

import asyncio
import subprocess
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))
from bench_clients import create_topics, measure


def main() -> None:
    binary, data_dir, durability, seconds = sys.argv[1], sys.argv[2], sys.argv[3], float(sys.argv[4])
    workload = sys.argv[5] if len(sys.argv) > 5 else "txn2"
    server = subprocess.Popen([binary, data_dir, durability], stdout=subprocess.PIPE, text=True)
    assert server.stdout is not None
    try:
        bootstrap = server.stdout.readline().strip()
        asyncio.run(create_topics(bootstrap))
        counts = asyncio.run(measure(bootstrap, workload, 8, durability, seconds))
    finally:
        server.terminate()
        server.wait()
    print(f"run_once: {workload}, {durability}, {counts.done:,} committed transactions in {counts.elapsed_s:.1f} s "
          f"({counts.done / counts.elapsed_s:,.0f}/s, one client process), {counts.retries} retries, "
          f"{counts.epoch_bumps:,} epoch bumps; logs in {data_dir}")


if __name__ == "__main__":
    main()
