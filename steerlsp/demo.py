"""Play a short editor session through steerlsp and print what an editor would show.

Run ``python -m steerlsp.demo [PROJECT_DIR]`` (default: a copy of the example project
shipped as ``steerlsp.example``, in ``steerlsp/example/project`` of a checkout).
steerlsp is started over stdio with pygls' ``LanguageClient``; each step sends
what an editor would send and renders the reply as text: a hover box, a
completion menu, diagnostics with squiggles. Steps are the async functions in
``STEPS``; append one to show a new feature. A failing or slow step is
reported and the rest still run. Exit code: 0 if every step succeeded, else 1.
"""

from __future__ import annotations

import asyncio
import os
import re
import shutil
import sys
import tempfile
import textwrap
import typing
from collections import defaultdict
from collections.abc import Awaitable, Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from lsprotocol import types as t
from pygls.lsp.client import LanguageClient
from pygls.protocol import default_converter

from steerlsp import __version__
from steerlsp.server.lsp.pygls_adapter import client_process, unstructure

STEP_TIMEOUT = 30.0
CART, REPORT = "shop/cart.py", "shop/report.py"


@dataclass
class Session:
    """What the editor knows: the client, open documents, received diagnostics."""

    client: LanguageClient
    root: Path
    texts: dict[str, str] = field(default_factory=dict)
    versions: dict[str, int] = field(default_factory=dict)
    diagnostics: dict[str, list[t.Diagnostic]] = field(default_factory=dict)
    published: dict[str, asyncio.Event] = field(default_factory=lambda: defaultdict(asyncio.Event))
    init: t.InitializeResult | None = None
    upstream_pid: int | None = None

    def doc(self, rel: str) -> t.TextDocumentIdentifier:
        return t.TextDocumentIdentifier(uri=(self.root / rel).as_uri())


# -------------------------------------------------------------- positions and rendering


def utf16_len(s: str) -> int:
    return len(s.encode("utf-16-le")) // 2


def utf16_to_index(line: str, col: int) -> int:
    """A UTF-16 column -> index into the Python string ``line``."""
    return len(line.encode("utf-16-le")[: 2 * col].decode("utf-16-le", "ignore"))


def find(text: str, needle: str, into: int = 0) -> t.Position:
    """Position (UTF-16) ``into`` characters into the first ``needle``."""
    before = text[: text.index(needle) + into]
    return t.Position(line=before.count("\n"), character=utf16_len(before.rsplit("\n", 1)[-1]))


def where(rel: str, pos: t.Position) -> str:
    return f"{rel}:{pos.line + 1}:{pos.character + 1}"


def header(n: int, title: str, place: str = "") -> None:
    print(f"\n── {n}. {title} " + (f"· {place} " if place else "") + "─" * 8)


def show_source(text: str, line: int, start: int, end: int | None = None, mark: str = "^") -> None:
    """The source line and a marker under UTF-16 columns [start, end)."""
    src = (text.splitlines() + [""] * (line + 1))[line]
    a = utf16_to_index(src, start)
    b = max(a + 1, utf16_to_index(src, start if end is None else end))
    pad = "".join("  " if ord(ch) > 0xFFFF else " " for ch in src[:a])  # emoji: 2 cells
    print(f"  {line + 1:>4} │ {src}\n       │ {pad}{mark[0]}{mark[-1] * (b - a - 1)}")


def box(text: str, width: int = 70) -> None:
    lines = [w for ln in text.splitlines() for w in (textwrap.wrap(ln, width) or [""])]
    inner = max(map(len, lines), default=0)
    print("  ┌" + "─" * (inner + 2) + "┐")
    print("\n".join(f"  │ {ln:<{inner}} │" for ln in lines))
    print("  └" + "─" * (inner + 2) + "┘")


def rendered(contents: Any) -> str:
    """Hover markdown as an editor shows it: no code fences, no runs of blank lines."""
    if isinstance(contents, list):
        return "\n\n".join(map(rendered, contents))
    text = str(getattr(contents, "value", contents))
    return re.sub(r"\n{3,}", "\n\n", re.sub(r"^```.*\n?", "", text, flags=re.M)).strip()


# ------------------------------------------------------------------------- the steps


async def open_files(s: Session, n: int) -> None:
    header(n, "Initialize and open files", str(s.root))
    params = t.InitializeParams(
        process_id=os.getpid(),
        root_uri=s.root.as_uri(),
        workspace_folders=[t.WorkspaceFolder(uri=s.root.as_uri(), name=s.root.name)],
        client_info=t.ClientInfo(name="steerlsp-demo", version=__version__),
        capabilities=editor_capabilities(),
    )
    s.init = await s.client.initialize_async(params)
    s.client.initialized(t.InitializedParams())
    for rel in (CART, REPORT):
        s.texts[rel], s.versions[rel] = (s.root / rel).read_text(encoding="utf-8"), 1
        item = t.TextDocumentItem(s.doc(rel).uri, "python", 1, s.texts[rel])
        s.client.text_document_did_open(t.DidOpenTextDocumentParams(text_document=item))
        print(f"  opened {rel} ({len(s.texts[rel].splitlines())} lines)")


async def capabilities(s: Session, n: int) -> None:
    assert s.init is not None
    info, caps = s.init.server_info, s.init.capabilities
    header(n, "Server", f"{info.name} {info.version}" if info else "no serverInfo")
    sync = caps.text_document_sync
    kind = sync.change if isinstance(sync, t.TextDocumentSyncOptions) else sync
    raw = unstructure(s.client.protocol, caps)  # camelCase keys, as on the wire
    on = ", ".join(k[:-8] for k, v in raw.items() if k.endswith("Provider") and v)
    print(f"  position encoding  {caps.position_encoding}")
    print(f"  document sync      {kind.name.lower() if kind is not None else '-'}")
    print("  providers          " + textwrap.fill(on, 57).replace("\n", "\n" + " " * 21))
    if caps.completion_provider and caps.completion_provider.trigger_characters:
        print(f"  completion on      {' '.join(caps.completion_provider.trigger_characters)}")


async def hover(s: Session, n: int) -> None:
    pos = find(s.texts[CART], "return discount(", into=len("return di"))
    header(n, "Hover on `discount`", where(CART, pos))
    show_source(s.texts[CART], pos.line, pos.character)
    result = await s.client.text_document_hover_async(t.HoverParams(s.doc(CART), pos))
    if result is None:
        raise RuntimeError("no hover")
    box(rendered(result.contents))


async def completion(s: Session, n: int) -> None:
    eol = find(s.texts[CART], "self.items[name] = price\n", into=len("self.items[name] = price"))
    typed = "\n        self.items."
    change(s, CART, t.Range(start=eol, end=eol), typed)
    pos = t.Position(line=eol.line + 1, character=utf16_len(typed) - 1)
    header(n, "Completion after `self.items.` (typed into Cart.add)", where(CART, pos))
    show_source(s.texts[CART], pos.line, pos.character, mark="▏")
    context = t.CompletionContext(t.CompletionTriggerKind.TriggerCharacter, ".")
    try:
        params = t.CompletionParams(s.doc(CART), pos, context=context)
        result = await s.client.text_document_completion_async(params)
    finally:  # the user presses Escape and undoes the edit
        change(s, CART, t.Range(start=eol, end=pos), "")
    items = result.items if isinstance(result, t.CompletionList) else (result or [])
    if not items:
        raise RuntimeError("no completion items")
    for item in sorted(items, key=lambda i: i.sort_text or i.label)[:8]:
        kind = t.CompletionItemKind(item.kind).name if item.kind else ""
        print(f"  │ {item.label:<28} {kind:<9} {item.detail or ''}"[:78].rstrip())
    print(f"  └ {len(items)} items")


async def definition(s: Session, n: int) -> None:
    pos = find(s.texts[CART], "return Price(cents)", into=len("return Pr"))
    header(n, "Go to definition of `Price`", where(CART, pos))
    show_source(s.texts[CART], pos.line, pos.character)
    result = await s.client.text_document_definition_async(t.DefinitionParams(s.doc(CART), pos))
    targets: list[Any] = list(result) if isinstance(result, list) else [result] if result else []
    if not targets:
        raise RuntimeError("no definition")
    for target in targets:
        path = (getattr(target, "target_uri", None) or target.uri).removeprefix("file://")
        rng = getattr(target, "target_selection_range", None) or target.range
        print(f"  → {where(os.path.relpath(path, s.root), rng.start)}")
        text = Path(path).read_text(encoding="utf-8")
        show_source(text, rng.start.line, rng.start.character, rng.end.character, "^~")


async def diagnostics(s: Session, n: int) -> None:
    header(n, "Diagnostics", REPORT)
    uri = s.doc(REPORT).uri
    await s.published[uri].wait()
    diags = sorted(s.diagnostics[uri], key=lambda d: (d.range.start.line, d.range.start.character))
    if not diags:
        raise RuntimeError("publishDiagnostics had no diagnostics")
    for d in diags:
        severity = d.severity.name.lower() if d.severity else "?"
        code = f"[{d.code}] " if d.code and str(d.code) not in d.message else ""
        print(f"  {where(REPORT, d.range.start)} {severity} {d.source}: {code}{d.message}")
        end = d.range.end.character if d.range.end.line == d.range.start.line else None
        show_source(s.texts[REPORT], d.range.start.line, d.range.start.character, end, "^~")


async def status(s: Session, n: int) -> None:
    header(n, "steerlsp/status")
    # An unknown method: pygls hands back the result as nested namedtuples.
    result = await s.client.protocol.send_request_async("steerlsp/status", {})
    up = result.upstream
    s.upstream_pid = up.pid
    print(f"  state      {result.state}")
    print(f"  upstream   {' '.join(up.command)}")
    print(f"  pid        {up.pid}  (ready={up.ready}, restarts={up.restarts})")


async def model_ready(s: Session, n: int) -> None:
    header(n, "AI model", "the embedded Gemma 3 270M, in-process")
    started = asyncio.get_running_loop().time()
    while True:
        model = (await s.client.protocol.send_request_async("steerlsp/status", {})).model
        if model.state == "ready":
            break
        if model.state in ("failed", "disabled"):
            raise RuntimeError(f"model {model.state}: {model.error}")
        await asyncio.sleep(0.5)
    waited = asyncio.get_running_loop().time() - started
    print(
        f"  ready after {waited:.1f} s (the first start converts the GGUF; later starts are fast)"
    )


model_ready.timeout = 600.0  # type: ignore[attr-defined]


async def inline_completion(s: Session, n: int) -> None:
    eol = find(
        s.texts[CART],
        "return discount(self.total(), percent)\n",
        into=len("return discount(self.total(), percent)"),
    )
    typed = '\n\n    def count(self) -> int:\n        """How many items."""\n        '
    change(s, CART, t.Range(start=eol, end=eol), typed)
    lines = typed.split("\n")
    pos = t.Position(line=eol.line + len(lines) - 1, character=utf16_len(lines[-1]))
    header(n, "Inline completion (ghost text) in a new method", where(CART, pos))
    try:
        context = t.InlineCompletionContext(trigger_kind=t.InlineCompletionTriggerKind.Invoked)
        params = t.InlineCompletionParams(text_document=s.doc(CART), position=pos, context=context)
        result = await s.client.text_document_inline_completion_async(params)
    finally:  # the user moves on: undo the typing
        change(s, CART, t.Range(start=eol, end=pos), "")
    items = result.items if isinstance(result, t.InlineCompletionList) else (result or [])
    if not items or not str(items[0].insert_text).strip():
        raise RuntimeError("no inline completion")
    for line in typed.split("\n")[-3:-1]:
        print(f"       │ {line}")
    ghost = str(items[0].insert_text).split("\n")
    dim = ("\x1b[2m", "\x1b[0m") if sys.stdout.isatty() else ("", "")
    print(f"       │ {lines[-1]}{dim[0]}{ghost[0]}{dim[1]}   ← ghost text")
    for line in ghost[1:]:
        print(f"       │ {dim[0]}{line}{dim[1]}")


inline_completion.timeout = 120.0  # type: ignore[attr-defined]


async def chatlsp(s: Session, n: int) -> None:
    """Each ChatLSP method at a hole: ``return `` in a function annotated ``-> Price``."""
    eol = find(s.texts[CART], "return os.path.join", into=len("return os.path.join"))
    end = t.Position(line=eol.line, character=len(s.texts[CART].split("\n")[eol.line]))
    typed = (
        "\n\n\ndef checkout(cart: Cart, percent: float) -> Price:\n"
        '    """The cart\'s total after the discount."""\n'
        "    return "
    )
    change(s, CART, t.Range(start=end, end=end), typed)
    lines = typed.split("\n")
    pos = t.Position(line=end.line + len(lines) - 1, character=len(lines[-1]))
    header(n, "ChatLSP at a typed hole", where(CART, pos))
    for line in lines[-3:]:
        print(f"       │ {line}")
    hole = {
        "textDocument": {"uri": s.doc(CART).uri},
        "position": {"line": pos.line, "character": pos.character},
    }

    async def ask(method: str, **extra: Any) -> Any:
        return await s.client.protocol.send_request_async(method, {**hole, **extra})

    try:
        expected = await ask("textDocument/expectedType")
        print(f"  expectedType       {expected.content.value}")
        types_ = await ask("textDocument/relevantTypes")
        print("  relevantTypes")
        box("\n\n".join(c.value for c in types_.contents) or "(none)")
        headers = await ask("textDocument/relevantHeaders")
        print("  relevantHeaders")
        box("\n".join(c.value for c in headers.contents) or "(none)")
        tutorial = await ask("textDocument/aiTutorial")
        print("  aiTutorial")
        box(tutorial.content.value)
        for completion in ("discount(cart.totl(), percent)", "discount(cart.total(), percent)"):
            report = await ask("textDocument/errorReport", completion=completion)
            verdict = "needs repair" if report.needsRepair else "clean"
            print(f"  errorReport        {completion!r}: {verdict}")
            if report.needsRepair:
                box(report.content.value)
        done = await ask("textDocument/llmCompletionResolveErrors")
        print(f"  llmCompletionResolveErrors  return {done.snippet}")
        print(f"                     ({len(done.context.rounds)} error rounds)")
    finally:  # the user moves on: undo the typing
        change(s, CART, t.Range(start=end, end=pos), "")


chatlsp.timeout = 120.0  # type: ignore[attr-defined]


Step = Callable[[Session, int], Awaitable[None]]
STEPS: list[Step] = [
    open_files,
    capabilities,
    hover,
    completion,
    definition,
    diagnostics,
    status,
    model_ready,
    inline_completion,
    chatlsp,
]


# -------------------------------------------------------------------------- plumbing


def change(s: Session, rel: str, rng: t.Range, new: str) -> None:
    """Send one incremental didChange and apply it to our copy of the text."""
    s.versions[rel] += 1
    doc = t.VersionedTextDocumentIdentifier(uri=s.doc(rel).uri, version=s.versions[rel])
    event = t.TextDocumentContentChangePartial(range=rng, text=new)
    s.client.text_document_did_change(t.DidChangeTextDocumentParams(doc, [event]))
    lines = s.texts[rel].split("\n")

    def offset(p: t.Position) -> int:
        return sum(map(len, lines[: p.line])) + p.line + utf16_to_index(lines[p.line], p.character)

    s.texts[rel] = s.texts[rel][: offset(rng.start)] + new + s.texts[rel][offset(rng.end) :]


def editor_capabilities() -> t.ClientCapabilities:
    md = [t.MarkupKind.Markdown, t.MarkupKind.PlainText]
    item = t.ClientCompletionItemOptions(snippet_support=True, documentation_format=md)
    return t.ClientCapabilities(
        general=t.GeneralClientCapabilities(position_encodings=[t.PositionEncodingKind.Utf16]),
        workspace=t.WorkspaceClientCapabilities(workspace_folders=True),
        window=t.WindowClientCapabilities(work_done_progress=True),
        text_document=t.TextDocumentClientCapabilities(
            synchronization=t.TextDocumentSyncClientCapabilities(did_save=True),
            completion=t.CompletionClientCapabilities(completion_item=item, context_support=True),
            hover=t.HoverClientCapabilities(content_format=md),
            definition=t.DefinitionClientCapabilities(link_support=True),
            publish_diagnostics=t.PublishDiagnosticsClientCapabilities(related_information=True),
            inline_completion=t.InlineCompletionClientCapabilities(),
        ),
    )


def demo_converter() -> Any:
    """pygls' converter plus a hook lsprotocol 2025.0.0 lacks under cattrs 26: without
    it pylsp's ``notebookDocumentSync`` fails to parse and ``initialize`` never returns."""
    conv = default_converter()
    by_key: dict[str, type] = {"notebookType": t.NotebookDocumentFilterNotebookType}
    by_key |= {"scheme": t.NotebookDocumentFilterScheme, "pattern": t.NotebookDocumentFilterPattern}

    def is_filter(tp: Any) -> bool:
        args = typing.get_args(tp) if typing.get_origin(tp) is typing.Union else ()
        return set(by_key.values()) <= set(args)

    def structure(obj: Any, _: Any) -> Any:
        if obj is None or isinstance(obj, str):
            return obj
        return conv.structure(obj, by_key[next(k for k in by_key if k in obj)])

    conv.register_structure_hook_func(is_filter, structure)
    return conv


def make_client(s: Session) -> None:
    """Handlers for what the server sends unasked (pygls passes them only the params)."""

    @s.client.feature(t.TEXT_DOCUMENT_PUBLISH_DIAGNOSTICS)
    def on_diagnostics(params: t.PublishDiagnosticsParams) -> None:
        s.diagnostics[params.uri] = list(params.diagnostics)
        s.published[params.uri].set()

    quiet = (t.WINDOW_WORK_DONE_PROGRESS_CREATE, t.CLIENT_REGISTER_CAPABILITY, t.PROGRESS)
    for method in (*quiet, t.WINDOW_LOG_MESSAGE, t.WINDOW_SHOW_MESSAGE):
        s.client.feature(method)(lambda _params: None)


def describe(exc: BaseException) -> str:
    return f"timed out after {STEP_TIMEOUT:g} s" if isinstance(exc, TimeoutError) else repr(exc)


async def run_steps(s: Session) -> int:
    """Run every step with a timeout; return how many did not succeed."""
    failed = 0
    for n, step in enumerate(STEPS, 1):
        try:
            await asyncio.wait_for(step(s, n), getattr(step, "timeout", STEP_TIMEOUT))
        except Exception as exc:  # report it and carry on
            failed += 1
            print(f"  ✗ {step.__name__} failed: {describe(exc)}")
            if step is open_files:
                print("  (no session: skipping the remaining steps)")
                return len(STEPS)
    return failed


async def shut_down(s: Session, stderr: list[str]) -> bool:
    """shutdown + exit; True if steerlsp and its upstream are gone."""
    header(len(STEPS) + 1, "Shutdown")
    proc, ok = client_process(s.client), True
    try:
        await asyncio.wait_for(s.client.shutdown_async(None), STEP_TIMEOUT)
        s.client.exit(None)
        await asyncio.wait_for(proc.wait(), STEP_TIMEOUT) if proc else None
    except Exception as exc:
        print(f"  ✗ shutdown failed: {describe(exc)}")
        ok = False
    if proc is not None and proc.returncode is None:
        print("  ✗ steerlsp did not exit; killing it")
        proc.kill()
        await proc.wait()
    await asyncio.wait_for(s.client.stop(), 5)
    print(f"  steerlsp exited with code {proc.returncode if proc else '?'}")
    if s.upstream_pid is not None:
        gone = not pid_alive(s.upstream_pid)
        print(f"  upstream pid {s.upstream_pid}: " + ("gone" if gone else "✗ still running"))
        ok = ok and gone
    if not ok and stderr:
        print("  server stderr (last lines):\n    " + "\n    ".join(stderr[-10:]))
    return ok


def pid_alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    return True


async def drain(stream: asyncio.StreamReader | None, sink: list[str]) -> None:
    """Read the server's stderr so its pipe never fills; kept for failure reports."""
    while stream is not None and (line := await stream.readline()):
        sink.append(line.decode(errors="replace").rstrip())


async def main_async(root: Path) -> int:
    client = LanguageClient("steerlsp-demo", __version__, converter_factory=demo_converter)
    s = Session(client, root)
    make_client(s)
    # -I: with cwd=root, ``-m`` would import the project's modules before steerlsp's.
    await client.start_io(sys.executable, "-I", "-m", "steerlsp", cwd=str(root))
    stderr: list[str] = []
    process = client_process(client)
    drainer = asyncio.create_task(drain(process.stderr if process else None, stderr))
    failed = await run_steps(s)
    ok = await shut_down(s, stderr)
    drainer.cancel()
    summary = f"{len(STEPS) - failed}/{len(STEPS)} steps succeeded"
    print(f"\n{summary}" + ("" if ok else "; shutdown failed"))
    return 0 if failed == 0 and ok else 1


def example_project() -> Path:
    """The example project shipped with steerlsp (``steerlsp.example``)."""
    from steerlsp import example

    return example.project()


def main(argv: list[str] | None = None) -> int:
    args = sys.argv[1:] if argv is None else argv
    if args:
        root = Path(args[0]).resolve()
        if not (root / CART).is_file() or not (root / REPORT).is_file():
            print(f"steerlsp.demo: {root} has no {CART} and {REPORT}", file=sys.stderr)
            return 1
        return asyncio.run(main_async(root))
    # A copy: the session writes nothing, but the language servers may leave caches
    # next to the files, and an installed package's folder is not the user's to change.
    with tempfile.TemporaryDirectory(prefix="steerlsp-demo-") as scratch:
        root = Path(scratch) / "shop"
        shutil.copytree(example_project(), root, ignore=shutil.ignore_patterns("__pycache__"))
        return asyncio.run(main_async(root))


if __name__ == "__main__":
    raise SystemExit(main())
