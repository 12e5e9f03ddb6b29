#!/usr/bin/env bash
# CPU instructions per committed transaction through the transaction coordinator (group commit, 2,000 producers):
# a machine-independent companion to bench_txn.py's rates, which vary with the host's load. Runs bench_commit under
# valgrind's cachegrind (instruction counts only) for 1,000 and for 4,000 transactions after the same warm-up and
# prints (Ir(4,000) - Ir(1,000)) / 3,000, so start-up and warm-up cancel out. PYTHONHASHSEED is fixed.
# Usage: benchmarks/cachegrind_txn.sh   (needs valgrind; ~1 minute)
set -euo pipefail
cd "$(dirname "$0")/.."
out=$(mktemp -d)
trap 'rm -rf "$out"' EXIT
for n in 1000 4000; do
  PYTHONHASHSEED=0 valgrind --tool=cachegrind --cache-sim=no --cachegrind-out-file="$out/cg.$n" \
    .venv/bin/python -c "
import sys; sys.path.insert(0, 'benchmarks')
import bench_txn as b
from kcoord.impl.storage.log import Durability
b.bench_commit(Durability.group(0, 1 << 20), b.PRODUCERS, $n)
" > "$out/log.$n" 2>&1
done
ir() { grep -E 'I\s+refs' "$out/log.$1" | sed 's/.*refs: *//; s/,//g'; }
echo "instructions per committed transaction: $(( ($(ir 4000) - $(ir 1000)) / 3000 ))"
