"""The registry of wire scenarios: name, what it shows, and the function that runs it against a `Target`.

Owns: `Scenario` and `SCENARIOS` (in run order: quick wire checks first, then groups, transactions, and the
scenarios that restart or stop brokers last, since they disturb the broker for whatever runs after them),
`select` (by name or glob).
Must not import: `kcoord.impl`.
"""

from __future__ import annotations

import fnmatch
import functools
from collections.abc import Callable, Sequence
from dataclasses import dataclass

from . import scenarios_cluster as cluster
from . import scenarios_groups as groups
from . import scenarios_migration as migration
from . import scenarios_txn as txn
from .members import CLIENTS
from .target import Target


@dataclass(frozen=True, slots=True)
class Scenario:
    name: str
    run: Callable[[Target], str]
    summary: str


def _summary(fn: Callable[..., str]) -> str:
    """The first paragraph of `fn`'s docstring, on one line."""
    return " ".join((fn.__doc__ or "").strip().split("\n\n")[0].split())


def _per_client(name: str, fn: Callable[[str, Target], str], clients: Sequence[str] = CLIENTS) -> list[Scenario]:
    return [Scenario(f"{name}[{client}]", functools.partial(fn, client), _summary(fn)) for client in clients]


def _one(name: str, fn: Callable[[Target], str]) -> Scenario:
    return Scenario(name, fn, _summary(fn))


SCENARIOS: tuple[Scenario, ...] = (
    _one("advertised-apis", cluster.advertised_apis),
    _one("bad-input", cluster.bad_input),
    _one("coordinator-spread", cluster.coordinator_spread),
    _one("create-topics-answers", cluster.create_topics_answers),
    _one("compression[confluent-kafka]", cluster.compression),
    *_per_client("classic-group", groups.classic_group),
    _one("static-membership[kafka-python]", groups.static_membership),
    _one("consumer-protocol[confluent-kafka]", groups.consumer_protocol),
    _one("describe-unknown-group", groups.describe_unknown_group),
    _one("regex-subscription[confluent-kafka]", migration.regex_subscription),
    _one("invalid-regex", migration.invalid_regex),
    _one("migration[kafka-python+confluent-kafka]", migration.migration),
    _one("converted-member", migration.converted_member),
    _one("classic-holder-taken-over", migration.classic_holder_taken_over),
    _one("static-rejoin-other-instance", migration.static_rejoin_other_instance),
    *_per_client("transactions", txn.transactions),
    *_per_client("fencing", txn.fencing),
    _one("describe-producers[kafka-python]", txn.describe_producers),
    _one("restart-mid-transaction[kafka-python]", txn.restart_mid_transaction),
    _one("coordinator-failover[kafka-python]", cluster.coordinator_failover),
)


def select(patterns: Sequence[str] = ()) -> list[Scenario]:
    """The scenarios whose name matches any of `patterns` (globs or substrings); all of them for none."""
    if not patterns:
        return list(SCENARIOS)
    chosen = [s for s in SCENARIOS if any(fnmatch.fnmatchcase(s.name, p) or p in s.name for p in patterns)]
    if not chosen:
        raise ValueError(f"no scenario matches {list(patterns)}; scenarios: {[s.name for s in SCENARIOS]}")
    return chosen
