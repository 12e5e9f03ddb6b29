"""What every driver shares: actions, outcomes, the in-process cluster a driver runs on, and trace/log reading.

Owns: `Action` (one step of a conformance test in the spec's words: a spec event with the request's arguments, or
one of the few environment steps a driver documents, such as `Reload`), `Outcome` (what the implementation answered
and the trace rows it emitted meanwhile), `Driver` (the protocol `Lockstep` and the path search use) and
`ClusterDriver` (the common part: a real `Cluster` on real logs in a private directory, a `ManualClock`, a
`MemorySink` for the trace, group commit with explicit flushes so that a test decides when a write becomes durable,
deterministic member ids, and the loops that settle the cluster).
Must not import: kcoord.cli.
"""

from __future__ import annotations

import shutil
import tempfile
from collections.abc import Callable, Iterator, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Protocol

from kcoord.impl.cluster import Cluster, ClusterConfig
from kcoord.impl.runtime.clock import ManualClock
from kcoord.impl.runtime.completion import Completion
from kcoord.impl.runtime.shard import Shard
from kcoord.impl.runtime.trace import MemorySink
from kcoord.impl.storage.batch import RecordBatch
from kcoord.impl.storage.log import Durability

Key = tuple[Any, ...]
Values = dict[str, Any]
TraceRow = dict[str, Any]

START_MS = 1_000
#: writes become durable only when a driver flushes (never on their own: the delay is longer than any test)
HELD_DURABILITY = Durability.group(2**62, 2**62)


def _frozen(value: Any) -> Any:
    if isinstance(value, list | tuple | set | frozenset):
        return tuple(sorted(value))
    return value


@dataclass(frozen=True, slots=True)
class Action:
    """One step: `name` is a spec event (its request arguments in `args`) or a documented environment step."""

    name: str
    args: Mapping[str, Any] = field(default_factory=dict)

    def render(self) -> str:
        inner = ", ".join(f"{k}={_show(v)}" for k, v in sorted(self.args.items()))
        return f"{self.name}({inner})"

    def to_json(self) -> dict[str, Any]:
        return {"action": self.name, "args": {k: _json(v) for k, v in sorted(self.args.items())}}

    @staticmethod
    def from_json(data: Mapping[str, Any]) -> Action:
        return Action(str(data["action"]), dict(data.get("args", {})))

    def arg(self, name: str, default: Any = None) -> Any:
        return self.args.get(name, default)

    def frozen(self) -> tuple[str, tuple[tuple[str, Any], ...]]:
        return self.name, tuple(sorted((k, _frozen(v)) for k, v in self.args.items()))


def _json(value: Any) -> Any:
    if isinstance(value, frozenset | set):
        return sorted(value)
    if isinstance(value, tuple):
        return list(value)
    if isinstance(value, Action):
        return value.to_json()
    return value


def _show(value: Any) -> str:
    if isinstance(value, list | tuple | set | frozenset):
        return "{" + ", ".join(_show(v) for v in sorted(value)) + "}"
    if isinstance(value, Mapping):
        return Action.from_json(value).render()
    if isinstance(value, str):
        return f'"{value}"'
    return str(value).lower() if isinstance(value, bool) else str(value)


@dataclass(slots=True)
class Outcome:
    """What one action produced: the answers of its requests (in the order sent) and the trace rows written."""

    responses: list[Any] = field(default_factory=list)
    rows: list[TraceRow] = field(default_factory=list)


class Driver(Protocol):
    """An adapter from spec events to one coordinator's public API (see `ClusterDriver`)."""

    machines: tuple[str, ...]  # the spec machines whose trace rows are checked in lockstep
    main: str  # the machine the driver covers

    def perform(self, action: Action) -> Outcome: ...

    def instances(self, machine: str) -> Mapping[Key, Values]: ...

    def check(self, action: Action, fired: Sequence[Any], outcome: Outcome) -> list[str]: ...

    def close(self) -> None: ...


def scratch_dir(prefix: str) -> Path:
    """A private directory for one run's logs: in memory (`/dev/shm`) when available, since fsync is most of a
    small cluster's cost; the system temporary directory otherwise."""
    shm = Path("/dev/shm")
    base = shm if shm.is_dir() and _writable(shm) else None
    return Path(tempfile.mkdtemp(prefix=prefix, dir=base))


def _writable(path: Path) -> bool:
    try:
        with tempfile.NamedTemporaryFile(dir=path):
            return True
    except OSError:
        return False


class ClusterDriver:
    """The shared part of the coordinator drivers: one node of a real `Cluster`, in process."""

    machines: tuple[str, ...] = ()
    main: str = ""

    def __init__(self, config: ClusterConfig, *, workdir: Path | None = None, topics: Sequence[tuple[str, int]] = ()
                 ) -> None:
        self._owned_dir = workdir is None
        self.workdir = workdir if workdir is not None else scratch_dir(f"kcoord-{self.main.lower()}-")
        self.clock = ManualClock(START_MS)
        self.sink = MemorySink()
        self.config = config
        self.cluster = Cluster(self.workdir, self.clock, config=config, sink=self.sink)
        self.node = self.cluster.nodes[0]
        self._uuids = iter(range(1, 1_000_000))
        self.node.groups.ctx.new_uuid = lambda: str(next(self._uuids))
        self.cluster.start()
        if topics:
            self.cluster.create_topics(list(topics))
        self._row_mark = 0
        self._txn: tuple[int, int] | None = None  # the driver's transactional producer (pid, epoch), if initialised

    # ------------------------------------------------------------ trace rows

    def take_rows(self) -> list[TraceRow]:
        """The trace rows written since the last call, in the order written."""
        rows = self.sink.all_rows()
        new, self._row_mark = rows[self._row_mark:], len(rows)
        return new

    # ------------------------------------------------------------ the driver's transactional producer

    def open_offsets_txn(self, txn_id: str, group: str) -> tuple[int, int]:
        """The driver's producer `txn_id` (cached in `self._txn`), in a transaction that includes `group`'s offsets
        partition. A transaction the coordinator aborted meanwhile (its timeout passed while the clock moved) fences
        the cached epoch: the producer then initialises again, as a real client would."""
        txn = self.node.txn
        for _ in range(5):
            if self._txn is None:
                r = self.wait(txn.init_producer_id(txn_id, 60_000), markers=True)
                if r.error != "NONE":  # CONCURRENT_TRANSACTIONS: an abort is completing
                    self.settle(markers=True)
                    continue
                self._txn = (r.producer_id, r.producer_epoch)
            pid, epoch = self._txn
            added = self.wait(txn.add_offsets(txn_id, pid, epoch, group))
            if added == "NONE":
                return pid, epoch
            self._txn = None
            self.settle(markers=True)
        raise AssertionError("the driver's producer could not open a transaction")

    # ------------------------------------------------------------ settling

    def settle(self, *, markers: bool = False, max_rounds: int = 200) -> None:
        """Make every write durable and run what follows from it, without moving the clock. The transaction
        coordinator's marker channel runs only with `markers` (so a test decides when markers are delivered)."""
        for _ in range(max_rounds):
            work = self._round(markers)
            if work == 0:
                return
        raise AssertionError(f"the cluster did not settle in {max_rounds} rounds")

    def _round(self, markers: bool) -> int:
        cluster = self.cluster
        cluster.partitions.poll()
        cluster.partitions.flush()
        work = 0
        for node in cluster.nodes:
            if not node.alive:
                continue
            work += node.txn.runtime.poll() + node.txn.runtime.flush()
            if markers:
                work += node.txn.channel.poll()
            work += node.groups.poll() + node.groups.flush()
        return work

    def wait(self, done: Completion[Any], *, markers: bool = False) -> Any:
        """Settle until `done` has an answer; returns it."""
        for _ in range(200):
            if done.done:
                break
            if self._round(markers) == 0 and not done.done:
                raise AssertionError("the request is still unanswered and nothing is left to run")
        self.settle(markers=markers)
        return done.result()

    def advance(self, delta_ms: int, *, markers: bool = False, step_ms: int | None = None) -> None:
        """Move the clock forward by `delta_ms` (in steps no longer than `step_ms`, so periodic tasks run on the
        way) and settle after each step."""
        step = step_ms or delta_ms
        left = delta_ms
        while left > 0:
            move = min(step, left)
            self.clock.advance(move)
            left -= move
            self.settle(markers=markers)

    # ------------------------------------------------------------ logs

    def shard_of(self, runtime: Any, partition: int) -> Shard:
        shard: Shard = runtime.shards[partition]
        return shard

    @staticmethod
    def read_log(shard: Shard, from_offset: int) -> Iterator[RecordBatch]:
        yield from shard.log.read(from_offset)

    def close(self) -> None:
        try:
            self.cluster.close()
        finally:
            if self._owned_dir:
                shutil.rmtree(self.workdir, ignore_errors=True)

    def __enter__(self) -> ClusterDriver:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()


def copy_values(values: Mapping[Key, Mapping[str, Any]]) -> dict[Key, Values]:
    return {k: dict(v) for k, v in values.items()}


Responder = Callable[[], Completion[Any]]
