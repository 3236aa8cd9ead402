"""errorReport: the static errors a candidate completion would introduce.

The completion is inserted into a shadow copy of the document (never written
to disk) and checked three ways, cheapest first: ``ast.parse``/``compile`` for
syntax, pyflakes for undefined names (in-process, a few milliseconds), and
pylint for the errors generated code makes most (a missing member, a wrong
call) in a warm worker process (``lint_worker``). Only problems on the
completion's own lines are reported: the rest of the file is the user's.
"""

from __future__ import annotations

import ast
import logging
import os
import re
import threading
import time
import warnings
from dataclasses import dataclass, replace

from pyflakes import checker as pyflakes_checker
from pyflakes import messages as pyflakes_messages

from steerlsp import guard
from steerlsp.server.chatlsp import Problem
from steerlsp.server.chatlsp.lint_worker import (
    CODES,
    LintFailed,
    LintWorker,
    WorkerGone,
)
from steerlsp.server.chatlsp.tutorial import site_packages
from steerlsp.server.documents.encodings import UTF8, to_code_points
from steerlsp.server.documents.text import bare, split_keepends
from steerlsp.server.upstream import isolation
from steerlsp.server.upstream.connection import DEFAULT_MEMORY_LIMIT_MB

log = logging.getLogger(__name__)

# Importing pylint and warming astroid can take seconds on a busy machine; a
# check waits this long for a fresh worker before answering without pylint.
STARTUP_TIMEOUT = 30.0
# A worker that dies while starting is not started again for this long (a broken
# pylint install must not cost every check a process start).
RESTART_BACKOFF = 60.0
UNDEFINED = {
    pyflakes_messages.UndefinedName: "F821",
    pyflakes_messages.UndefinedLocal: "F823",
}
_QUOTED = re.compile(r"'([^']*)'")
_ON_LINE = re.compile(r"\bon line (\d+)")
_MAX_CODE = 160  # characters of a line of code quoted in feedback


@dataclass(frozen=True)
class Checked:
    """A shadow copy of the document with the completion in it."""

    text: str  # the document with the completion inserted
    lines: tuple[int, int]  # first and last 0-based line of the completion in ``text``


def with_completion(source: str, line: int, column: int, completion: str) -> Checked:
    """``source`` with ``completion`` inserted at (line, column), clamped to the text.

    Lines are LSP lines (``\\n``, ``\\r\\n``, ``\\r``), columns code points. A
    completion that ends with a line break does not own the line after it.
    """
    lines = split_keepends(source)
    line = min(max(line, 0), len(lines) - 1)
    column = min(max(column, 0), len(bare(lines[line])))
    offset = sum(len(text) for text in lines[:line]) + column
    pieces = split_keepends(completion)
    last = line + len(pieces) - 1
    if len(pieces) > 1 and pieces[-1] == "":
        last -= 1  # the completion's last character is the break itself
    return Checked(source[:offset] + completion + source[offset:], (line, last))


def needs_repair(problems: list[Problem]) -> bool:
    """Whether the completion should go back for a repair round.

    Every problem reported is an error that would fail at import or call time,
    so any one is enough; this is the one place to change that policy.
    """
    return bool(problems)


def feedback(problems: list[Problem], checked: Checked) -> str:
    """Prompt-ready text: each problem under its line of code; "" when none.

    Lines are shown 1-based, as Python's tracebacks and editors show them::

        Line 3: `inv.restok(5)`
          E1101 Instance of 'Inventory' has no 'restok' member
    """
    lines = split_keepends(checked.text)
    out: list[str] = []
    shown: int | None = None
    for problem in sorted(problems, key=lambda p: (p.line, p.column, p.code)):
        if problem.line != shown:
            shown = problem.line
            code = bare(lines[shown]).strip() if shown < len(lines) else ""
            out.append(f"Line {shown + 1}: {_inline_code(code)}")
        message = " ".join(problem.message.split())
        out.append(f"  {problem.code} {message}")
    return "\n".join(out)


class ErrorChecker:
    """Checks completions for one workspace; owns the pylint worker process."""

    def __init__(
        self,
        root: str | None,
        environment: str | None,
        *,
        timeout: float = 5.0,
        memory_limit_mb: int | None = DEFAULT_MEMORY_LIMIT_MB,
    ) -> None:
        """``environment``: a venv directory or an interpreter, or None for steerlsp's own;
        ``memory_limit_mb``: the worker's (``upstream.memoryLimitMb``, at its start)."""
        self._memory_limit_mb = memory_limit_mb
        self._root = root
        self._environment = environment
        self._timeout = timeout
        self._lock = threading.Lock()  # one check at a time: the worker answers in order
        self._worker: LintWorker | None = None
        self._paths: list[str] | None = None
        self._closed = False
        self._retry_at = 0.0  # time.monotonic() before which no worker is started

    @property
    def worker_pid(self) -> int | None:
        """The pylint worker's process id, None when none runs (for logs and tests)."""
        worker = self._worker
        return worker.pid if worker is not None else None

    def warm(self) -> None:
        """Start the pylint worker now, so that the first check does not wait for it."""
        with self._lock:
            self._running_worker()

    def check(self, checked: Checked, path: str) -> list[Problem]:
        """The problems on the completion's lines. Blocking: call from a worker thread."""
        with self._lock:
            syntax, tree = syntax_problems(checked.text, path)
            if tree is None:
                return at_completion(syntax, checked)
            undefined = undefined_names(tree, checked.text, path)
            linted = self._pylint(checked.text, self._absolute(path))
            found = [*syntax, *undefined, *without_duplicates(linted, undefined)]
            return on_lines(found, checked.lines)

    def close(self) -> None:
        """Kill the worker; later checks still report syntax and undefined names."""
        self._closed = True
        worker, self._worker = self._worker, None
        if worker is not None:
            worker.kill()

    # ---- pylint, through the worker --------------------------------------------

    def _pylint(self, text: str, path: str) -> list[Problem]:
        """pylint's problems, or [] when the worker cannot answer in time."""
        for _attempt in range(2):
            worker, fresh = self._running_worker()
            if worker is None:
                return []
            try:
                worker.wait_ready(STARTUP_TIMEOUT)
                found = worker.lint(path, text, self._timeout)
            except TimeoutError as error:
                log.warning("errorReport: pylint skipped: %s", error)
                self._stop()
                return []
            except WorkerGone:
                self._stop()
                if fresh:
                    log.warning("errorReport: the pylint worker could not start; retry later")
                    self._retry_at = time.monotonic() + RESTART_BACKOFF
                    return []
                continue  # it died since the last check: one more try on a fresh one
            except LintFailed as error:
                log.info("errorReport: pylint failed on %s: %s", path, error)
                return []
            return [Problem(**item, source="pylint") for item in found if _well_formed(item)]
        return []

    def _running_worker(self) -> tuple[LintWorker | None, bool]:
        """The worker (started if none runs), and whether it was started just now."""
        if self._worker is not None:
            return self._worker, False
        if self._closed or time.monotonic() < self._retry_at:
            return None, False
        if self._paths is None:
            self._paths = worker_paths(self._root, self._environment)
        try:
            # Not the workspace: nothing there is read as configuration.
            self._worker = LintWorker(self._paths, isolation.neutral_cwd(), self._memory_limit_mb)
        except OSError as error:
            log.warning("errorReport: cannot start the pylint worker: %s", error)
            return None, False
        return self._worker, True

    def _stop(self) -> None:
        worker, self._worker = self._worker, None
        if worker is not None:
            worker.kill()

    def _absolute(self, path: str) -> str:
        if not os.path.isabs(path) and self._root:
            path = os.path.join(self._root, path)
        return os.path.abspath(path)


def worker_paths(root: str | None, environment: str | None) -> list[str]:
    """What the worker appends to its ``sys.path``: the workspace, then the project's
    site-packages (only for an environment the caller gave: None is steerlsp's own,
    which the worker already has)."""
    paths: list[str] = []
    if root:
        paths.append(os.path.abspath(root))
        src = os.path.join(root, "src")
        if os.path.isdir(src):
            paths.append(os.path.abspath(src))
    if environment is not None:
        paths.extend(site_packages(environment))
    return list(dict.fromkeys(paths))


# ---- the in-process checks (pure) --------------------------------------------------


def syntax_problems(text: str, path: str) -> tuple[list[Problem], ast.Module | None]:
    """Syntax errors, and the tree when ``text`` parses (else None).

    The parser counts columns in code points; errors found after parsing
    (``'return' outside function``) count them in UTF-8 bytes, like the tree.
    """
    try:
        tree = ast.parse(text, filename=guard.safe_filename(path))
    except SyntaxError as error:
        return [_syntax_problem(error, text, in_bytes=False)], None
    except (ValueError, RecursionError, MemoryError):
        return [], None  # NUL bytes, absurd nesting: nothing to point at
    try:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")  # SyntaxWarnings are not errors
            compile(tree, path, "exec", dont_inherit=True)
    except SyntaxError as error:
        return [_syntax_problem(error, text, in_bytes=True)], tree
    except (ValueError, RecursionError, MemoryError):
        pass
    return [], tree


def undefined_names(tree: ast.Module, text: str, path: str) -> list[Problem]:
    """pyflakes' undefined names and locals referenced before assignment."""
    lines = [bare(line) for line in split_keepends(text)]
    found: list[Problem] = []
    for message in pyflakes_checker.Checker(tree, filename=path).messages:
        code = UNDEFINED.get(type(message))
        if code is None:
            continue
        line = message.lineno - 1
        name = str(message.message_args[0])
        column = to_code_points(lines[line] if line < len(lines) else "", message.col, UTF8)
        found.append(
            Problem(
                line=line,
                column=column,
                end_line=line,
                end_column=column + len(name),
                code=code,
                message=message.message % message.message_args,
                source="pyflakes",
            )
        )
    return found


def without_duplicates(linted: list[Problem], undefined: list[Problem]) -> list[Problem]:
    """pylint's problems less its undefined-variable where pyflakes said the same."""
    seen = {(p.line, _name_in(p.message)) for p in undefined}
    return [p for p in linted if p.code != "E0602" or (p.line, _name_in(p.message)) not in seen]


def on_lines(problems: list[Problem], lines: tuple[int, int]) -> list[Problem]:
    """The problems that start on the completion's lines, in text order."""
    first, last = lines
    return sorted(
        (p for p in problems if first <= p.line <= last),
        key=lambda p: (p.line, p.column, p.code),
    )


def at_completion(syntax: list[Problem], checked: Checked) -> list[Problem]:
    """Syntax errors the completion caused, moved onto its lines.

    Python reports some of them after the completion: a half-written
    completion at the end of a file (``def f():``, ``foo(``) at the end of the
    text, and a block opener without a body at the next statement, naming the
    opener's line ("expected an indented block after 'for' statement on line
    9"). Those are the completion's errors; any other stays the user's.
    """
    first, last = checked.lines
    lines = [bare(line) for line in split_keepends(checked.text)]
    moved: list[Problem] = []
    for problem in syntax:
        named = _ON_LINE.search(problem.message)
        opener = int(named.group(1)) - 1 if named else -1
        if problem.line > last and first <= opener <= last:
            text = lines[opener]
            start = len(text) - len(text.lstrip())
            problem = replace(problem, line=opener, column=start, end_line=opener)
            problem = replace(problem, end_column=len(text))
        elif problem.line > last and all(
            _blank(line) for line in lines[last + 1 : problem.line + 1]
        ):
            end = len(lines[last]) if last < len(lines) else 0
            problem = replace(problem, line=last, column=end, end_line=last, end_column=end)
        moved.append(problem)
    return on_lines(moved, (first, last))


def _syntax_problem(error: SyntaxError, text: str, *, in_bytes: bool) -> Problem:
    lines = [bare(line) for line in split_keepends(text)]
    line = max((error.lineno or 1) - 1, 0)
    end_line = max((error.end_lineno or error.lineno or 1) - 1, line)

    def column(at: int, offset: int | None) -> int:
        value = max((offset or 1) - 1, 0)
        if in_bytes and at < len(lines):
            return to_code_points(lines[at], value, UTF8)
        return value

    start = column(line, error.offset)
    end = column(end_line, error.end_offset) if error.end_offset else start
    if end_line == line and end < start:
        end = start
    return Problem(line, start, end_line, end, "syntax-error", error.msg, "python")


def _blank(line: str) -> bool:
    stripped = line.strip()
    return not stripped or stripped.startswith("#")


def _name_in(message: str) -> str:
    match = _QUOTED.search(message)
    return match.group(1) if match else ""


def _inline_code(code: str) -> str:
    if len(code) > _MAX_CODE:
        code = code[: _MAX_CODE - 1] + "…"
    if "`" in code:
        return f"`` {code} ``"
    return f"`{code}`"


def _well_formed(item: object) -> bool:
    """A worker reply item with exactly Problem's fields (less ``source``)."""
    keys = {"line", "column", "end_line", "end_column", "code", "message"}
    return isinstance(item, dict) and set(item) == keys and item["code"] in CODES
