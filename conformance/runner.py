"""Running one generated case: its program on a fresh implementation, in lockstep with the spec.

Owns: `Session` (what the cases of one test session share: the reference machines, built once per machine since
their `transitions.Machine` is the expensive part, and the `Observation` every run adds to, for the coverage
report) and `run_case` — drive the program, let `Lockstep` check every step, then check that the last step visited
the case's item exactly as the spec decided it (a rejection also changed nothing: the same state and variables,
no record), so a case cannot pass without covering what it is named after. A probe case (`("probe", machine, row,
state)`) checks instead that an instance was in `state` before its last step and that `row` did not fire in it.
Must not import: kcoord.cli.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

from kcoord.model import ir
from kcoord.model.loader import bundled_machines

from .drivers import driver_spec
from .drivers.base import Action
from .lockstep import Item, Lockstep, Observation, StepReport
from .reference_model import ReferenceMachine


@dataclass(slots=True)
class Session:
    machines: Mapping[str, ir.Machine] = field(default_factory=bundled_machines)
    observation: Observation = field(default_factory=Observation)
    #: generated cases run per driver (the coverage requirement applies to a driver whose every case ran)
    ran: Counter[str] = field(default_factory=Counter)
    #: what the hypothesis lockstep machines visited (reported apart from the generated suite's coverage)
    explored: Observation = field(default_factory=Observation)
    _refs: dict[str, ReferenceMachine] = field(default_factory=dict)

    def refs(self, names: Sequence[str]) -> dict[str, ReferenceMachine]:
        for name in names:
            if name not in self._refs:
                self._refs[name] = ReferenceMachine(self.machines[name])
        return {name: self._refs[name] for name in names}


def case_item(case: Mapping[str, Any]) -> Item:
    return tuple(case["item"])


def run_program(machine: str, actions: Sequence[Action], session: Session, *,
                after: Callable[[Any], None] | None = None, before_last: Callable[[Lockstep], None] | None = None,
                **options: Any) -> tuple[Lockstep, list[StepReport]]:
    """Run `actions` with `machine`'s driver in lockstep (every step checked); `before_last(lockstep)` runs before
    the last action, `after(driver)` before the driver is closed."""
    driver = driver_spec(machine).factory(**options)()
    try:
        lock = Lockstep(driver, session.refs(driver.machines), session.observation)
        reports = lock.run(actions[:-1])
        if before_last is not None:
            before_last(lock)
        reports += lock.run(actions[-1:])
        if after is not None:
            after(driver)
        return lock, reports
    finally:
        driver.close()


def records_written(driver: Any) -> int | None:
    """Records the driver's last action appended to its coordinator log (None: the driver cannot tell)."""
    shard, mark = getattr(driver, "shard", None), getattr(driver, "_log_mark", None)
    if shard is None or mark is None:
        return None
    return int(shard.log.log_end_offset) - int(mark)


def run_case(machine: str, case: Mapping[str, Any], session: Session, **options: Any) -> StepReport:
    actions = [Action.from_json(a) for a in case["path"]]
    session.ran[machine] += 1
    written: list[int | None] = []
    item = case_item(case)
    states: list[str] = []  # a probe's: the states of its machine's instances before the last step

    def before_last(lock: Lockstep) -> None:
        if item[0] == "probe":
            ref = lock.refs[item[1]]
            states.extend(str(ref.view(k)["state"]) for k in ref.instance_keys())

    _, reports = run_program(machine, actions, session, after=lambda d: written.append(records_written(d)),
                             before_last=before_last, **options)
    last = reports[-1]
    program = "\n".join(f"  {i}. {a.render()}" for i, a in enumerate(actions, 1))
    if item[0] == "probe":  # the row declared unreachable in the state does not fire there
        _, machine_name, row, state = item
        assert state in states, f"no {machine_name} instance was in {state} before the probe; program:\n{program}"
        assert not any(f.machine == machine_name and f.row.index == row for f in last.fired), \
            f"row {row}, declared unreachable in {state}, fired; program:\n{program}"
    else:
        assert item in last.items, \
            f"the last step did not visit {item}; program:\n{program}\nit visited {last.items}"
    seen = [[f.machine, f.event, f.row.index, f.from_state, f.to_state, f.answer] for f in last.fired]
    assert seen == [list(e) for e in case["expect"]], \
        f"the last step fired {seen}, the case expects {case['expect']}; program:\n{program}"
    if item[0] == "rejection":
        _, machine_name, row, state = item
        rejected = [f for f in last.fired if f.machine == machine_name and f.row.index == row]
        assert any(f.from_state == state for f in rejected), f"row {row} never answered in {state}"
        assert all(f.pre == f.post for f in rejected), f"row {row} (a rejection) changed the instance"
        refused = all(not f.accepted and f.answer != "NONE" for f in last.fired)
        if refused and last.action.name in REQUEST_ACTIONS and written and written[0] is not None:
            assert written[0] == 0, f"the refused request wrote {written[0]} records; program:\n{program}"
    return last


#: actions that are one request (a refused one must write nothing; environment steps and `Concurrent` pairs may)
REQUEST_ACTIONS = frozenset({
    "InitProducerId", "AddPartitions", "VerifyPartition", "EndTxnV1", "EndTxnV2", "Describe",
    "JoinNewDynamicMember", "JoinNewStaticMember", "JoinKnownMember", "SyncGroup", "Heartbeat", "LeaveGroupMember",
    "OffsetCommit", "OffsetFetch", "OffsetDelete", "DeleteGroup", "Delete", "JoinGroup", "ClassicHeartbeat",
    "LeaveGroup"})
