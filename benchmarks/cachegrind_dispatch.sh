#!/usr/bin/env bash
# CPU instructions per committed transaction through a `kcoord serve` node's dispatcher, in process (what issue 31's
# sessions compare, step by step): benchmarks/profile_dispatch.py --workload txn (8 producers, bench_clients' commit:
# AddPartitionsToTxn, Produce to 2 partitions, AddOffsetsToTxn, TxnOffsetCommit, EndTxn) under valgrind's cachegrind
# (instruction counts only) for 100 and for 400 transactions after the same warm-up; prints
# (Ir(400) - Ir(100)) / 304 (96 and 400 transactions are run: 8 producers x 12 and x 50), so start-up and warm-up
# cancel out, and the AddPartitionsToTxn retries of both runs (240 and 544 before fe7bdbd, ~276,000 instructions each;
# none since: the EndTxn's flush now writes the Complete* record, so a tree before it counts ~1 retry per transaction).
# The count includes the client's frame building and answer checks, the same code for every tree. PYTHONHASHSEED is
# fixed. Usage: benchmarks/cachegrind_dispatch.sh [TREE [WORKLOAD]]   (~30 s; TREE: another checkout's root, run with
# its own benchmarks/profile_dispatch.py; put its kcoord first with PYTHONPATH, see benchmarks/compile_hot.py's layout;
# WORKLOAD: txn, the default, or txn2: Kafka 4.0's Java client's Transactions V2 transaction, Produce v12 to both
# partitions, TxnOffsetCommit v5, EndTxn v5, the leader adding the partitions)
set -euo pipefail
root="$(cd "$(dirname "$0")/.." && pwd)"
tree="${1:-$root}"
workload="${2:-txn}"
out=$(mktemp -d)
trap 'rm -rf "$out"' EXIT
cd /tmp  # not the repository root (its kcoord/ would shadow a PYTHONPATH tree) nor a fresh folder (measured: the
# 100-transaction run then counted ~14e9 instructions more, the 400 one not; not explained)
for n in 100 400; do
  PYTHONHASHSEED=0 valgrind --tool=cachegrind --cache-sim=no --cachegrind-out-file="$out/cg.$n" \
    "$root/.venv/bin/python" "$tree/benchmarks/profile_dispatch.py" --workload "$workload" --runs 1 --requests "$n" \
    > "$out/log.$n" 2>&1
done
ir() { grep -E 'I\s+refs' "$out/log.$1" | sed 's/.*refs: *//; s/,//g'; }
retries() { sed -n 's/.*(\([0-9]*\) retries.*/\1/p' "$out/log.$1"; }
echo "instructions per committed transaction: $(( ($(ir 400) - $(ir 100)) / 304 )) (retries $(retries 100), $(retries 400))"
