"""A real Apache Kafka 4.0 cluster in KRaft mode, run from the jars `make` fetched: the reference peer.

Owns: `ReferenceOptions` (where the data lives, ports, nodes, Kafka settings, the JVM), `ReferenceKafka` (formats
the storage on first use, starts one JVM per node, waits until every broker is registered, stops them cleanly;
`restart`, `stop_node` and `start_node` for the scenarios that need them), `ReferenceKafkaError` (a one-line reason it
cannot start: a port in use, no Java, the jars missing, a node that died) and `kafka_libs`/`kafka_version`.

Layout: with one node, a combined broker+controller (node 0) on `port` with its controller listener on `port + 1`;
with N > 1 nodes, brokers 0..N-1 on `port`..`port + N - 1` and one dedicated controller (node 3000, a quorum of
one) on `port + N`, so stopping a broker never stops the quorum. Settings fit for one machine: data topics default
to one replica, the internal topics (`__consumer_offsets`, `__transaction_state`) have min(N, 3) replicas with a
minimum ISR of 1 (with one replica a stopped broker's coordinator partitions could not move, and coordinator
failover is what several nodes are for).

Must not import: `kcoord.impl` beyond the wire codec (Kafka is reached through its sockets and its own tools).
"""

from __future__ import annotations

import base64
import contextlib
import ctypes
import dataclasses
import json
import os
import shutil
import signal
import socket
import subprocess
import time
import uuid
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from types import TracebackType

from kcoord.conformance.ports import free_port_block, port_free

#: where `make` copies the jars (the repository's ignored build folder)
DEFAULT_LIBS = Path(__file__).resolve().parents[2] / "build" / "kafka" / "libs"
CONTROLLER_ID = 3000
#: Kafka's own KAFKA_HEAP_OPTS and KAFKA_JVM_PERFORMANCE_OPTS (bin/kafka-run-class.sh), with a smaller initial heap
JVM_OPTIONS = ("-Xms256m", "-Xmx1g", "-server", "-XX:+UseG1GC", "-XX:MaxGCPauseMillis=20",
               "-XX:InitiatingHeapOccupancyPercent=35", "-XX:+ExplicitGCInvokesConcurrent", "-Djava.awt.headless=true")
_STATE_FILE = "kcoord-reference.json"
_PR_SET_PDEATHSIG = 1


class ReferenceKafkaError(Exception):
    """The reference Kafka cannot start or died: one line saying why and what to do."""


def kafka_libs(libs: Path | None = None) -> Path:
    """The folder of Kafka's jars, checked: a `ReferenceKafkaError` saying "run make" when they are not there."""
    folder = libs or DEFAULT_LIBS
    if not any(folder.glob("kafka_2.13-*.jar")):
        raise ReferenceKafkaError(f"Apache Kafka's jars are not in {folder}: run make (it fetches them from Maven "
                                  f"Central)")
    return folder


def kafka_version(libs: Path | None = None) -> str:
    """The Kafka release the jars are, from the broker jar's name (`kafka_2.13-4.0.2.jar` -> `4.0.2`)."""
    jars = sorted(kafka_libs(libs).glob("kafka_2.13-*.jar"))
    names = [j.name.removeprefix("kafka_2.13-").removesuffix(".jar") for j in jars]
    return next(n for n in names if n[:1].isdigit() and "-" not in n)


def java_binary() -> str:
    """`$JAVA_HOME/bin/java` or `java` on the PATH, checked."""
    home = os.environ.get("JAVA_HOME")
    candidate = str(Path(home) / "bin" / "java") if home else shutil.which("java")
    if not candidate or not Path(candidate).exists():
        raise ReferenceKafkaError("no Java found (JAVA_HOME unset and no java on the PATH): run make (it installs "
                                  "Java 17)")
    return candidate


def random_cluster_id() -> str:
    """A Kafka `Uuid` in its base64url form, as `kafka-storage random-uuid` prints one (never starting with '-')."""
    while True:
        text = base64.urlsafe_b64encode(uuid.uuid4().bytes).decode().rstrip("=")
        if not text.startswith("-"):
            return text


@dataclass(frozen=True, slots=True)
class ReferenceOptions:
    data_dir: Path
    port: int = 9092  # 0: a block of free ports
    nodes: int = 1
    host: str = "127.0.0.1"
    #: extra `server.properties` lines for every node (`group.initial.rebalance.delay.ms` -> `0`)
    settings: Mapping[str, str] = field(default_factory=dict)
    libs: Path | None = None
    jvm_options: tuple[str, ...] = JVM_OPTIONS
    start_timeout_s: float = 90.0
    stop_timeout_s: float = 60.0

    def __post_init__(self) -> None:
        if not 1 <= self.nodes <= 9:
            raise ValueError(f"--nodes {self.nodes}: expected 1 to 9")
        if not 0 <= self.port <= 65_535 - self.nodes:
            raise ValueError(f"--port {self.port}: expected 0 (free ports) to {65_535 - self.nodes}")

    @property
    def controller_port(self) -> int:
        return self.port + self.nodes

    @property
    def node_ids(self) -> tuple[int, ...]:
        return tuple(range(self.nodes))

    def broker_port(self, node: int) -> int:
        return self.port + node

    @property
    def bootstrap(self) -> str:
        return ",".join(f"{self.host}:{self.broker_port(n)}" for n in self.node_ids)


def _properties(options: ReferenceOptions, node: int | None) -> dict[str, str]:
    """server.properties of broker `node`, or of the dedicated controller when `node` is None."""
    host, combined = options.host, options.nodes == 1
    controller = CONTROLLER_ID if not combined else 0
    internal_replicas = str(min(options.nodes, 3))
    props = {
        "node.id": str(controller if node is None else node),
        "controller.quorum.voters": f"{controller}@{host}:{options.controller_port}",
        "controller.listener.names": "CONTROLLER",
        "listener.security.protocol.map": "PLAINTEXT:PLAINTEXT,CONTROLLER:PLAINTEXT",
        "log.dirs": str(options.data_dir / (f"node-{node}" if node is not None else "controller")),
        "offsets.topic.replication.factor": internal_replicas,
        "transaction.state.log.replication.factor": internal_replicas,
        "transaction.state.log.min.isr": "1",
        "min.insync.replicas": "1",
        "default.replication.factor": "1",
        "num.partitions": "1",
    }
    if node is None:
        props |= {"process.roles": "controller", "listeners": f"CONTROLLER://{host}:{options.controller_port}"}
    elif combined:
        props |= {"process.roles": "broker,controller",
                  "listeners": f"PLAINTEXT://{host}:{options.port},CONTROLLER://{host}:{options.controller_port}",
                  "advertised.listeners": f"PLAINTEXT://{host}:{options.port}",
                  "inter.broker.listener.name": "PLAINTEXT"}
    else:
        port = options.broker_port(node)
        props |= {"process.roles": "broker", "listeners": f"PLAINTEXT://{host}:{port}",
                  "advertised.listeners": f"PLAINTEXT://{host}:{port}", "inter.broker.listener.name": "PLAINTEXT"}
    return props | dict(options.settings)


def _log4j2(log_file: Path) -> str:
    """Kafka's log at INFO into `log_file`; nothing on the console (the launcher says what matters)."""
    return "\n".join([
        "status = warn",
        "appender.file.type = File",
        "appender.file.name = file",
        f"appender.file.fileName = {log_file}",
        "appender.file.layout.type = PatternLayout",
        "appender.file.layout.pattern = [%d] %p %m (%c)%n",
        "rootLogger.level = INFO",
        "rootLogger.appenderRef.file.ref = file",
        "logger.kafka.name = kafka", "logger.kafka.level = INFO",
        "logger.state.name = state.change.logger", "logger.state.level = WARN",
        "logger.request.name = kafka.request.logger", "logger.request.level = WARN",
        "",
    ])


def _die_with_parent() -> None:
    """In the child, before exec: ask Linux to send SIGTERM when the process that started it exits
    (prctl PR_SET_PDEATHSIG); elsewhere, nothing."""
    with contextlib.suppress(OSError, AttributeError):
        ctypes.CDLL("libc.so.6", use_errno=True).prctl(_PR_SET_PDEATHSIG, signal.SIGTERM)


def _accepts(host: str, port: int) -> bool:
    try:
        with socket.create_connection((host, port), timeout=1.0):
            return True
    except OSError:
        return False


def _tail(path: Path, lines: int = 200) -> list[str]:
    try:
        return path.read_text(encoding="utf-8", errors="replace").splitlines()[-lines:]
    except OSError:
        return []


def _last_error(log: Path, stderr: Path) -> str:
    """The most telling line of a node that died: its last ERROR (or an exception) in the log, else stderr's end."""
    for source in (log, stderr):
        lines = [ln for ln in _tail(source) if " ERROR " in ln or "Exception" in ln or "Error:" in ln]
        if lines:
            return lines[-1].strip()[:400]
    rest = [ln for ln in _tail(stderr, 5) if ln.strip()]
    return rest[-1].strip()[:400] if rest else "no error was logged"


class ReferenceKafka:
    """Apache Kafka's nodes as child processes of this one; a context manager that stops them on exit.

    A node is sent SIGTERM by the kernel when the thread that started it ends (Linux's parent-death signal), so a
    launcher killed with -9 leaves no Kafka behind: start, restart and start nodes from a thread that outlives them.
    """

    def __init__(self, options: ReferenceOptions) -> None:
        if options.port == 0:  # free ports: nodes + 1 of them (the brokers, then the controller)
            options = dataclasses.replace(options, port=free_port_block(options.nodes + 1, host=options.host))
        self.options = options
        self.libs = kafka_libs(options.libs)
        self.version = kafka_version(options.libs)
        self.java = java_binary()
        self.config_dir = options.data_dir / "config"
        self.log_dir = options.data_dir / "logs"
        self.processes: dict[int | None, subprocess.Popen[bytes]] = {}

    # ------------------------------------------------------------------ lifecycle

    def start(self) -> ReferenceKafka:
        """Format the storage on first use, start every node and return once each broker is registered and answers."""
        busy = [p for p in self._ports() if not port_free(p, self.options.host)]
        if busy:
            raise ReferenceKafkaError(f"port {busy[0]} on {self.options.host} is in use: choose another --port "
                                 f"(this cluster needs {self.options.port}..{self.options.port + self.options.nodes})")
        self._prepare()
        try:
            for node in self._members():
                self._spawn(node)
            self._wait_ready(self.options.node_ids)
        except BaseException:
            self.stop()
            raise
        return self

    def stop(self) -> None:
        """SIGTERM the brokers (a controlled shutdown), then the controller; SIGKILL whatever outlives the timeout."""
        brokers = [n for n in self.processes if n is not None]
        self._terminate(brokers)
        self._terminate(list(self.processes))

    def restart(self) -> None:
        """Stop every node and start them again on the same ports and data (a whole-cluster restart)."""
        self.stop()
        deadline = time.monotonic() + 15
        while any(not port_free(p, self.options.host) for p in self._ports()):
            if time.monotonic() > deadline:
                raise ReferenceKafkaError(f"ports of the reference Kafka still busy 15 s after it stopped: "
                                          f"{self._ports()}")
            time.sleep(0.1)
        self.start()

    def stop_node(self, node: int) -> None:
        """A controlled shutdown of broker `node` (its partitions' leadership and coordinators move elsewhere)."""
        if node not in self.options.node_ids:
            raise ValueError(f"no broker {node} in a cluster of {self.options.nodes}")
        self._terminate([node])

    def start_node(self, node: int) -> None:
        if node in self.processes:
            return
        self._spawn(node)
        self._wait_ready((node,))

    def ensure_running(self) -> None:
        """Start again any broker a scenario stopped (or that died), so the next user finds the whole cluster."""
        for node in self._members():
            alive = node in self.processes and self.processes[node].poll() is None
            if not alive:
                self.processes.pop(node, None)
                self._spawn(node)
        self._wait_ready(self.options.node_ids)

    def dead_nodes(self) -> dict[int | None, str]:
        """Nodes whose process exited on its own: node -> why (its last error line)."""
        return {n: self._death(n) for n, p in self.processes.items() if p.poll() is not None}

    @property
    def bootstrap(self) -> str:
        return self.options.bootstrap

    def log_file(self, node: int | None) -> Path:
        return self.log_dir / f"{self._name(node)}.log"

    def __enter__(self) -> ReferenceKafka:
        return self.start()

    def __exit__(self, exc_type: type[BaseException] | None, exc: BaseException | None,
                 tb: TracebackType | None) -> None:
        self.stop()

    # ------------------------------------------------------------------ internals

    def _members(self) -> list[int | None]:
        nodes: list[int | None] = list(self.options.node_ids)
        return nodes if self.options.nodes == 1 else [None, *nodes]

    def _ports(self) -> list[int]:
        return [*map(self.options.broker_port, self.options.node_ids), self.options.controller_port]

    @staticmethod
    def _name(node: int | None) -> str:
        return "controller" if node is None else f"node-{node}"

    def _prepare(self) -> None:
        """Write every node's configuration; format the storage the first time (the cluster id is kept)."""
        data = self.options.data_dir
        for folder in (data, self.config_dir, self.log_dir):
            folder.mkdir(parents=True, exist_ok=True)
        state_path = data / _STATE_FILE
        state = json.loads(state_path.read_text()) if state_path.exists() else None
        if state is not None and state.get("nodes") != self.options.nodes:
            raise ReferenceKafkaError(f"{data} holds a reference Kafka of {state.get('nodes')} node(s), not "
                                 f"{self.options.nodes}: use --nodes {state.get('nodes')} or another --data-dir")
        for node in self._members():
            lines = [f"{k}={v}" for k, v in sorted(_properties(self.options, node).items())]
            (self.config_dir / f"{self._name(node)}.properties").write_text("\n".join(lines) + "\n")
            (self.config_dir / f"log4j2-{self._name(node)}.properties").write_text(_log4j2(self.log_file(node)))
        if state is None:
            cluster_id = random_cluster_id()
            self._format(self._members(), cluster_id)
            state_path.write_text(json.dumps({"cluster_id": cluster_id, "nodes": self.options.nodes,
                                              "kafka": self.version}) + "\n")

    def _format(self, nodes: Sequence[int | None], cluster_id: str) -> None:
        """Format the nodes' storage, their JVMs side by side (each is a few seconds of start-up)."""
        running = {}
        for node in nodes:
            config = self.config_dir / f"{self._name(node)}.properties"
            command = [self.java, "-cp", f"{self.libs}/*",
                       f"-Dlog4j2.configurationFile={self.config_dir / f'log4j2-{self._name(node)}.properties'}",
                       "kafka.tools.StorageTool", "format", "-t", cluster_id, "-c", str(config), "--ignore-formatted"]
            running[node] = subprocess.Popen(command, stdin=subprocess.DEVNULL, stdout=subprocess.PIPE,
                                             stderr=subprocess.PIPE, text=True)
        failed = []
        for node, process in running.items():
            out, err = process.communicate()
            if process.returncode != 0:
                why = (err.strip() or out.strip()).splitlines()
                failed.append(f"formatting {self._name(node)}'s storage failed: "
                              f"{why[-1] if why else f'exit {process.returncode}'}")
        if failed:
            raise ReferenceKafkaError(failed[0])

    def _spawn(self, node: int | None) -> None:
        name = self._name(node)
        command = [self.java, *self.options.jvm_options, "-cp", f"{self.libs}/*",
                   f"-Dlog4j2.configurationFile={self.config_dir / f'log4j2-{name}.properties'}",
                   f"-Dkafka.logs.dir={self.log_dir}", "kafka.Kafka", str(self.config_dir / f"{name}.properties")]
        stderr = (self.log_dir / f"{name}.stderr").open("ab")
        with stderr:
            # a session of its own (a terminal's Ctrl-C reaches the launcher, which stops the nodes in order), and a
            # SIGTERM from the kernel if the launcher dies first (a killed test run leaves no Kafka behind)
            self.processes[node] = subprocess.Popen(command, stdin=subprocess.DEVNULL, stdout=stderr, stderr=stderr,
                                                    start_new_session=True, preexec_fn=_die_with_parent)

    def _death(self, node: int | None) -> str:
        code = self.processes[node].returncode
        why = _last_error(self.log_file(node), self.log_dir / f"{self._name(node)}.stderr")
        return f"{self._name(node)} exited with {code}: {why} (log: {self.log_file(node)})"

    def _wait_ready(self, nodes: tuple[int, ...]) -> None:
        """Until every broker of `nodes` accepts connections and the cluster's Metadata lists all of them."""
        deadline = time.monotonic() + self.options.start_timeout_s
        host = self.options.host
        while True:
            dead = self.dead_nodes()
            if dead:
                raise ReferenceKafkaError("the reference Kafka did not start: " + "; ".join(dead.values()))
            if all(_accepts(host, self.options.broker_port(n)) for n in nodes) and self._registered():
                return
            if time.monotonic() > deadline:
                raise ReferenceKafkaError(f"the reference Kafka did not answer within "
                                          f"{self.options.start_timeout_s:.0f} s (logs in {self.log_dir})")
            time.sleep(0.2)

    def _registered(self) -> bool:
        """True when a broker's Metadata names every broker of the cluster."""
        from kio.schema.metadata.v12 import MetadataRequest

        from kcoord.conformance.wire.raw import RawConnection

        running = {n for n in self.processes if n is not None}
        address = (self.options.host, self.options.broker_port(min(running)))
        try:
            with RawConnection(address, timeout_s=5.0) as conn:
                answer = conn.request(MetadataRequest(topics=(), allow_auto_topic_creation=False,
                                                      include_topic_authorized_operations=False))
        except (OSError, ConnectionError):
            return False
        return running <= {int(b.node_id) for b in answer.brokers}

    def _terminate(self, nodes: Sequence[int | None]) -> None:
        for node in nodes:
            process = self.processes.get(node)
            if process is not None and process.poll() is None:
                with contextlib.suppress(ProcessLookupError):
                    process.send_signal(signal.SIGTERM)
        deadline = time.monotonic() + self.options.stop_timeout_s
        for node in nodes:
            process = self.processes.pop(node, None)
            if process is None:
                continue
            try:
                process.wait(timeout=max(0.1, deadline - time.monotonic()))
            except subprocess.TimeoutExpired:
                with contextlib.suppress(ProcessLookupError):
                    os.killpg(process.pid, signal.SIGKILL)
                process.wait()
