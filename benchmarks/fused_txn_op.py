"""MEASUREMENT PROTOTYPE (issue 31), not wired into the server: one transaction-coordinator operation, AddPartitions
(AddPartitionsToTxn / AddOffsetsToTxn) on an Ongoing transaction, done by a fused path — one hand-written function
doing what the generic machinery does for (Ongoing, AddPartitions) — against today's path, side by side.

Today's path for one request: the front door (`TransactionCoordinator.add_partitions`) → `_submit` (routing, an
`_Answer` completion, a `functools.partial` handler) → `Shard.submit` → `plans.add_partitions` (args dict,
`TxnContext.decide`: instance and pending look-ups, `MachineTable.decide`: the rows of (Ongoing, AddPartitions) tried
in order through their generated `local` guards, the effect, the bounds and edge checks, `Decision`, `Change`;
`_single_write`: the record encoded, a `Plan`) → `Shard._execute` (the open batch) → the loop's `poll`:
`write_open` (one batch appended to the log) → `complete_durable` (`check_record`: the record decoded again and
compared with the post-state; `apply`: edge and order checks, the post-state installed, the trace row) → the answer.

The fused path (`FusedCoordinator._submit`, taken only for AddPartitions on an Ongoing instance of a coalescing
shard; everything else goes the generic way): the rows of spec/transaction.sm for (Ongoing, AddPartitions) —
12 INVALID_PRODUCER_ID_MAPPING, 13 PRODUCER_FENCED, 14 CONCURRENT_TRANSACTIONS, 16 NONE (already added), 19 the
Ongoing → Ongoing transition — as straight-line code in the same order, the effect of row 19 written out, only the
changed bounded variables checked (the others were checked when stored), the record encoded by the same codec and
put in the same open batch; once durable, one function installs the post-state and emits the trace row (optionally
after the same record check). No `Decision`, `Change`, args dict or row loop unless a full trace wants the row.
`FusedCoordinator.__init__` asserts that the table's rows are the ones written out here (a spec change fails it).

Run: ``.venv/bin/python benchmarks/fused_txn_op.py [--check] [--runs 5] [--ids 500] [--rounds 3] [--steps]
[--cachegrind [--kind write|reject]]``. ``--check``: the differential check (answers, trace rows, instances, log
bytes; two coordinators fed the same script of 600 turns with rejections). Default: CPU µs per operation
(process_time), generic and fused alternating, medians. ``--steps``: today's path step by step (timeit, CPU µs).
``--cachegrind``: instructions per operation under valgrind (two round counts after the same set-up, the difference
divided by the ops between them; ~1 minute per variant).
"""

from __future__ import annotations

import argparse
import contextlib
import functools
import os
import random
import re
import statistics
import subprocess
import sys
import tempfile
import time
import timeit
from collections.abc import Callable
from pathlib import Path
from typing import Any

from kcoord.impl.errors import Errors, IllegalStateError, KafkaError
from kcoord.impl.interfaces import TopicPartition
from kcoord.impl.runtime.clock import Clock, ManualClock, SystemClock
from kcoord.impl.runtime.completion import Completion
from kcoord.impl.runtime.shard import MAX_OPEN_RECORDS, Plan, Shard, _InFlight
from kcoord.impl.runtime.trace import MemorySink, TapSink, Tracer, TraceSink
from kcoord.impl.server.metrics import MetricsTap, ServerMetrics
from kcoord.impl.statemachine import Decision
from kcoord.impl.storage.durability import Durability
from kcoord.impl.storage.producer_ids import ProducerIdBlockStore, ProducerIdManager, store_requester
from kcoord.impl.txn import TransactionCoordinator, TxnConfig, plans
from kcoord.impl.txn.coordinator import _Answer
from kcoord.impl.txn.records import decode_persisted
from kcoord.impl.txn.shard_spec import MACHINE

sys.path.insert(0, str(Path(__file__).resolve().parent))
from bench_txn import OneBrokerRouter  # the same in-process broker as bench_txn's coordinator runs

ONGOING = "Ongoing"
EVENT = "AddPartitions"
INT64 = (-(1 << 63), (1 << 63) - 1)
#: the rows of (Ongoing, AddPartitions) this prototype writes out, as the generated table has them
EXPECTED_ROWS = ((12, "reject", "not (known and pid == producer_id)"), (13, "reject", "not (epoch == producer_epoch)"),
                 (14, "reject", "pending"), (16, "reject", "parts subset partitions"),
                 (19, "transition", "not (parts subset partitions)"))


def _same(error: str) -> str:
    return error


class FusedCoordinator(TransactionCoordinator):
    """`TransactionCoordinator` whose AddPartitions on an Ongoing instance takes the fused path (prototype)."""

    def __init__(self, *args: Any, check_records: bool = True, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        table = self.table
        rows = table.index[(ONGOING, EVENT)]
        found = tuple((r.index, r.kind, r.condition) for r in rows)
        if found != EXPECTED_ROWS:
            raise IllegalStateError(f"the spec's (Ongoing, AddPartitions) rows changed: {found}")
        if ONGOING not in table.valid_previous[ONGOING] or ONGOING in table.pending_states:
            raise IllegalStateError("the prototype assumes Ongoing -> Ongoing is an edge and Ongoing is not pending")
        self._rows = {r.index: r for r in rows}
        self._txn_version_bounds = next((v.lo, v.hi) for v in table.variables if v.name == "client_txn_version")
        self.check_records = check_records
        self._on_failure = plans._failure_answer(_same)
        self.taken = dict.fromkeys(self._rows, 0)  # how often each row was answered by the fused path

    def _submit(self, transactional_id: str, handler: Callable[..., Plan], args: tuple[Any, ...],
                respond: Callable[[str], Any], finish: Callable[[Any], Any] | None = None) -> Completion[Any]:
        if handler is not plans.add_partitions:
            return super()._submit(transactional_id, handler, args, respond, finish)
        runtime = self.runtime
        partition = runtime.partition_for(transactional_id)
        try:
            shard = runtime.shard(partition)
        except KafkaError as e:
            return Completion.of(respond(e.name))
        key = (transactional_id,)
        instance = shard.instances[MACHINE].get(key)
        if instance is None or instance["state"] != ONGOING or shard.failed is not None or not shard._coalesce:
            return super()._submit(transactional_id, handler, args, respond, finish)
        return self._fused_add(shard, key, instance, args, respond)

    def _fused_add(self, shard: Shard, key: tuple[str], s: dict[str, Any], args: tuple[Any, ...],
                   respond: Callable[[str], Any]) -> Completion[Any]:
        """Rows 12, 13, 14, 16, 19 of spec/transaction.sm (the (Ongoing, AddPartitions) rows), in order."""
        pid, epoch, parts, txn_version = args
        now = self.clock.now_ms()  # the generic handler reads the clock before deciding, whatever the row
        touched = ((MACHINE, key),)
        pending = shard._pending.get(touched[0], 0) > 0
        if not (s["producer_id"] != -1 and pid == s["producer_id"]):
            return self._reject(shard, key, s, 12, pid, epoch, parts, txn_version, now, pending, respond)
        if epoch != s["producer_epoch"]:
            return self._reject(shard, key, s, 13, pid, epoch, parts, txn_version, now, pending, respond)
        if pending:
            return self._reject(shard, key, s, 14, pid, epoch, parts, txn_version, now, pending, respond)
        if parts <= s["partitions"]:
            return self._reject(shard, key, s, 16, pid, epoch, parts, txn_version, now, pending, respond)
        # row 19: Ongoing -> Ongoing, its effect written out; the bounded variables it assigns are checked
        if not now >= 0:
            raise IllegalStateError(f"AddPartitions row 19: precondition now_ms >= 0 violated ({now})")
        post = {**s, "partitions": s["partitions"] | parts, "txn_last_update_timestamp_ms": now,
                "client_txn_version": txn_version, "previous_producer_id": s["producer_id"], "state": ONGOING}
        lo, hi = self._txn_version_bounds
        if not (lo <= txn_version <= hi and INT64[0] <= now <= INT64[1]):
            raise IllegalStateError(f"AddPartitions row 19 puts a variable out of bounds: {post}")
        self.taken[19] += 1
        transactional_id = key[0]
        codec = self.codec
        record = (codec.key(transactional_id), codec.encode(post))
        out: _Answer[Any] = _Answer(respond, respond)
        after = functools.partial(self._install, shard, key, s, post, record, (pid, epoch, parts, txn_version, now))
        plan = Plan(records=[record], response=Errors.NONE, on_failure=self._on_failure, after_apply=after)
        shard.on_write(shard)  # `Shard._execute`'s group-commit branch, for this one record
        if len(shard._open_records) + 1 > MAX_OPEN_RECORDS:
            shard.write_open()
        shard._hold(touched)
        if not shard._open:
            shard._open_since_ms = self.clock.now_ms()
        shard._open.append(_InFlight(plan, out, touched, len(shard._open_records)))
        shard._open_records.append(record)
        return out

    def _install(self, shard: Shard, key: tuple[str], pre: dict[str, Any], post: dict[str, Any],
                 record: tuple[bytes, bytes], trace_args: tuple[Any, ...]) -> None:
        """Once durable: (the record check), the order check `Shard.apply` makes, the post-state, the trace row."""
        if self.check_records:
            spec = shard.spec
            written = decode_persisted(record[1], spec._partitions)
            if written[:len(spec._checked)] != spec._expected(post):
                raise IllegalStateError(f"transaction {key[0]!r}: the record does not describe {post}")
        instances = shard.instances[MACHINE]
        current = instances.get(key)
        if current is None or current["state"] != ONGOING:
            raise IllegalStateError(f"Transaction {key[0]}: decided in Ongoing but the instance is {current}")
        instances[key] = post
        tracer = shard.tracer
        if tracer.wants(MACHINE, "transition"):
            self._trace(shard, key, pre, post, 19, trace_args, False)

    def _trace(self, shard: Shard, key: tuple[str], pre: dict[str, Any], post: dict[str, Any] | None, row: int,
               trace_args: tuple[Any, ...], pending: bool) -> None:
        """The row `Shard._trace` emits (a tap with no file behind it gets its six columns directly)."""
        seq = shard.next_seq(MACHINE, key)
        sink = shard.tracer.sink
        ts_ms = self.clock.now_ms()
        if isinstance(sink, TapSink) and sink.inner is None:
            sink.observe(MACHINE, {"kind": self._rows[row].kind, "event": EVENT, "key": key[0], "ts_ms": ts_ms,
                                   "from_state": ONGOING, "to_state": ONGOING})
            return
        pid, epoch, parts, txn_version, now = trace_args
        args = {"pid": pid, "epoch": epoch, "parts": parts, "txn_version": txn_version, "now_ms": now}
        shard.tracer.decision(self.table, Decision(MACHINE, EVENT, self._rows[row], pre, post), key=key[0], seq=seq,
                              ts_ms=ts_ms, coordinator_epoch=shard.coordinator_epoch, args=args, pending=pending)

    def _reject(self, shard: Shard, key: tuple[str], s: dict[str, Any], row: int, *rest: Any) -> Completion[Any]:
        *trace_args, pending, respond = rest
        self.taken[row] += 1
        if shard.tracer.wants(MACHINE, "reject"):
            self._trace(shard, key, s, None, row, tuple(trace_args), pending)
        return Completion.of(respond(self._rows[row].error))


# ---------------------------------------------------------------------------------------------- set-up


def make(data_dir: Path, clock: Clock, sink: TraceSink | None, fused: bool | type[FusedCoordinator],
         check_records: bool = True) -> TransactionCoordinator:
    """A coordinator as `kcoord serve --durability os` runs it (os durability; the server's metrics tap); `fused`:
    a `FusedCoordinator` (or the subclass given)."""
    ids = ProducerIdManager(store_requester(ProducerIdBlockStore(data_dir / "pids")), clock_ms=clock.now_ms)
    kwargs: dict[str, Any] = {"data_dir": data_dir / "logs", "clock": clock, "router": OneBrokerRouter(),
                              "producer_ids": ids, "config": TxnConfig(), "tracer": Tracer(sink),
                              "durability": Durability.os()}
    cls = fused if isinstance(fused, type) else FusedCoordinator
    coordinator = cls(**kwargs, check_records=check_records) if fused else TransactionCoordinator(**kwargs)
    coordinator.load_all()
    return coordinator


def prepare(coordinator: TransactionCoordinator, n: int) -> dict[str, tuple[int, int]]:
    """`n` producers, each with an Ongoing transaction holding bench-0: id -> (producer id, epoch)."""
    producers = {}
    for i in range(n):
        tid = f"txn-{i}"
        init = coordinator.init_producer_id(tid, 60_000)
        coordinator.poll()
        answer = init.result()
        producers[tid] = (answer.producer_id, answer.producer_epoch)
        added = coordinator.add_partitions(tid, *producers[tid], [TopicPartition("bench", 0)], request_version=3)
        coordinator.poll()
        assert added.result() == {TopicPartition("bench", 0): Errors.NONE}, added.result()
    return producers


def writes(coordinator: TransactionCoordinator, producers: dict[str, tuple[int, int]], rounds: int) -> int:
    """`rounds` AddPartitions per producer, each adding one new partition (row 19), each in its own loop turn (as
    over sockets: one request per turn) — answered once its record is appended."""
    ops = 0
    add, poll = coordinator.add_partitions, coordinator.poll
    for r in range(1, rounds + 1):
        tp = [TopicPartition("bench", r)]
        for tid, (pid, epoch) in producers.items():
            done = add(tid, pid, epoch, tp, request_version=3)
            poll()
            if not done.done:
                raise AssertionError(f"{tid}: not answered after its loop turn")
            ops += 1
    return ops


def rejects(coordinator: TransactionCoordinator, producers: dict[str, tuple[int, int]], rounds: int) -> int:
    """Rejections answered at once: PRODUCER_FENCED (row 13), then NONE for a partition already added (row 16)."""
    ops = 0
    add = coordinator.add_partitions
    tp = [TopicPartition("bench", 0)]
    for _ in range(rounds):
        for tid, (pid, epoch) in producers.items():
            add(tid, pid, epoch + 1, tp, request_version=3)
            add(tid, pid, epoch, tp, request_version=3)
            ops += 2
    return ops


# ---------------------------------------------------------------------------------------------- differential check


def _log_bytes(root: Path) -> dict[str, bytes]:
    return {str(p.relative_to(root)): p.read_bytes() for p in sorted(root.rglob("*")) if p.is_file()
            and p.suffix == ".log"}


def differential(ops: int = 600, seed: int = 31, fused: type[FusedCoordinator] = FusedCoordinator
                 ) -> dict[str, int]:
    """Two coordinators (generic, `fused`), the same clock readings, the same script: the same answers, trace rows,
    instances, pending holds and log bytes. Returns how often each answer was seen and each row was taken by the
    fused path."""
    rng = random.Random(seed)
    with tempfile.TemporaryDirectory() as d, contextlib.ExitStack() as shutdown:
        sides = []
        for name, side in (("generic", False), ("fused", fused)):
            clock, sink = ManualClock(1_700_000_000_000), MemorySink()
            sides.append((make(Path(d) / name, clock, sink, side), clock, sink))
            shutdown.callback(sides[-1][0].shutdown)  # however the comparison ends: their logs' descriptors closed
        producers = [prepare(c, 40) for c, _, _ in sides]
        assert producers[0] == producers[1]
        ids = sorted(producers[0])
        seen: dict[str, int] = {}
        for step in range(ops):
            turn = [_op(rng, ids, producers[0], step) for _ in range(rng.choice((1, 1, 1, 2, 3)))]
            answers = []
            for coordinator, clock, _ in sides:
                clock.advance(1)
                done = [call(coordinator) for call in turn]
                coordinator.poll()
                answers.append([c.result() for c in done])
            if answers[0] != answers[1]:
                raise AssertionError(f"step {step}: generic {answers[0]} != fused {answers[1]}")
            for answer in answers[0]:
                error = answer if isinstance(answer, str) else getattr(answer, "error", None) or \
                    next(iter(answer.values()))
                seen[str(error)] = seen.get(str(error), 0) + 1
        (g, _, g_sink), (f, _, f_sink) = sides
        for p, shard in g.runtime.shards.items():
            other = f.runtime.shards[p]
            if shard.instances != other.instances or shard._seq != other._seq or shard._pending != other._pending:
                raise AssertionError(f"partition {p}: in-memory state differs")
        if g_sink.all_rows() != f_sink.all_rows():
            raise AssertionError("trace rows differ")
        shutdown.close()
        if _log_bytes(Path(d) / "generic") != _log_bytes(Path(d) / "fused"):
            raise AssertionError("log bytes differ")
        seen["trace rows"] = len(g_sink.all_rows())
        assert isinstance(f, FusedCoordinator)
        seen.update({f"fused row {row}": n for row, n in f.taken.items()})
        return seen


def _op(rng: random.Random, ids: list[str], producers: dict[str, tuple[int, int]], step: int
        ) -> Callable[[TransactionCoordinator], Completion[Any]]:
    tid = rng.choice(ids)
    pid, epoch = producers[tid]
    kind = rng.random()
    version = rng.choice((0, 1, 2, 3))  # < 2: PRODUCER_FENCED is downgraded to INVALID_PRODUCER_EPOCH
    if kind < 0.06:  # an EndTxn now and then: Prepare*/Complete* states take the generic path for AddPartitions
        return lambda c: c.end_txn(tid, pid, epoch, "COMMIT", 3)
    if kind < 0.12:
        pid = pid + 1000  # row 12
    elif kind < 0.2:
        epoch = epoch + 1  # row 13
    elif kind < 0.24:
        tid = f"unknown-{step}"  # Empty instance: generic path, row 12
    elif kind < 0.27:
        return lambda c: c.add_offsets(tid, pid, epoch, f"group-{step % 7}", request_version=version)
    parts = [TopicPartition("bench", rng.randrange(12)) for _ in range(rng.choice((1, 2)))]
    return lambda c: c.add_partitions(tid, pid, epoch, parts, request_version=version)


# ---------------------------------------------------------------------------------------------- measurements


def cpu_per_op(fused: bool, check_records: bool, n: int, rounds: int, kind: str) -> float:
    with tempfile.TemporaryDirectory() as d:
        coordinator = make(Path(d), SystemClock(), MetricsTap(ServerMetrics(), None), fused, check_records)
        producers = prepare(coordinator, n)
        run = writes if kind == "write" else rejects
        started = time.process_time()
        ops = run(coordinator, producers, rounds)
        spent = time.process_time() - started
        coordinator.shutdown()
        return spent / ops * 1e6


VARIANTS = (("generic", False, True), ("fused", True, True), ("fused, no record check", True, False))


def measure(runs: int, n: int, rounds: int) -> None:
    print(f"load average at start: {os.getloadavg()}")
    for kind in ("write", "reject"):
        figures: dict[str, list[float]] = {name: [] for name, _, _ in VARIANTS}
        for _ in range(runs):  # alternating, so that the machine's load hits every variant alike
            for name, fused, check in VARIANTS:
                figures[name].append(cpu_per_op(fused, check, n, rounds, kind))
        base = statistics.median(figures["generic"])
        for name, values in figures.items():
            med = statistics.median(values)
            print(f"{kind:6} {name:24} median {med:6.1f} CPU-µs/op ({med / base:.2f}x)  runs "
                  + ", ".join(f"{v:.1f}" for v in values))
    print(f"load average at end: {os.getloadavg()}")


def steps() -> None:
    """Today's path for one row-19 AddPartitions, step by step, then the whole operation on each path (timeit, CPU µs
    per call, median of 5 repeats of 2,000). Every whole operation starts from the same Ongoing instance (holding
    bench-0) and adds bench-1: row 19 each time, the same record size."""
    with tempfile.TemporaryDirectory() as d:
        made = {name: make(Path(d) / name, SystemClock(), MetricsTap(ServerMetrics(), None), fused, check)
                for name, fused, check in VARIANTS}
        c = made["generic"]
        producers = {name: prepare(coordinator, 1) for name, coordinator in made.items()}
        tid, (pid, epoch) = next(iter(producers["generic"].items()))
        key = (tid,)
        bases = {name: _shard_of(coordinator, tid).instances[MACHINE][key] for name, coordinator in made.items()}
        shard = c.runtime.shard(c.runtime.partition_for(tid))
        parts = frozenset({"bench-1"})
        plan = plans.add_partitions(c.ctx, shard, tid, pid, epoch, parts, 0)
        change, record = plan.changes[0], plan.records[0]
        instance = shard.instances[MACHINE][key]
        args = {"pid": pid, "epoch": epoch, "parts": parts, "txn_version": 0, "now_ms": c.clock.now_ms()}
        post = change.decision.post
        assert post is not None
        cases: list[tuple[str, Callable[[], object]]] = [
            ("MachineTable.decide (rows 12-14, 16, 19; effect; bounds)",
             lambda: c.table.decide(instance, EVENT, args, pending=False, lazy=False)),
            ("TxnContext.decide (look-ups + decide + Change)", lambda: c.ctx.decide(shard, key, EVENT, dict(args))),
            ("encode the record (TxnContext.record)", lambda: c.ctx.record(post)),
            ("plans.add_partitions (the whole handler: decide + encode + Plan)",
             lambda: plans.add_partitions(c.ctx, shard, tid, pid, epoch, parts, 0)),
            ("check_record (decode what was written, compare)", lambda: shard.spec.check_record(change, record)),
            ("Shard.apply (checks, install, trace to the metrics tap)", lambda: shard.apply(change)),
            ("PartitionLog.append (one record, one batch, os)",
             lambda: shard.log.append([record], timestamp_ms=1, partition_leader_epoch=shard.coordinator_epoch)),
        ]
        for name, coordinator in made.items():
            cases.append((f"one whole op, {name} (add_partitions + poll)",
                          functools.partial(_one_op, coordinator, tid, pid, epoch, bases[name])))
        for name, fn in cases:
            values = [t / 2_000 * 1e6 for t in timeit.repeat(fn, number=2_000, repeat=5, timer=time.process_time)]
            print(f"{statistics.median(values):7.2f} µs  {name}")
        for name, coordinator in made.items():
            request, turn = _split(coordinator, tid, pid, epoch, bases[name])
            print(f"{name}: the request (front door -> open batch) {request:.2f} µs, its loop turn (poll: append, "
                  f"durable, check, apply, answer) {turn:.2f} µs (process_time, median of 5 x 2,000)")
        for coordinator in made.values():
            coordinator.shutdown()


def _split(c: TransactionCoordinator, tid: str, pid: int, epoch: int, base: dict[str, Any]) -> tuple[float, float]:
    """The whole op's two halves, timed apart (CPU time per call: each adds a clock read)."""
    instances = _shard_of(c, tid).instances[MACHINE]
    requests, turns = [], []
    for _ in range(5):
        request = turn = 0
        for _ in range(2_000):
            instances[(tid,)] = base
            t0 = time.process_time_ns()
            c.add_partitions(tid, pid, epoch, _BENCH_1, request_version=3)
            t1 = time.process_time_ns()
            c.poll()
            turn += time.process_time_ns() - t1
            request += t1 - t0
        requests.append(request / 2_000 / 1e3)
        turns.append(turn / 2_000 / 1e3)
    return statistics.median(requests), statistics.median(turns)


_BENCH_1 = [TopicPartition("bench", 1)]


def _shard_of(c: TransactionCoordinator, tid: str) -> Shard:
    return c.runtime.shard(c.runtime.partition_for(tid))


def _one_op(c: TransactionCoordinator, tid: str, pid: int, epoch: int, base: dict[str, Any]) -> None:
    """Row 19 from the same Ongoing instance each time (`base`, holding bench-0, put back first)."""
    _shard_of(c, tid).instances[MACHINE][(tid,)] = base
    done = c.add_partitions(tid, pid, epoch, _BENCH_1, request_version=3)
    c.poll()
    assert done.done and done.result() == {_BENCH_1[0]: Errors.NONE}, done.result()


def cachegrind(n: int, rounds_small: int, rounds_large: int, kind: str) -> None:
    """Instructions per op (`kind`: write or reject): each variant run under valgrind for two round counts after the
    same set-up, the difference divided by the ops between them."""
    script = Path(__file__).resolve()
    for name, _, _ in VARIANTS:
        counts = []
        for rounds in (rounds_small, rounds_large):
            with tempfile.TemporaryDirectory() as d:
                out = Path(d) / "cg.out"
                result = subprocess.run(
                    ["valgrind", "--tool=cachegrind", "--cache-sim=no", f"--cachegrind-out-file={out}",
                     sys.executable, str(script), "--one", name, "--kind", kind, "--ids", str(n), "--rounds",
                     str(rounds)],
                    capture_output=True, text=True, env={**os.environ, "PYTHONHASHSEED": "0"}, check=True)
                found = re.search(r"I\s+refs:\s+([\d,]+)", result.stderr)
                assert found is not None, result.stderr[-2000:]
                counts.append(int(found.group(1).replace(",", "")))
        per_op = (counts[1] - counts[0]) / (n * (rounds_large - rounds_small) * (1 if kind == "write" else 2))
        print(f"{name:24} {per_op:10,.0f} instructions per {kind} op")


def one(name: str, n: int, rounds: int, kind: str) -> None:
    """(under valgrind) set up, then `rounds` rounds of `kind` ops of variant `name`."""
    _, fused, check = next(v for v in VARIANTS if v[0] == name)
    cpu_per_op(fused, check, n, rounds, kind)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--check", action="store_true")
    parser.add_argument("--steps", action="store_true")
    parser.add_argument("--cachegrind", action="store_true")
    parser.add_argument("--one", help=argparse.SUPPRESS)
    parser.add_argument("--kind", choices=("write", "reject"), default="write", help="--cachegrind's operations")
    parser.add_argument("--runs", type=int, default=5)
    parser.add_argument("--ids", type=int, default=500)
    parser.add_argument("--rounds", type=int, default=3)
    options = parser.parse_args()
    if options.one:
        one(options.one, options.ids, options.rounds, options.kind)
    elif options.check:
        print(differential())
    elif options.steps:
        steps()
    elif options.cachegrind:
        cachegrind(options.ids, 1, options.rounds, options.kind)
    else:
        measure(options.runs, options.ids, options.rounds)


if __name__ == "__main__":
    main()
