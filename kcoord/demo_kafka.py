"""The Apache Kafka stage of `kcoord demo`: a real Kafka 4.0.2 broker (the jars `make` fetched) runs a mixed
coordinator workload with real clients, and its coordinator logs — read straight from its log directory, no kcoord in
the path — are checked against the spec on local Spark (0 violations expected); then a copy of them, damaged as a
buggy coordinator could (one field of one transaction value changed), must be caught.
"""

from __future__ import annotations

import shutil
from pathlib import Path

from rich.console import Console


def kafka_logs_stage(out: Console, work: Path) -> bool:
    from kcoord.conformance.reference.broker import ReferenceKafka, ReferenceKafkaError, ReferenceOptions
    from kcoord.conformance.reference.workload import WORKLOAD_SETTINGS, run_workload
    from kcoord.conformance.traces.damage import NothingToDamage, damage

    from .cmd_traces import demo_check

    data = work / "kafka"
    try:
        with out.status("starting Apache Kafka and running the workload"), \
                ReferenceKafka(ReferenceOptions(data, port=0, nodes=1, settings=WORKLOAD_SETTINGS)) as kafka:
            done = run_workload(kafka.bootstrap)
    except ReferenceKafkaError as e:
        out.print(f"Apache Kafka could not run: {e}")
        return False
    out.print("the workload on Kafka: " + ", ".join(f"{n} {what}" for what, n in sorted(done.counts.items())))
    logs = data / "node-0"
    found = demo_check(out, [logs], report_dir=work / "report-clean")
    out.print(f"Kafka's coordinator logs: {found} violations (expected 0)")
    broken = work / "damaged"
    shutil.rmtree(broken, ignore_errors=True)
    shutil.copytree(logs, broken)
    what = ""
    for folder in sorted(broken.glob("__transaction_state-*")):
        try:
            what = damage(folder, "field")
            break
        except NothingToDamage:
            continue
    out.print(f"a damaged copy: {what or 'nothing to damage'}")
    caught = demo_check(out, [broken], report_dir=work / "report-damaged")
    out.print(f"the damaged copy: {caught} violations (expected > 0: the damage is caught)")
    return found == 0 and bool(what) and caught > 0
