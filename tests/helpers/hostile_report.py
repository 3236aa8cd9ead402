"""What the hostile phase (tests/helpers/hostile.py) measured, and which promises broke.

:class:`HostileReport` is what bench/fuzz.py writes under ``"hostile"`` and
tests/e2e/test_fuzz.py asserts on; :func:`finish` fills in what the process
watcher saw once steerlsp has exited (roles, peak memory, where each process
ran, what was left running, the markers), and :func:`table_rows` is its part
of bench/fuzz.py's table.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any

from tests.helpers import proctree
from tests.helpers.hostile_workspace import Workspace

PYLSP_ROLES = ("pylsp", "pylsp (steering)")


@dataclass
class MethodStats:
    """Requests of one method: how many were sent, answered, and how."""

    sent: int = 0
    answered: int = 0  # within the timeout
    results: int = 0
    errors: dict[str, int] = field(default_factory=dict)
    max_ms: float = 0.0


@dataclass
class HostileReport:
    """One hostile session. Lists hold one line per finding, for the reader."""

    seconds: float = 0.0
    seed: int = 0
    model: bool = False
    workspace: str = ""
    log_file: str = ""
    requests: int = 0
    answered: int = 0  # by the end, hangs answered late included
    never_answered: int = 0
    hangs: list[str] = field(default_factory=list)  # id, method, uri, seconds unanswered
    hang_snapshot: list[str] = field(default_factory=list)  # the process tree at the first hang
    before_first_hang: list[str] = field(default_factory=list)  # what the client sent just before
    double_replies: list[str] = field(default_factory=list)
    stray_replies: int = 0
    by_method: dict[str, MethodStats] = field(default_factory=dict)
    notifications: dict[str, int] = field(default_factory=dict)
    special_requests: int = 0
    special_results: list[str] = field(default_factory=list)  # answered by the upstream
    server_notifications: dict[str, int] = field(default_factory=dict)
    status_polls: int = 0
    upstream: dict[str, Any] = field(default_factory=dict)  # the last status
    analysis: dict[str, Any] = field(default_factory=dict)
    upstream_pids: list[int] = field(default_factory=list)
    analysis_pids: list[int] = field(default_factory=list)
    memory_limit_mb: int | None = None
    rss: dict[str, Any] = field(default_factory=dict)  # role -> RoleStats
    pylsp_peak_mib: float = 0.0  # resident
    pylsp_peak_vm_mib: float = 0.0  # address space: what the limit holds the default pylsp to
    processes: int = 0
    process_list: list[str] = field(default_factory=list)  # every process seen, by start
    proc_samples: int = 0
    cwd_in_workspace: list[str] = field(default_factory=list)
    without_safe_path: list[str] = field(default_factory=list)
    markers: list[str] = field(default_factory=list)
    left_running: list[str] = field(default_factory=list)
    shutdown: str = ""
    exit_code: int | None = None
    control_chars: list[str] = field(default_factory=list)
    framing_errors: list[str] = field(default_factory=list)
    aborted: str | None = None

    def problems(self) -> list[str]:
        """Every broken promise, one line each."""
        found = [f"aborted: {self.aborted}"] if self.aborted else []
        checks = [
            ("markers (workspace code ran)", self.markers),
            ("hangs", self.hangs),
            ("double replies", self.double_replies),
            ("special files answered by the upstream", self.special_results),
            ("processes in the workspace", self.cwd_in_workspace),
            ("Python processes without PYTHONSAFEPATH", self.without_safe_path),
            ("processes left running after exit", self.left_running),
            ("control characters written", self.control_chars),
            ("framing errors", self.framing_errors),
        ]
        found += [f"{name} ({len(items)}): {items[:3]}" for name, items in checks if items]
        if self.stray_replies:
            found.append(f"{self.stray_replies} replies to ids never sent")
        limit = self.memory_limit_mb
        if limit and self.pylsp_peak_mib > limit:
            found.append(f"a pylsp reached {self.pylsp_peak_mib:.0f} MiB, over its {limit} MiB")
        if self.shutdown != "result" or self.exit_code != 0:
            found.append(f"shutdown: {self.shutdown or 'no reply'}, exit code {self.exit_code}")
        return found


def shown_command(cmdline: list[str], limit: int = 160) -> str:
    """A command line on one line: ``-c`` code summarised (pylsp's bootstrap is long),
    cut in the middle, so that the file it works on (last) stays visible."""
    args = list(cmdline)
    for n, arg in enumerate(args[:-1]):
        if arg == "-c" and len(args[n + 1]) > 40:
            code = args[n + 1]
            args[n + 1] = "<guard, pylsp>" if "steerlsp_guard" in code else repr(code[:30] + "...")
    text = " ".join(args)
    return text if len(text) <= limit else text[: limit // 3] + " ... " + text[-2 * limit // 3 :]


def role_of(report: HostileReport, root: int) -> Callable[[proctree.Seen], str]:
    """A process's role, from its command line and the pids steerlsp/status reported.
    A child of pylsp with pylsp's command line is one of its forks, before its exec."""

    def role(seen: proctree.Seen) -> str:
        text = " ".join(seen.cmdline)
        if "pylsp.__main__" in text or text.endswith("-m pylsp"):
            if seen.ppid != root:
                return "pylsp fork (before exec)"
            return "pylsp (steering)" if seen.pid in report.analysis_pids else "pylsp"
        if "jedi" in text and "subprocess" in text:
            return "jedi subprocess"
        if "lint_worker" in text:
            return "lint worker"
        if "pylint" in text:
            return "pylint (pylsp plugin)"
        if "flake8" in text:
            return "flake8 (pylsp plugin)"
        return seen.comm

    return role


def finish(report: HostileReport, watch: proctree.ProcessWatch, ws: Workspace) -> None:
    """Roles, memory peaks, where each process ran, leftovers and markers."""
    roles = watch.assign_roles(role_of(report, watch.root))
    report.rss = {name: asdict(stats) for name, stats in sorted(roles.items())}
    report.processes, report.proc_samples = len(watch.seen), watch.samples
    pylsps = [s for s in watch.seen.values() if s.role in PYLSP_ROLES]
    report.pylsp_peak_mib = round(max((s.peak_kib / 1024 for s in pylsps), default=0.0), 1)
    report.pylsp_peak_vm_mib = round(max((s.peak_vm_kib / 1024 for s in pylsps), default=0.0), 1)
    root = str(ws.root.resolve())
    for seen in sorted(watch.seen.values(), key=lambda s: s.start)[:300]:
        report.process_list.append(
            f"{seen.role} pid {seen.pid} ppid {seen.ppid} peak {seen.peak_kib // 1024} MiB "
            f"cwd {seen.cwd}: {shown_command(seen.cmdline)}"
        )
    for seen in watch.descendants():
        shown = f"{seen.role} pid {seen.pid}: {shown_command(seen.cmdline)}"
        if seen.cwd is not None and (seen.cwd == root or seen.cwd.startswith(root + "/")):
            report.cwd_in_workspace.append(f"{shown} (cwd {seen.cwd})")
        python = any("python" in Path(a).name for a in seen.cmdline[:1])
        if python and seen.safe_path is False:
            report.without_safe_path.append(shown)
    left = watch.left_running()
    report.left_running = [f"{s.role} pid {s.pid}: {shown_command(s.cmdline)}" for s in left]
    proctree.kill(left)
    for marker in sorted(ws.markers.iterdir()):
        report.markers.append(f"{marker.name}: {marker.read_text(errors='replace')[:200]}")


def table_rows(report: dict[str, Any]) -> list[tuple[str, str, str]]:
    """Rows of bench/fuzz.py's table for a report (as a dict, from the JSON)."""
    r = report
    in_time = sum(m["answered"] for m in r["by_method"].values())
    rows = [
        ("hostile", "requests sent", f"{r['requests']} in {r['seconds']:.0f} s"),
        ("hostile", "answered in time", str(in_time)),
        (
            "hostile",
            "hangs (answered late / never)",
            f"{len(r['hangs'])} ({len(r['hangs']) - r['never_answered']} / {r['never_answered']})",
        ),
        ("hostile", "double replies", str(len(r["double_replies"]))),
        (
            "hostile",
            "special-file requests",
            f"{r['special_requests']}, {len(r['special_results'])} answered upstream",
        ),
        ("hostile", "notifications sent", str(sum(r["notifications"].values()))),
        (
            "hostile",
            "upstream restarts (memory)",
            f"{r['upstream'].get('restarts')} ({r['upstream'].get('memory_restarts')})",
        ),
    ]
    if r["analysis"].get("state", "idle") != "idle":
        analysis = r["analysis"]
        rows.append(
            (
                "hostile",
                "analysis restarts (memory)",
                f"{analysis.get('restarts')} ({analysis.get('memory_restarts')})",
            )
        )
    for role, stats in r["rss"].items():
        rows.append(
            (
                "hostile",
                f"peak RSS: {role}",
                f"{stats['peak_mib']:.0f} MiB, {stats['peak_vm_mib']:.0f} MiB virtual"
                f" ({stats['processes']} processes)",
            )
        )
    pylsp = f"{r['pylsp_peak_mib']:.0f} ({r['pylsp_peak_vm_mib']:.0f})"
    rows += [
        ("hostile", "pylsp peak RSS (virtual) / limit", f"{pylsp} / {r['memory_limit_mb']} MiB"),
        ("hostile", "markers (workspace code run)", str(len(r["markers"]))),
        (
            "hostile",
            "in workspace / no PYTHONSAFEPATH",
            f"{len(r['cwd_in_workspace'])} / {len(r['without_safe_path'])}",
        ),
        ("hostile", "shutdown / exit code", f"{r['shutdown'] or '-'} / {r['exit_code']}"),
        ("hostile", "left running after exit", str(len(r["left_running"]))),
    ]
    return rows
