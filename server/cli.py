"""Command line: ``steerlsp [--tcp HOST:PORT] [--log-file F] [--upstream CMD ...]``."""

from __future__ import annotations

import argparse
import asyncio
import logging
import os
import signal
import socket
import sys
from collections.abc import Callable, MutableMapping, Sequence
from typing import Any, BinaryIO

from steerlsp import __version__, guard
from steerlsp.server import config
from steerlsp.server.app import build_server
from steerlsp.server.lsp.transport import ClientWriter, start_reader
from steerlsp.server.upstream import isolation
from steerlsp.server.upstream.connection import UpstreamOptions
from steerlsp.server.upstream.process import default_command

log = logging.getLogger("steerlsp")


def build_parser() -> argparse.ArgumentParser:
    """The CLI's argument parser."""
    parser = argparse.ArgumentParser(
        prog="steerlsp",
        description="AI language server for Python: proxies pylsp and serves steered completions.",
    )
    parser.add_argument("--version", action="version", version=f"steerlsp {__version__}")
    parser.add_argument("--tcp", metavar="HOST:PORT", help="listen on TCP instead of stdio")
    parser.add_argument("--log-file", help="write logs here instead of stderr")
    parser.add_argument(
        "--log-level",
        default="warning",
        choices=["debug", "info", "warning", "error"],
        help="document text is logged at debug level only (default: warning)",
    )
    parser.add_argument(
        "--model",
        help="'default' (embedded Gemma 3 270M), a Hugging Face id, a directory or a .gguf file",
    )
    parser.add_argument("--device", help="auto, cpu, cuda, cuda:N or mps (default: auto)")
    parser.add_argument("--dtype", help="auto, float32, bfloat16 or float16 (default: auto)")
    parser.add_argument(
        "--no-model", action="store_true", help="proxy only: no AI completions, no model loaded"
    )
    parser.add_argument("--max-restarts", type=int, default=5, help=argparse.SUPPRESS)
    # Benchmarks kill the upstream dozens of times; the backoff would be most of their time.
    parser.add_argument("--restart-backoff", type=float, default=None, help=argparse.SUPPRESS)
    parser.add_argument("--bench-methods", action="store_true", help=argparse.SUPPRESS)
    parser.add_argument(
        "--upstream",
        nargs=argparse.REMAINDER,
        metavar="CMD",
        help="upstream language server command and its arguments; must come last "
        "(default: pylsp from this environment)",
    )
    return parser


def cli_settings(args: argparse.Namespace) -> dict[str, Any]:
    """The CLI's model flags as a settings object (validated like the editor's)."""
    model = {
        key: value
        for key, value in (("name", args.model), ("device", args.device), ("dtype", args.dtype))
        if value is not None
    }
    raw: dict[str, Any] = {"model": model}
    if args.no_model:
        raw["completion"] = {"enabled": False}
    return raw


def parse_tcp(value: str) -> tuple[str, int]:
    """``HOST:PORT`` -> (host, port); raises ValueError with the bad value."""
    host, sep, port = value.rpartition(":")
    if not sep or not port.isdigit() or not 0 < int(port) < 65536:
        raise ValueError(f"--tcp expects HOST:PORT, got {value!r}")
    return host or "127.0.0.1", int(port)


def configure_logging(level: str, log_file: str | None) -> None:
    """Route logs to stderr or a file; keep pygls' message dumps and the libraries'
    noise out below debug (see :func:`quiet_libraries`)."""
    handler: logging.Handler = (
        logging.FileHandler(log_file, encoding="utf-8")
        if log_file
        else logging.StreamHandler(sys.stderr)
    )
    handler.setFormatter(logging.Formatter("%(asctime)s %(levelname)s %(name)s: %(message)s"))
    root = logging.getLogger()
    root.handlers[:] = [handler]
    root.setLevel(level.upper())
    # pygls logs whole message bodies (document text) at INFO.
    logging.getLogger("pygls").setLevel(logging.DEBUG if level == "debug" else logging.WARNING)
    quiet_libraries(debug=level == "debug")


def quiet_libraries(*, debug: bool, environ: MutableMapping[str, str] = os.environ) -> None:
    """No progress bars on stderr, and library warnings at debug level only.

    Editors log every line a server writes to stderr (Neovim as ERROR), and a
    progress bar is many lines of carriage returns. transformers, huggingface_hub
    and the GGUF conversion draw theirs with tqdm, which reads ``TQDM_DISABLE``
    when it is imported: on the model worker, after this runs (torch and
    transformers are not imported at startup). Their deprecation warnings
    (``FutureWarning``, transformers' own logger) are for steerlsp's developers,
    not for the editor's log. A user's own setting of these variables wins.
    """
    environ.setdefault("TQDM_DISABLE", "1")
    environ.setdefault("HF_HUB_DISABLE_PROGRESS_BARS", "1")
    if not debug:
        environ.setdefault("TRANSFORMERS_VERBOSITY", "error")
    logging.captureWarnings(True)
    logging.getLogger("py.warnings").setLevel(logging.DEBUG if debug else logging.ERROR)


# How long (busy-wait iterations) torch's idle OpenMP threads spin before they sleep:
# libgomp's default is 300,000.
SPIN_COUNT = "10000"


def share_the_cores(environ: MutableMapping[str, str] = os.environ) -> None:
    """torch's OpenMP threads spin only briefly when they wait (``GOMP_SPINCOUNT``),
    unless the user chose a wait policy or a spin count. libgomp reads it when torch
    loads, on the model worker, after this runs.

    By default idle threads spin a while, which pays on a machine of their own;
    steerlsp shares one with the processes it starts (both pylsps lint and infer
    while the model decodes), and on 2 cores a spinning team's throughput fell to
    0.10-0.20x whenever one of them worked. Spinning a thirtieth as long kept
    0.45-0.50x, at the full speed when nothing else runs; sleeping at once
    (``OMP_WAIT_POLICY=PASSIVE``) kept 0.62-0.70x but cost 6-21% when nothing else
    runs (``bench/decode_contention.py``). Cutting the threads instead would change
    the logits with the load (bf16 sums split differently).
    """
    if "OMP_WAIT_POLICY" not in environ:
        environ.setdefault("GOMP_SPINCOUNT", SPIN_COUNT)


async def serve(
    read: Callable[[int], bytes],
    fileno: int,
    writer: ClientWriter,
    options: UpstreamOptions,
    *,
    settings: config.Settings | None = None,
    bench_methods: bool = False,
) -> int:
    """Run one editor session over the given byte streams; return the exit code."""
    loop = asyncio.get_running_loop()
    app = build_server(writer, options, loop, settings=settings, bench_methods=bench_methods)
    await app.proxy.start_upstream()
    start_reader(read, fileno, loop, app.proxy.on_client_events, app.proxy.on_client_eof)
    code = await app.proxy.exit_code
    await app.close()
    await drop_unfinished()
    return code


# How long the tasks still in flight when a session ends get to take their cancel.
DROP_SECONDS = 2.0


async def drop_unfinished() -> None:
    """Cancel what is still in flight when the session ends, and read how each task
    ended. A question asked ahead of the model is often still with the analysis pylsp
    at ``exit``; that pylsp has just stopped, so its task ends with the pylsp's exit
    rather than the cancel, and ``asyncio.run`` would report it as an ERROR with a
    traceback on stderr (which editors show to the user)."""
    current = asyncio.current_task()
    pending = [task for task in asyncio.all_tasks() if task is not current]
    for task in pending:
        task.cancel()
    if not pending:
        return
    done, _ = await asyncio.wait(pending, timeout=DROP_SECONDS)
    for task in done:
        if not task.cancelled() and task.exception() is not None:
            log.debug("%s ended with the session: %r", task.get_name(), task.exception())


def _terminated(signum: int, frame: object) -> None:
    """SIGTERM (an editor stopping its server without ``exit``, a service manager):
    the ending ``exit`` has, less the wait for busy worker threads. pylsp and the
    other children see their stdin close and exit."""
    isolation.cleanup()
    os._exit(128 + signum)


def main(argv: Sequence[str] | None = None) -> int:
    """Console-script entry point."""
    args = build_parser().parse_args(argv)
    configure_logging(args.log_level, args.log_file)
    share_the_cores()
    if args.upstream is not None and not args.upstream:
        build_parser().error("--upstream needs a command")
    options = UpstreamOptions(
        command=args.upstream or default_command(), max_restarts=args.max_restarts
    )
    if args.restart_backoff is not None:
        options.backoff = (args.restart_backoff,)
    base, problems = config.merge(config.Settings(), cli_settings(args))
    if problems:
        build_parser().error("; ".join(problems))
    session = {"settings": base, "bench_methods": args.bench_methods}
    # Worker threads (the model's, pygls') hold the GIL in bursts; a short switch
    # interval keeps the event loop's forwarding latency well under 1 ms.
    sys.setswitchinterval(0.0001)
    isolation.protect_self()
    signal.signal(signal.SIGTERM, _terminated)
    guard.install(base.upstream.max_document_bytes)  # Jedi and parso in ChatLSP
    try:
        if args.tcp:
            code = _serve_tcp(args.tcp, options, session)
        else:
            stream = reserve_stdout()
            editor = reserve_stdin()
            writer = ClientWriter(stream.write, stream.flush)
            code = asyncio.run(
                serve(lambda n: os.read(editor, n), editor, writer, options, **session)
            )
    except KeyboardInterrupt:
        code = 1
    isolation.cleanup()
    logging.shutdown()
    # Worker threads may still be busy; they must not keep the process alive.
    os._exit(code)


def reserve_stdin() -> int:
    """The editor's input, kept for the reader alone: file descriptor 0 is duplicated to
    a private one (not inherited), then pointed at ``/dev/null``.

    Otherwise a child started without its own stdin would hold the editor's pipe,
    and anything in this process that opens ``/dev/stdin`` (Jedi following a
    workspace symlink) would read the editor's messages away from the reader.
    """
    private = os.dup(0)
    null = os.open(os.devnull, os.O_RDONLY)
    os.dup2(null, 0)
    os.close(null)
    return private


def reserve_stdout() -> BinaryIO:
    """The editor's stream, kept for :class:`ClientWriter` alone: file descriptor 1 is
    duplicated to a private one, then pointed at stderr, with ``sys.stdout``.

    A stray ``print`` in the process (a library's progress line, a debugging
    leftover) or a child process that inherits descriptor 1 would otherwise write
    between frames: unframed bytes, maybe a NUL, that the editor reads as protocol.
    Now they land in the log, and every byte to the editor passes the writer's guard.
    """
    sys.stdout.flush()
    private = os.dup(1)  # not inherited by children (PEP 446)
    os.dup2(2, 1)
    sys.stdout = sys.stderr
    return os.fdopen(private, "wb")


def _serve_tcp(address: str, options: UpstreamOptions, session: dict[str, Any]) -> int:
    try:
        host, port = parse_tcp(address)
    except ValueError as exc:
        build_parser().error(str(exc))
    with socket.create_server((host, port)) as listener:
        log.warning("listening on %s:%d", host, port)
        conn, peer = listener.accept()
    log.info("editor connected from %s", peer)
    with conn:
        writer = ClientWriter(conn.sendall)
        return asyncio.run(serve(conn.recv, conn.fileno(), writer, options, **session))
