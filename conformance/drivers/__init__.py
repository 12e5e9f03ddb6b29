"""Drivers: adapters from the spec's events to each coordinator's public API, one module per machine.

Owns the registry `DRIVERS`: machine name → how to build its driver (on a fresh in-process cluster or component) and
its search hooks (how the path search turns a spec event with arguments into an action). A driver observes one or
more spec machines (their trace rows are checked in lockstep) and covers one.
Must not import: kcoord.cli.
"""

from __future__ import annotations

import importlib
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import Any


@dataclass(frozen=True, slots=True)
class DriverSpec:
    machine: str  # the driver's name: its main machine
    module: str  # kcoord.conformance.drivers.<module>
    driver: str  # class name
    search: str  # class name of the search hooks
    covers: tuple[str, ...]  # the machines whose coverage its cases aim at
    observes: tuple[str, ...]  # every machine checked in lockstep
    max_depth: int = 6  # the path search's depth
    per_state: int = 4  # concrete states kept per combination of control states
    max_runs: int = 6_000  # programs the path search may run (a count, so the output is machine-independent)
    search_module: str = ""  # kcoord.conformance.drivers.<search_module> holds the search hooks ("": `module`)

    def modules(self) -> tuple[str, ...]:
        """The driver's own modules under drivers/: the driver's, and the search hooks' when apart."""
        return (self.module,) if self.search_module in ("", self.module) else (self.module, self.search_module)

    def factory(self, **options: Any) -> Callable[[], Any]:
        cls = self.driver_class()
        return lambda: cls(**options)

    def driver_class(self) -> Any:
        return getattr(importlib.import_module(f"kcoord.conformance.drivers.{self.module}"), self.driver)

    def forgotten(self) -> Mapping[str, frozenset[str]]:
        """Machine → the states in which the implementation drops an instance (see the driver's docstring)."""
        found: Mapping[str, frozenset[str]] = getattr(self.driver_class(), "forgotten", {})
        return found

    def unreachable(self, machines: Mapping[str, Any]) -> dict[str, dict[tuple[Any, ...], str]]:
        """Machine → the items the driver says its implementation never visits, with the reasons (see
        `coverage.declared_unreachable`)."""
        from ..coverage import declared_unreachable

        rows: Mapping[str, Any] = getattr(self.driver_class(), "unreachable", {})
        return {name: declared_unreachable(machines[name], entries) for name, entries in rows.items()}

    def probes(self, machines: Mapping[str, Any]) -> dict[tuple[Any, ...], Any]:
        """The probe items of the driver's `probes` (machine → declared-unreachable row → the action that sends the
        row's event): `("probe", machine, row, state)` → action, for every state the row is declared unreachable in.
        A probed row must be declared unreachable (an error otherwise)."""
        declared = self.unreachable(machines)
        out: dict[tuple[Any, ...], Any] = {}
        for name, rows in getattr(self.driver_class(), "probes", {}).items():
            for row, action in rows.items():
                states = sorted(i[3] for i in declared.get(name, {}) if i[2] == row)
                if not states:
                    raise ValueError(f"{self.machine}: the driver probes row {row} of {name}, which it does not "
                                     "declare unreachable")
                out.update({("probe", name, row, s): action for s in states})
        return out

    def hooks(self) -> Any:
        module = self.search_module or self.module
        return getattr(importlib.import_module(f"kcoord.conformance.drivers.{module}"), self.search)()


DRIVERS: Mapping[str, DriverSpec] = {
    "Transaction": DriverSpec("Transaction", "transaction", "TransactionDriver", "TransactionSearch",
                              covers=("Transaction",), observes=("Transaction", "PartitionProducer")),
    "ClassicGroup": DriverSpec("ClassicGroup", "classic_group", "ClassicGroupDriver", "ClassicGroupSearch",
                               covers=("ClassicGroup",), observes=("ClassicGroup", "PartitionProducer"), max_depth=7,
                               search_module="classic_group_search"),
    "ConsumerGroup": DriverSpec("ConsumerGroup", "consumer_group", "ConsumerGroupDriver", "ConsumerGroupSearch",
                                covers=("ConsumerGroup", "ConsumerGroupMember"),
                                observes=("ConsumerGroup", "ConsumerGroupMember", "ClassicGroup"), max_depth=4,
                                per_state=2, max_runs=9_000, search_module="consumer_group_search"),
}


def driver_spec(machine: str) -> DriverSpec:
    try:
        return DRIVERS[machine]
    except KeyError:
        raise KeyError(f"no conformance driver for {machine!r} (drivers: {', '.join(sorted(DRIVERS))})") from None
