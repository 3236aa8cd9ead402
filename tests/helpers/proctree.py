"""Watch a process and all its descendants through /proc (Linux): peak resident
memory (and address space, which is what an ``RLIMIT_AS`` limit counts) per
process and per role, where each one runs and with which environment.

A thread samples every ``interval`` seconds, so a short-lived child (a linter
run) may be missed; a long-lived one (pylsp) never is. Roles are given after
the run, from each process's command line and the pids the server reported.
"""

from __future__ import annotations

import contextlib
import os
import signal
import threading
import time
from collections import Counter
from collections.abc import Callable
from dataclasses import dataclass


@dataclass
class Seen:
    """One process seen under the root."""

    pid: int
    start: int  # clock ticks after boot: with the pid, the process's identity
    ppid: int
    comm: str
    cmdline: list[str]
    cwd: str | None
    safe_path: bool | None  # PYTHONSAFEPATH=1 in its environment (None: unreadable)
    peak_kib: int = 0  # VmRSS
    peak_vm_kib: int = 0  # VmSize: the address space
    samples: int = 0
    role: str = ""


@dataclass
class RoleStats:
    processes: int = 0
    peak_mib: float = 0.0
    peak_vm_mib: float = 0.0
    peak_pid: int | None = None
    example: str = ""


def _stat(pid: int) -> tuple[int, int, str, str] | None:
    """(ppid, start time, comm, state) of ``pid`` from /proc/pid/stat, or None."""
    try:
        with open(f"/proc/{pid}/stat", "rb") as f:
            data = f.read()
    except OSError:
        return None
    close = data.rfind(b")")
    comm = data[data.find(b"(") + 1 : close].decode("utf-8", "replace")
    fields = data[close + 2 :].split()
    return int(fields[1]), int(fields[19]), comm, fields[0].decode()


def table() -> dict[int, tuple[int, int, str, str]]:
    """Every process: pid -> (ppid, start time, comm, state)."""
    found = {}
    for entry in os.scandir("/proc"):
        if entry.name.isdigit() and (info := _stat(int(entry.name))) is not None:
            found[int(entry.name)] = info
    return found


def memory_kib(pid: int) -> tuple[int, int] | None:
    """(VmRSS, VmSize) of ``pid`` in KiB, or None once it is gone."""
    found: dict[bytes, int] = {}
    try:
        with open(f"/proc/{pid}/status", "rb") as f:
            for line in f:
                name, _, value = line.partition(b":")
                if name in (b"VmRSS", b"VmSize"):
                    found[name] = int(value.split()[0])
    except (OSError, ValueError, IndexError):
        return None
    return (found[b"VmRSS"], found[b"VmSize"]) if len(found) == 2 else None


def _describe(pid: int, start: int, ppid: int, comm: str) -> Seen:
    cmdline: list[str] = []
    cwd = None
    safe: bool | None = None
    with contextlib.suppress(OSError):
        with open(f"/proc/{pid}/cmdline", "rb") as f:
            cmdline = [a.decode("utf-8", "replace") for a in f.read().split(b"\0") if a]
        cwd = os.readlink(f"/proc/{pid}/cwd")
        with open(f"/proc/{pid}/environ", "rb") as f:
            safe = b"PYTHONSAFEPATH=1" in f.read().split(b"\0")
    return Seen(pid, start, ppid, comm, cmdline, cwd, safe)


class ProcessWatch:
    """Samples ``root`` and its descendants in a thread until :meth:`stop`."""

    def __init__(self, root: int, interval: float = 0.25) -> None:
        self.root = root
        self.interval = interval
        self.seen: dict[tuple[int, int], Seen] = {}
        self.samples = 0
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._run, name="proctree", daemon=True)

    def start(self) -> None:
        self._thread.start()

    def stop(self) -> None:
        self._stop.set()
        self._thread.join()

    def _run(self) -> None:
        while not self._stop.is_set():
            self.sample()
            self._stop.wait(self.interval)

    def sample(self) -> None:
        procs = table()
        children: dict[int, list[int]] = {}
        for pid, (ppid, *_rest) in procs.items():
            children.setdefault(ppid, []).append(pid)
        todo = [self.root] if self.root in procs else []
        while todo:
            pid = todo.pop()
            todo += children.get(pid, [])
            ppid, start, comm, state = procs[pid]
            if state == "Z":
                continue
            seen = self.seen.get((pid, start))
            if seen is None:
                seen = self.seen[(pid, start)] = _describe(pid, start, ppid, comm)
            memory = memory_kib(pid)
            if memory is not None:
                seen.peak_kib = max(seen.peak_kib, memory[0])
                seen.peak_vm_kib = max(seen.peak_vm_kib, memory[1])
                seen.samples += 1
        self.samples += 1

    def descendants(self) -> list[Seen]:
        return [s for s in self.seen.values() if s.pid != self.root]

    def assign_roles(self, role_of: Callable[[Seen], str]) -> dict[str, RoleStats]:
        """Name each process's role; peak memory and count per role."""
        roles: dict[str, RoleStats] = {}
        for seen in self.seen.values():
            seen.role = "steerlsp" if seen.pid == self.root else role_of(seen)
            stats = roles.setdefault(seen.role, RoleStats())
            stats.processes += 1
            stats.peak_vm_mib = max(stats.peak_vm_mib, round(seen.peak_vm_kib / 1024, 1))
            if seen.peak_kib / 1024 >= stats.peak_mib:
                stats.peak_mib = round(seen.peak_kib / 1024, 1)
                stats.peak_pid = seen.pid
                stats.example = " ".join(seen.cmdline)[:160]
        return roles

    def left_running(self, grace: float = 5.0) -> list[Seen]:
        """Descendants still alive (not zombies) after ``grace`` seconds; call once the
        root has exited (they have been handed to init by then)."""
        deadline = time.monotonic() + grace
        while True:
            alive = []
            for seen in self.descendants():
                info = _stat(seen.pid)
                if info is not None and info[1] == seen.start and info[3] != "Z":
                    alive.append(seen)
            if not alive or time.monotonic() > deadline:
                return alive
            time.sleep(0.2)


def kill(processes: list[Seen]) -> None:
    """SIGKILL each process, by pid, if it is still the same process."""
    for seen in processes:
        info = _stat(seen.pid)
        if info is not None and info[1] == seen.start:
            with contextlib.suppress(ProcessLookupError, PermissionError):
                os.kill(seen.pid, signal.SIGKILL)


def snapshot(root: int) -> list[str]:
    """``root`` and its descendants as they are now: state, what each thread waits in,
    and the descriptors that name a pipe, FIFO or device (what a stuck read blocks on)."""
    procs = table()
    children: dict[int, list[int]] = {}
    for pid, (ppid, *_rest) in procs.items():
        children.setdefault(ppid, []).append(pid)
    lines, todo = [], [root] if root in procs else []
    while todo:
        pid = todo.pop()
        todo += children.get(pid, [])
        ppid, _, comm, state = procs[pid]
        seen = _describe(pid, 0, ppid, comm)
        waits: Counter[str] = Counter()
        with contextlib.suppress(OSError):
            for task in os.scandir(f"/proc/{pid}/task"):
                with contextlib.suppress(OSError), open(f"{task.path}/wchan") as f:
                    waits[f.read().strip() or "running"] += 1
        fds = []
        with contextlib.suppress(OSError):
            for fd in os.scandir(f"/proc/{pid}/fd"):
                with contextlib.suppress(OSError):
                    target = os.readlink(fd.path)
                    if target.startswith(("pipe:", "/dev/", "/tmp/")) or int(fd.name) < 3:
                        fds.append(f"{fd.name}->{target}")
        lines.append(
            f"pid {pid} ppid {ppid} {state} cwd={seen.cwd} threads={dict(waits)} "
            f"fds={fds[:12]} cmd={' '.join(seen.cmdline)[:200]}"
        )
    return lines
