#!/usr/bin/env bash
# Issue 31's "compiled core" route, measured on one slice: the coordinator logs' batch encoder
# (`impl/storage/batch.py` `encode_new_batch`, ~10 calls per committed transaction) in Rust through PyO3
# (benchmarks/compiled_slice/: a prototype, not part of kcoord's build). Builds it with cargo (crates.io), lays out
# HEAD twice as the installed package (A as it is, B with batch.patch: the Python function calls the compiled one),
# checks B's bytes against A's encoder (same_bytes.py), then counts instructions with valgrind's cachegrind: per call
# (per_call.py, 1,000 and 21,000 calls: the encoder both ways, and a call that does nothing in Python and in Rust)
# and per committed transaction (cachegrind_dispatch.sh, txn2 and txn, on each tree).
# Usage: benchmarks/compiled_slice.sh   (5-10 min; needs cargo and valgrind)
set -euo pipefail
root="$(cd "$(dirname "$0")/.." && pwd)"
here="$root/benchmarks/compiled_slice"
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
cargo build --release --quiet --manifest-path "$here/Cargo.toml" --target-dir "$root/build/compiled_slice"
for t in A B; do
  mkdir -p "$work/$t/kcoord"
  git -C "$root" archive HEAD | tar -x -C "$work/$t/kcoord"
  cp "$work/$t/kcoord/kcoord/"*.py "$work/$t/kcoord/"
done
patch -s -d "$work/B/kcoord" -p1 < "$here/batch.patch"
cp "$root/build/compiled_slice/release/libkcoord_fast.so" "$work/B/kcoord_fast.abi3.so"
cd /tmp
PYTHONPATH="$work/B" "$root/.venv/bin/python" "$here/same_bytes.py"
ir() {  # instructions of per_call.py MODE N
  PYTHONPATH="$work/B" valgrind --tool=cachegrind --cache-sim=no --cachegrind-out-file=/dev/null \
    "$root/.venv/bin/python" "$here/per_call.py" "$1" "$2" 2>&1 | grep -E 'I\s+refs' | sed 's/.*refs: *//; s/,//g'
}
none=$(( ($(ir none 21000) - $(ir none 1000)) / 20000 ))
for mode in py rs direct noop-py noop-rs; do
  echo "per_call.py $mode: $(( ($(ir "$mode" 21000) - $(ir "$mode" 1000)) / 20000 - none )) instructions per call"
done
for workload in txn2 txn; do
  for t in A B; do
    echo "$workload, tree $t ($([ $t = A ] && echo Python || echo compiled) encoder): $(PYTHONPATH="$work/$t" \
      "$root/benchmarks/cachegrind_dispatch.sh" "$work/$t/kcoord" "$workload" | tail -1)"
  done
done
