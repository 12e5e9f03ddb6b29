#!/usr/bin/env bash
# Issue 31's compiled-server design, measured: impl/native/server (kcoord's compiled server, under construction; not
# yet started by `kcoord serve`) serves bench_clients.py's two transaction workloads — txn2 (Transactions V2, as Kafka
# 4.0's Java client sends it) and txn (V1) — from one thread, with the same durable work per transaction as `kcoord
# serve`, its transaction coordinator's decisions taken by the Transaction machine's table generated from spec/ into
# Rust (`kcoord gen` writes every machine's into impl/_generated/rust/). Builds it as `make native` does; shows that
# each machine's generated table answers as kcoord's Python table does (kcoord.conformance.rust_tables | check-tables:
# 100,000 random cases per machine; the suite runs 20,000), that the server answers as kcoord serve does
# (same_answers.py: the same requests to both, every answer compared byte for byte), and that the logs it writes are
# steps of the spec (`kcoord check-traces` over its data directory after a run of each workload in each mode); then
# measures it beside `kcoord serve` with bench_server.py (RUNS runs of SECONDS s each, the targets alternating; txn2
# and txn; os and fsync).
# Usage: benchmarks/compiled_server.sh [RUNS [SECONDS]]   (~5 min with the defaults 5 and 3; needs cargo)
set -euo pipefail
root="$(cd "$(dirname "$0")/.." && pwd)"
here="$root/benchmarks/compiled_server"
runs="${1:-5}"
seconds="${2:-3}"
py="$root/.venv/bin/python"
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
make -C "$root" --no-print-directory native
binary="$root/build/native/release/kcoord-native"
cd "$root"
for machine in $("$py" -c "from kcoord.model.loader import bundled_machines; print(*bundled_machines())"); do
  "$py" -m kcoord.conformance.rust_tables "$machine" 100000 | "$root/build/native/release/check-tables" "$machine"
done
"$py" "$here/same_answers.py" "$binary"
for workload in txn2 txn; do
  for mode in os fsync; do
    "$py" "$here/run_once.py" "$binary" "$work/$workload-$mode" "$mode" 2 "$workload"
    "$root/.venv/bin/kcoord" check-traces "$work/$workload-$mode" --engine python | tail -3
  done
done
"$py" benchmarks/bench_server.py --workloads txn2,txn --targets kcoord,compiled --durability os,fsync \
  --runs "$runs" --seconds "$seconds"
