"""`kcoord kafka-reference`: run a real Apache Kafka 4.0 (KRaft) in the foreground, as `kcoord serve` runs kcoord.

Formats the storage on first use, starts the nodes from the jars `make` fetched (`conformance/reference/broker.py`),
prints one line per broker and the bootstrap once every broker is registered, and stops the cluster cleanly on
SIGTERM or Ctrl-C (exit 0). One-line errors, exit 2: a port in use, no Java, the jars missing ("run make"), a node
that dies while starting; a node that dies later ends the command with exit 1 and the node's last error.
"""

from __future__ import annotations

import signal
import threading
from pathlib import Path
from typing import Annotated

import typer

from .cli import EXIT_PROBLEMS, app, err_console, usage_error


def _settings(values: list[str]) -> dict[str, str]:
    out = {}
    for item in values:
        key, sep, value = item.partition("=")
        if not sep or not key.strip() or " " in key.strip():
            usage_error(f"--set {item!r}: expected a Kafka broker setting KEY=VALUE, e.g. "
                        f"group.initial.rebalance.delay.ms=0")
        out[key.strip()] = value.strip()
    return out


@app.command("kafka-reference")
def kafka_reference(
    data_dir: Annotated[Path, typer.Option(help="Kafka's data (formatted on first use; kept across runs).")]
    = Path("kafka-reference-data"),
    port: Annotated[int, typer.Option(help="Port of broker 0; broker i listens on port + i, the controller on "
                                           "port + nodes; 0: free ports.")] = 9092,
    nodes: Annotated[int, typer.Option(help="Brokers: 1 (combined broker+controller) or more (brokers plus one "
                                            "dedicated controller), for coordinator failover.")] = 1,
    host: Annotated[str, typer.Option(help="Address to bind and advertise (loopback by default).")] = "127.0.0.1",
    set_: Annotated[list[str] | None, typer.Option("--set", help="A Kafka broker setting for every node, "
                                                   "KEY=VALUE (repeatable), e.g. group.initial.rebalance.delay.ms=0."
                                                   )] = None,
    libs: Annotated[Path | None, typer.Option(help="Kafka's jars (default: build/kafka/libs, fetched by make).")]
    = None,
) -> None:
    """Run Apache Kafka 4.0 (from the jars `make` fetched from Maven Central) in KRaft mode in the foreground: the
    reference kcoord is measured against. Settings fit for one machine: data topics with one replica, the internal
    topics with min(nodes, 3) replicas and a minimum ISR of 1. Stop with SIGTERM or Ctrl-C.

    \b
    Example: kcoord kafka-reference --data-dir /tmp/kafka --port 19092 --nodes 3
             kcoord conformance --bootstrap 127.0.0.1:9092 --reference 127.0.0.1:19092
    """
    from kcoord.conformance.reference.broker import ReferenceKafka, ReferenceKafkaError, ReferenceOptions

    try:
        options = ReferenceOptions(data_dir=data_dir, port=port, nodes=nodes, host=host,
                                   settings=_settings(set_ or []), libs=libs)
        cluster = ReferenceKafka(options)
    except (ValueError, ReferenceKafkaError) as e:
        usage_error(str(e))
    stop = threading.Event()
    for signum in (signal.SIGTERM, signal.SIGINT):
        signal.signal(signum, lambda *_: stop.set())
    print(f"kafka-reference: starting Apache Kafka {cluster.version} ({nodes} node(s)) in {data_dir}", flush=True)
    options = cluster.options  # with the ports chosen, for --port 0
    try:
        cluster.start()
    except ReferenceKafkaError as e:
        usage_error(str(e))
    died = ""
    try:
        for node in options.node_ids:
            print(f"kafka-reference: broker {node} listening on {host}:{options.broker_port(node)}", flush=True)
        print(f"kafka-reference: bootstrap {cluster.bootstrap}; logs in {cluster.log_dir}; stop with SIGTERM or "
              f"Ctrl-C", flush=True)
        while not stop.wait(0.5):
            dead = cluster.dead_nodes()
            if dead:
                died = "; ".join(dead.values())
                break
    finally:
        cluster.stop()
    if died:
        err_console().print(f"kcoord: error: the reference Kafka stopped on its own: {died}")
        raise typer.Exit(EXIT_PROBLEMS)
    print("kafka-reference: stopped", flush=True)
