"""CPU seconds of a measured process and of every process it starts, however they end.

Spark's Python workers are forked by its Python daemon, a child of the JVM: when a worker outlives the process that
forked it, Linux hands it to init, and its CPU is no longer anyone's we can see — neither a live descendant's nor a
reaped child's (cutime, cstime). i33p's 50M runs of the DuckDB tasks counted ~43 CPU-s where `ps` had shown the workers
at well over 100. So the measured process makes itself a child subreaper (`adopt_orphans`): orphans of its tree come
to it instead of to init, and `Reaper` waits for them once they end, which adds their CPU (and that of the children
they waited for) to this process's cutime. `tree_cpu_s` then sums this process and every live descendant, each with
the CPU of the children it reaped: every CPU tick of the tree is in exactly one of those places.

Owns no state but what a caller creates; imports nothing of kcoord's.
"""

from __future__ import annotations

import ctypes
import os
import resource
import threading
import time
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Self

#: prctl(2)'s option: this process becomes the reaper of its descendants' orphans (Linux ≥ 3.4)
PR_SET_CHILD_SUBREAPER = 36


def adopt_orphans() -> None:
    """Make this process the child subreaper of its descendants (`PR_SET_CHILD_SUBREAPER`); raises if Linux refuses."""
    libc = ctypes.CDLL(None, use_errno=True)
    if libc.prctl(PR_SET_CHILD_SUBREAPER, 1, 0, 0, 0) != 0:
        errno = ctypes.get_errno()
        raise OSError(errno, f"prctl(PR_SET_CHILD_SUBREAPER): {os.strerror(errno)}")


def _stats() -> dict[int, tuple[int, str, float]]:
    """Every process's (ppid, state, CPU seconds with its reaped children's: utime + stime + cutime + cstime)."""
    tick = os.sysconf("SC_CLK_TCK")
    out: dict[int, tuple[int, str, float]] = {}
    for stat in Path("/proc").glob("[0-9]*/stat"):
        try:
            fields = stat.read_text().rsplit(")", 1)[1].split()
            out[int(stat.parent.name)] = (int(fields[1]), fields[0], sum(int(x) for x in fields[11:15]) / tick)
        except (OSError, IndexError, ValueError):
            continue  # (ended while we read)
    return out


def tree_cpu_s(root: int | None = None) -> float:
    """CPU seconds so far of process `root` (None: this one) and of all its live (or not yet reaped) descendants, each
    with the CPU of the children it has reaped."""
    root = os.getpid() if root is None else root
    stats = _stats()
    return sum(stats[pid][2] for pid in _tree(stats, root) if pid in stats)


def _tree(stats: dict[int, tuple[int, str, float]], root: int) -> set[int]:
    """`root` and its descendants among `stats` (`_stats`)."""
    below, frontier = {root}, {root}
    while frontier:
        frontier = {pid for pid, (ppid, _, _) in stats.items() if ppid in frontier and pid not in below}
        below |= frontier
    return below


class _Every:
    """A daemon thread calling `tick` every `every_s` until `stop`, which calls it once more."""

    def __init__(self, name: str, every_s: float) -> None:
        self.every_s = every_s
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._run, name=name, daemon=True)

    def start(self) -> Self:
        self._thread.start()
        return self

    def stop(self) -> None:
        self._stop.set()
        self._thread.join()
        self.tick()

    def _run(self) -> None:
        while not self._stop.wait(self.every_s):
            self.tick()

    def tick(self) -> None:
        raise NotImplementedError


class Reaper(_Every):
    """A thread that waits for this process's children that end, except `keep` (children someone else waits for, such
    as the JVM pyspark started): the orphans `adopt_orphans` brings. `reaped` counts them."""

    def __init__(self, keep: set[int], every_s: float = 0.5) -> None:
        super().__init__("orphan reaper", every_s)
        self.keep, self.reaped = set(keep), 0

    def tick(self) -> None:
        self.reap()

    def reap(self) -> None:
        """Wait for every ended child not in `keep` (cheap when none has ended: one waitid)."""
        while True:
            try:
                ended = os.waitid(os.P_ALL, 0, os.WEXITED | os.WNOHANG | os.WNOWAIT)
            except ChildProcessError:
                return
            if ended is None:
                return
            if ended.si_pid not in self.keep:
                self._wait(ended.si_pid)
                continue
            me = os.getpid()  # (a kept child ended first: look for the others by /proc)
            for pid, (ppid, state, _) in _stats().items():
                if ppid == me and state == "Z" and pid not in self.keep:
                    self._wait(pid)
            return

    def _wait(self, pid: int) -> None:
        try:
            os.waitpid(pid, 0)
            self.reaped += 1
        except ChildProcessError:
            pass


def jvm_tree_cpu_s(jvm: int | None) -> float:
    """What i33p counted: this process, and the JVM `jvm` with its descendants, each with its reaped children — not
    the workers orphaned on their way; kept beside `tree_cpu_s` to show what it missed."""
    return cpu_s(None) + (tree_cpu_s(jvm) if jvm is not None else 0.0)


def cpu_s(pid: int | None) -> float:
    """CPU seconds (user + system) used so far by process `pid` (None: this process), not its children's."""
    if pid is None:
        usage = resource.getrusage(resource.RUSAGE_SELF)
        return usage.ru_utime + usage.ru_stime
    with open(f"/proc/{pid}/stat", encoding="ascii") as f:
        fields = f.read().rsplit(")", 1)[1].split()
    return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")


#: JVM threads by their name's start (Linux keeps 15 characters of it): where a run's CPU goes
THREAD_KINDS = (("C2 Compi", "JIT C2"), ("C1 Compi", "JIT C1"), ("Executor task", "tasks"), ("GC ", "GC"),
                ("G1 ", "GC"), ("VM Thread", "GC"), ("Thread-", "driver (py4j)"), ("py4j", "driver (py4j)"))


def thread_cpu_s(pid: int) -> dict[str, float]:
    """CPU seconds so far of process `pid`'s live threads, by kind (`THREAD_KINDS`, else "other"); "ended": the
    process's CPU not in a live thread (threads that ended: short-lived compiler and task threads)."""
    out: dict[str, float] = {}
    tick = os.sysconf("SC_CLK_TCK")
    for task in Path(f"/proc/{pid}/task").iterdir():
        try:
            head, tail = (task / "stat").read_text().rsplit(")", 1)
            fields = tail.split()
        except OSError:
            continue
        name = head.split("(", 1)[1]
        kind = next((k for prefix, k in THREAD_KINDS if name.startswith(prefix)), "other")
        out[kind] = out.get(kind, 0.0) + (int(fields[11]) + int(fields[12])) / tick
    out["ended"] = cpu_s(pid) - sum(out.values())
    return out


def peak_rss_mb(pid: int) -> float:
    """Process `pid`'s peak resident set (VmHWM), MB."""
    with open(f"/proc/{pid}/status", encoding="ascii") as f:
        for line in f:
            if line.startswith("VmHWM:"):
                return int(line.split()[1]) / 1024
    return float("nan")


class PeakMemory(_Every):
    """A thread sampling, every `every_s`, the resident sets of this process's descendants but `skip` (the JVM): Spark's
    Python daemon and workers. `one_mb`: the largest peak (VmHWM) of any of them; `sum_mb`: the largest sum of their
    resident sets (VmRSS) in one sample (forked workers share the daemon's pages, so an upper bound)."""

    def __init__(self, skip: set[int], every_s: float = 0.5) -> None:
        super().__init__("peak memory", every_s)
        self.skip, self.one_mb, self.sum_mb = set(skip), 0.0, 0.0

    def tick(self) -> None:
        self.sample()

    def sample(self) -> None:
        me = os.getpid()
        total = 0.0
        for pid in _tree(_stats(), me) - self.skip - {me}:
            try:
                status = Path(f"/proc/{pid}/status").read_text()
            except OSError:
                continue
            kb = {k: int(v.split()[0]) for k, v in (line.split(":", 1) for line in status.splitlines())
                  if k in ("VmHWM", "VmRSS")}
            self.one_mb = max(self.one_mb, kb.get("VmHWM", 0) / 1024)
            total += kb.get("VmRSS", 0) / 1024
        self.sum_mb = max(self.sum_mb, total)


#: where a cgroup (v1) of the cpuacct controller can be made: the cross-check of `tree_cpu_s`, when there is one
CPUACCT = Path("/sys/fs/cgroup/cpuacct")


class Cgroup:
    """A cpuacct cgroup holding this process and so every process it starts from now on (fork inherits it): its CPU
    counted by the kernel, however the processes end — the independent check of `tree_cpu_s`. `pids`: these processes
    instead (and what they start later); `()`: none yet, a child joins it with `joiner`. `usage_s` is None where none
    can be made (no cgroup v1 cpuacct, or not allowed). `remove` deletes it once its processes have ended."""

    def __init__(self, name: str, pids: Sequence[int] | None = None) -> None:
        self.path: Path | None = CPUACCT / name
        try:
            self.path.mkdir()
            for pid in (os.getpid(),) if pids is None else pids:
                (self.path / "cgroup.procs").write_text(f"{pid}\n")
        except OSError:
            self.path = None

    def joiner(self) -> Callable[[], None] | None:
        """A `preexec_fn` that puts the child it runs in into this cgroup (None where there is none)."""
        if self.path is None:
            return None
        procs = str(self.path / "cgroup.procs")

        def join() -> None:
            with open(procs, "w", encoding="ascii") as f:
                f.write(f"{os.getpid()}\n")
        return join

    def usage_s(self) -> float | None:
        if self.path is None:
            return None
        return int((self.path / "cpuacct.usage").read_text()) / 1e9

    @staticmethod
    def remove(name: str, wait_s: float = 20.0) -> None:
        path = CPUACCT / name
        deadline = time.monotonic() + wait_s
        while path.exists():
            try:
                path.rmdir()
            except OSError:  # (still has processes: the JVM ending)
                if time.monotonic() > deadline:
                    return
                time.sleep(0.2)
