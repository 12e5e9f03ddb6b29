"""One program on two brokers in lockstep: each step sent to both, every answer compared; the first difference ends
the program.

Owns: `Exchange` (one step on one broker: its request, the answers, retries and the follow-up a client sends at once),
`Lockstep` (a program's run: a fresh topic and fresh ids on both brokers, each step on the tested broker then the
reference, answers awaited together), `Difference`, `ProgramResult` and `Totals` (how many programs, steps and
answers were compared), and `leaf_differences` (where two normalized answers differ, as paths).

Timing, so that only behaviour is compared: a request neither broker answers within `quick_s` is pending on both
(a JoinGroup waiting for the other members, a SyncGroup waiting for the leader) and is compared when it completes,
unless a broker must answer it at once (`Exchange.owed`: waited for up to `slow_s`);
one that only one broker answered is waited for on the other up to `slow_s` (a slow machine is not a difference),
then reported as answered against blocked. Retriable coordinator errors (NOT_COORDINATOR, COORDINATOR_NOT_AVAILABLE,
COORDINATOR_LOAD_IN_PROGRESS) and CONCURRENT_TRANSACTIONS (markers still being written after EndTxn) are retried
as clients do, and only the final answer compared. Timers (sessions, rebalances, transactions; all >= 6 s) run out
only in a `wait` step: a program whose steps between two waits take longer than `segment_limit_s` is cut there
(counted as truncated, never reported as a difference).
Must not import: `kcoord.cli`.
"""

from __future__ import annotations

import contextlib
import time
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any

from .actors import PARTITIONS, Names, SideState, actor_key
from .channel import COORDINATOR_MOVED, BrokerSide, Channel, ChannelClosed
from .deviations import known
from .normalize import normalize
from .requests import absorb, request_for, restart
from .steps import Step

CONCURRENT_TRANSACTIONS = 51
TOPIC_BATCH = 8
LOCAL_KINDS = frozenset({"wait", "restart_member", "restart_producer"})


def error_codes(body: Any) -> set[int]:
    """Every error code anywhere in a response."""
    found: set[int] = set()
    if hasattr(body, "__dataclass_fields__"):
        for name in body.__dataclass_fields__:
            value = getattr(body, name)
            if "error_code" in name and isinstance(value, int):
                found.add(int(value))
            else:
                found |= error_codes(value)
    elif isinstance(body, tuple):
        for item in body:
            found |= error_codes(item)
    return found


@dataclass(slots=True)
class Exchange:
    step: Step
    state: SideState
    answers: list[Any] = field(default_factory=list)
    raw: list[Any] = field(default_factory=list)  # the answers as decoded, for the report
    request: Any = None
    channel: Channel | None = None
    done: bool = False
    done_at: float = 0.0
    sent: int = 0
    retries: int = 0
    resend_at: float | None = None

    def start(self, busy: bool) -> Exchange:
        if busy:
            self._finish("busy: the client's previous request is still in flight")
        else:
            self._send()
        return self

    def _send(self) -> None:
        try:
            node, self.request = request_for(self.step, self.state)
            self.channel = self.state.channel(actor_key(self.step), node)
            self.channel.send(self.request)
            self.sent += 1
        except ChannelClosed as e:
            self._finish(f"closed: {e}")

    @property
    def owed(self) -> bool:
        """Unanswered, though its request is one a broker answers at once (a JoinGroup with neither a member id nor
        an instance id: MEMBER_ID_REQUIRED): slow, never pending."""
        request = self.request
        return (not self.done and type(request).__name__ == "JoinGroupRequest" and not request.member_id
                and request.group_instance_id is None)

    def _finish(self, answer: Any) -> None:
        self.answers.append(answer)
        self.raw.append(answer)
        self.done, self.done_at = True, time.monotonic()

    def pump(self, timeout_s: float) -> None:
        if self.done:
            return
        if self.resend_at is not None:
            if time.monotonic() < self.resend_at:
                time.sleep(min(timeout_s, self.resend_at - time.monotonic()))
                return
            self.resend_at = None
            self._send()
            return
        assert self.channel is not None
        try:
            answered = self.channel.poll(timeout_s)
        except ChannelClosed as e:
            self._finish(f"closed: {e}")
            return
        for _, response in answered:
            self._answered(response)

    def _answered(self, response: Any) -> None:
        codes = error_codes(response)
        if codes & (COORDINATOR_MOVED | {CONCURRENT_TRANSACTIONS}) and self.retries < 40:
            self.retries += 1
            if codes & COORDINATOR_MOVED:
                self.state.forget_coordinators()
            self.resend_at = time.monotonic() + 0.05
            return
        follow_up = absorb(self.step, self.state, response)
        self.answers.append(normalize(response, self.state.canon))
        self.raw.append(response)
        if follow_up is None:
            self.done, self.done_at = True, time.monotonic()
            return
        node, self.request = follow_up
        try:
            self.channel = self.state.channel(actor_key(self.step), node)
            self.channel.send(self.request)
            self.sent += 1
        except ChannelClosed as e:
            self._finish(f"closed: {e}")


@dataclass(frozen=True, slots=True)
class Difference:
    index: int  # the step's place in the program
    step: Step
    tested: tuple[Any, ...]
    reference: tuple[Any, ...]
    tested_raw: tuple[Any, ...] = ()
    reference_raw: tuple[Any, ...] = ()

    def describe(self) -> str:
        where = leaf_differences(list(self.tested), list(self.reference))
        shown = "; ".join(f"{path}: {a!r} vs {b!r}" for path, a, b in where[:6]) or "(same answers, other order)"
        return f"step {self.index} {self.step!r}: {shown}"

    def as_seen(self) -> str:
        """The differing values as each broker sent them (error messages, ids), path by path."""
        where = leaf_differences(list(self.tested), list(self.reference))
        return "; ".join(f"{path}: {raw_at(list(self.tested_raw), path)!r} vs "
                         f"{raw_at(list(self.reference_raw), path)!r}" for path, _, _ in where[:6])


def raw_at(raw: Any, path: str) -> Any:
    """The decoded value at a `leaf_differences` path (`[0].groups[0].error_message`)."""
    for part in path.replace("[", ".[").split("."):
        if not part:
            continue
        try:
            raw = raw[int(part[1:-1])] if part.startswith("[") else getattr(raw, part)
        except (AttributeError, IndexError, TypeError, ValueError):
            return "?"
    return raw


def leaf_differences(a: Any, b: Any, path: str = "") -> list[tuple[str, Any, Any]]:
    if isinstance(a, dict) and isinstance(b, dict):
        return [d for k in sorted(set(a) | set(b), key=str)
                for d in leaf_differences(a.get(k, "(absent)"), b.get(k, "(absent)"), f"{path}.{k}")]
    if isinstance(a, list) and isinstance(b, list) and len(a) == len(b):
        return [d for i, (x, y) in enumerate(zip(a, b, strict=True)) for d in leaf_differences(x, y, f"{path}[{i}]")]
    return [] if a == b else [(path or "answer", a, b)]


@dataclass(slots=True)
class ProgramResult:
    steps_run: int = 0
    answers_compared: int = 0
    requests_sent: int = 0
    truncated: bool = False
    difference: Difference | None = None
    deviations: dict[str, int] = field(default_factory=dict)  # known deviations met on the way, by name


@dataclass(slots=True)
class Totals:
    programs: int = 0
    steps: int = 0
    answers: int = 0
    requests: int = 0
    truncated: int = 0
    skipped: int = 0  # programs drawn after the time budget was spent, not run
    differences: list[Difference] = field(default_factory=list)
    deviations: dict[str, int] = field(default_factory=dict)

    def add(self, result: ProgramResult) -> None:
        self.programs += 1
        self.steps += result.steps_run
        self.answers += result.answers_compared
        self.requests += result.requests_sent
        self.truncated += result.truncated
        if result.difference is not None:
            self.differences.append(result.difference)
        for name, count in result.deviations.items():
            self.deviations[name] = self.deviations.get(name, 0) + count

    def summary(self) -> str:
        known_ = ", ".join(f"{n} x{c}" for n, c in sorted(self.deviations.items())) or "none"
        return (f"{self.programs} programs, {self.steps} steps, {self.requests} requests sent, {self.answers} answers "
                f"compared, {self.truncated} cut short (slow), {len(self.differences)} differences; known "
                f"deviations met: {known_}" + (f"; {self.skipped} not run (time budget spent)" if self.skipped else ""))


@dataclass(slots=True)
class Timing:
    quick_s: float = 0.4
    slow_s: float = 5.0
    wait_s: float = 10.0
    segment_limit_s: float = 4.0


class Lockstep:
    """Programs on a tested and a reference broker; every program gets its own topic, groups and transactional ids."""

    def __init__(self, tested: BrokerSide, reference: BrokerSide, run_id: str, timing: Timing | None = None) -> None:
        self.sides = (tested, reference)
        self.run_id = run_id
        self.timing = timing or Timing()
        self.programs = 0
        self.topics: list[str] = []  # made on both brokers, not used yet
        self.topics_made = 0

    def run(self, steps: Sequence[Step]) -> ProgramResult:
        self.programs += 1
        names = Names(f"{self.run_id}-{self.programs}", self._topic())
        states = (SideState(self.sides[0], names), SideState(self.sides[1], names))
        for state in states:
            state.canon.topic_names = {info.topic_id: name for name, info in state.side.topics.items()}
        result = ProgramResult()
        try:
            self._steps(steps, states, result)
        finally:
            for state in states:
                state.close()
        return result

    def _topic(self) -> str:
        """A fresh topic of two partitions, the same name on both brokers. Topics are made ahead, a batch at a
        time, so that each broker's group coordinator has learnt of a topic before a program subscribes to it."""
        if len(self.topics) < TOPIC_BATCH // 2:
            batch = [f"{self.run_id}-t{self.topics_made + i}" for i in range(TOPIC_BATCH)]
            self.topics_made += TOPIC_BATCH
            for side in self.sides:
                side.create_topics(batch, PARTITIONS)
            self.topics.extend(batch)
            if self.topics_made == TOPIC_BATCH:  # the first batch: give the coordinators a moment
                time.sleep(1.0)
        return self.topics.pop(0)

    def _steps(self, steps: Sequence[Step], states: tuple[SideState, SideState], result: ProgramResult) -> None:
        pending: dict[str, tuple[Exchange, Exchange]] = {}
        segment_start = time.monotonic()
        for index, step in enumerate(steps):
            if time.monotonic() - segment_start > self.timing.segment_limit_s:
                result.truncated = True
                return
            result.steps_run += 1
            if step.kind in LOCAL_KINDS:
                self._local(step, states, pending)
                if step.kind == "wait":
                    segment_start = time.monotonic()
                found = self._settle(index, pending, {}, result)
            else:
                key = actor_key(step)
                busy = key in pending
                pair = (Exchange(step, states[0]).start(busy), Exchange(step, states[1]).start(busy))
                found = self._settle(index, pending, {key: pair} if not busy else {}, result)
                if busy and found is None:
                    found = self._compare(index, pair, result)
            if found is not None:
                result.difference = found
                return

    def _local(self, step: Step, states: tuple[SideState, SideState], pending: dict[str, Any]) -> None:
        if step.kind == "wait":
            time.sleep(self.timing.wait_s)
            return
        pending.pop(actor_key(step), None)  # its answer, if any, goes with the connection
        for state in states:
            restart(step, state)

    def _settle(self, index: int, pending: dict[str, tuple[Exchange, Exchange]],
                new: dict[str, tuple[Exchange, Exchange]], result: ProgramResult) -> Difference | None:
        """Pump every open exchange until each pair is answered on both sides or on neither (pending); compare
        the answered pairs."""
        live = {**pending, **new}
        started = time.monotonic()
        quick_until = started + self.timing.quick_s
        while True:
            for a, b in live.values():
                a.pump(0.005)
                b.pump(0.005)
            now = time.monotonic()
            lopsided = [(a, b) for a, b in live.values() if a.done != b.done]
            if any(now - max(a.done_at, b.done_at) > self.timing.slow_s for a, b in lopsided):
                break
            if not lopsided and (now > quick_until or all(a.done for a, _ in live.values())):
                # (on a loaded machine an answer due at once may take longer than `quick_s`: waited for up to
                # `slow_s`, so that the next step does not overtake it on one broker only)
                if now - started < self.timing.slow_s and any(a.owed or b.owed for a, b in live.values()):
                    continue
                break
        found = None
        for key, pair in live.items():
            a, b = pair
            if a.done or b.done:
                pending.pop(key, None)
                found = found or self._compare(index, pair, result)
            else:
                pending[key] = pair
        return found

    def _compare(self, index: int, pair: tuple[Exchange, Exchange], result: ProgramResult) -> Difference | None:
        a, b = pair
        result.requests_sent += a.sent + b.sent
        tested = tuple(a.answers) if a.done else ("blocked",)
        reference = tuple(b.answers) if b.done else ("blocked",)
        result.answers_compared += min(len(tested), len(reference))
        if tested == reference:
            return None
        deviation = known(a.step.kind, tested, reference)
        if deviation is not None:  # kcoord answers so on purpose (DEVIATIONS.md): count it and go on
            result.deviations[deviation.name] = result.deviations.get(deviation.name, 0) + 1
            return None
        return Difference(index, a.step, tested, reference, tuple(a.raw), tuple(b.raw))


def describe_program(steps: Sequence[Step]) -> str:
    return "[" + ", ".join(map(repr, steps)) + "]"


def close_sides(sides: Sequence[BrokerSide]) -> None:
    for side in sides:
        with contextlib.suppress(Exception):
            side.close()
