"""The private analysis instance against real pylsp and the example project (no model).

The decode thread's calls are synchronous, so each test asks from a worker
thread (``asyncio.to_thread``) while the test's event loop runs the instance.
"""

import asyncio
import contextlib
import os
import signal
import time
from collections.abc import AsyncIterator
from typing import Any

import pytest
from pygls.uris import from_fs_path

from steerlsp import example
from steerlsp.models.steering.analysis import AnalysisTimeout, DefinitionSource
from steerlsp.server.analysis.instance import AnalysisInstance
from steerlsp.server.upstream.listener import Headless
from tests.helpers.rawclient import FAKE_UPSTREAM

SHOP = example.project()
REPORT = SHOP / "shop" / "report.py"
URI = from_fs_path(str(REPORT)) or ""
# The editor's document plus what the model wrote: a function that uses a Price.
SPECULATIVE = (
    REPORT.read_text()
    + "\n\ndef vat_total(cart: Cart) -> int:\n    total = cart.total()\n    total."
)


@pytest.fixture
async def instance() -> AsyncIterator[AnalysisInstance]:
    # A patient decode loop: the first, cold question waits for every item's documentation
    # (with the default 250 ms budget, what arrives later only serves the next question).
    analysis = AnalysisInstance(
        asyncio.get_running_loop(),
        root_uri=lambda: from_fs_path(str(SHOP)),
        backoff=(0.05,),
        query_budget=lambda: 20.0,
    )
    yield analysis
    await analysis.stop()


async def test_it_answers_completions_signatures_and_definitions_and_caches_them(instance):
    assert instance.status() == {"state": "idle"}
    doc = instance.document(URI, 1)
    offset = len(SPECULATIVE)

    found = await asyncio.to_thread(doc.completions_at, SPECULATIVE, offset, timeout=30.0)
    by_name = {c.name: c for c in found}
    assert {"cents", "currency", "format", "with_vat"} <= by_name.keys()
    assert by_name["with_vat"].kind == "function"
    assert by_name["cents"].kind == "variable"
    assert by_name["with_vat"].documentation == "Return this price with value-added tax applied."
    assert by_name["with_vat"].detail == "shop.pricing.Price"

    # A repeat at the same version and text up to the offset is a cache hit:
    # the tail after the offset does not count.
    queries = instance.queries
    again = await asyncio.to_thread(doc.completions_at, SPECULATIVE + "\n# x", offset, timeout=1.0)
    assert again == found and instance.queries == queries and instance.cache_hits == 1
    # So is the next version (a keystroke after the offset), but not for a definition,
    # whose line may lie after the offset; a change of settings forgets every answer.
    typed = instance.document(URI, 2)
    later = await asyncio.to_thread(typed.completions_at, SPECULATIVE + "x", offset, timeout=1.0)
    assert later == found and instance.queries == queries and instance.cache_hits == 2
    # A line opened above (blank, as typed): Python reads the same tokens before the offset.
    opened = SPECULATIVE.replace("\n\ndef vat_total", "\n\n    \n\ndef vat_total")
    above = await asyncio.to_thread(typed.completions_at, opened, len(opened), timeout=1.0)
    assert above == found and instance.queries == queries and instance.cache_hits == 3

    call = SPECULATIVE + "with_vat("
    signature = await asyncio.to_thread(doc.signature_at, call, len(call), timeout=10.0)
    assert signature is not None and signature.label.startswith("with_vat(rate: float")
    assert signature.parameters[0].startswith("rate") and signature.active_parameter == 0

    name = SPECULATIVE + "with_vat()"
    definition = await asyncio.to_thread(doc.definition_source, name, len(name) - 4, timeout=10.0)
    lines = (SHOP / "shop" / "pricing.py").read_text().splitlines()
    assert definition == DefinitionSource(
        str(SHOP / "shop" / "pricing.py"),
        lines.index("    def with_vat(self, rate: float = VAT_RATE) -> Price:"),
    )

    status = instance.status()
    assert status["state"] == "running" and status["queries"] == 3
    assert status["rss_mb"] > 10 and status["mean_ms"] > 0 and status["documents"] == 1

    again = await asyncio.to_thread(typed.definition_source, name, len(name) - 4, timeout=10.0)
    assert again == definition and instance.queries == 4  # asked again at version 2
    instance.configure()
    await asyncio.to_thread(doc.completions_at, SPECULATIVE, offset, timeout=30.0)
    assert instance.queries == 5 and instance.cache_hits == 3


async def test_a_modules_members_are_asked_once_for_every_document(instance):
    """``js.`` after ``import json as js`` is the module's members wherever it is written:
    asked once, then shared by other documents and positions. A name bound another
    way, or a module of the workspace's own, is asked about as the text stands."""
    cart = SHOP / "shop" / "cart.py"
    first = "import json as js\n\n\ndef dump(x):\n    return js."
    doc = instance.document(URI, 1)
    found = await asyncio.to_thread(doc.completions_at, first, len(first), timeout=30.0)
    assert {"dumps", "loads", "JSONDecodeError"} <= {c.name for c in found}
    queries = instance.queries
    other = instance.document(from_fs_path(str(cart)) or "", 7)
    second = cart.read_text() + "\nimport json\n\n\ndef load(text):\n    data = json."
    again = await asyncio.to_thread(other.completions_at, second, len(second), timeout=1.0)
    assert again == found and instance.queries == queries and instance.cache_hits == 1

    shadowed = "import json as js\n\n\ndef dump(js):\n    return js."
    await asyncio.to_thread(doc.completions_at, shadowed, len(shadowed), timeout=30.0)
    assert instance.queries == queries + 1
    # ``shop`` is the workspace's own package: its members change as the user edits it.
    own = "import shop\n\nshop."
    listed = await asyncio.to_thread(doc.completions_at, own, len(own), timeout=30.0)
    assert {"cart", "pricing"} <= {c.name for c in listed}
    own_again = "import shop\n\nx = 1\nshop."
    await asyncio.to_thread(doc.completions_at, own_again, len(own_again), timeout=30.0)
    assert instance.queries == queries + 3


async def test_a_modules_members_documentation_is_resolved_once_for_every_document(instance):
    """The documentation of ``js.dumps`` after ``import json as js`` is the module's, at
    any position of any document: resolved once (a list, then the resolves), and the
    next document's ``json.`` finds it without asking pylsp again, though pylsp's
    last list there is another one."""
    cart = SHOP / "shop" / "cart.py"
    first = "import json as js\n\n\ndef dump(x):\n    return js."
    doc = instance.document(URI, 1)
    listed = await asyncio.to_thread(
        doc.completions_at, first, len(first), timeout=30.0, documented=False
    )
    wanted = [c for c in listed if c.name in ("dumps", "loads")]
    got = await asyncio.to_thread(doc.documented, first, len(first), wanted, timeout=30.0)
    assert all(c.documentation for c in got) and "JSON" in got[0].documentation
    queries = instance.queries
    other = instance.document(from_fs_path(str(cart)) or "", 7)
    second = cart.read_text() + "\nimport json\n\n\ndef load(text):\n    data = json."
    # another list in that document since: pylsp's last list there is not json's
    elsewhere = second[: -len("json.")] + "text."
    await asyncio.to_thread(other.completions_at, elsewhere, len(elsewhere), timeout=30.0)
    queries = instance.queries
    again = await asyncio.to_thread(other.documented, second, len(second), wanted, timeout=1.0)
    assert again == got and instance.queries == queries
    # Only the names not resolved before are resolved: one question, the rest kept.
    more = [c for c in listed if c.name in ("dumps", "JSONDecoder")]
    mixed = await asyncio.to_thread(other.documented, second, len(second), more, timeout=30.0)
    assert mixed[0] == got[0] and mixed[1].documentation and instance.queries == queries + 1


async def test_items_listed_without_documentation_get_it_by_name(instance):
    """The decode loop lists items undocumented, then asks the documentation of the
    few that can win: resolved against pylsp's last list in the document, which is
    asked again when another list came between."""
    doc = instance.document(URI, 1)
    offset = len(SPECULATIVE)
    listed = await asyncio.to_thread(
        doc.completions_at, SPECULATIVE, offset, timeout=30.0, documented=False
    )
    by_name = {c.name: c for c in listed}
    assert by_name["with_vat"].documentation == "" and by_name["cents"].documentation == ""
    wanted = [by_name["with_vat"], by_name["format"]]
    got = await asyncio.to_thread(doc.documented, SPECULATIVE, offset, wanted, timeout=30.0)
    assert [c.name for c in got] == ["with_vat", "format"]
    assert got[0].documentation == "Return this price with value-added tax applied."
    assert got[0].detail == "shop.pricing.Price" and got[1].documentation

    # Another list in the document since (a cart's): the price's items are listed
    # again first, or pylsp would resolve nothing (it keys its last list by label).
    cart = SPECULATIVE[: -len("total.")] + "cart."
    await asyncio.to_thread(doc.completions_at, cart, len(cart), timeout=30.0, documented=False)
    wanted = [by_name["with_vat"], by_name["cents"]]
    queries = instance.queries
    again = await asyncio.to_thread(doc.documented, SPECULATIVE, offset, wanted, timeout=30.0)
    assert again[0] == got[0] and again[1].name == "cents"
    assert instance.queries == queries + 1
    # Asked once: the same names at the same text come from the cache.
    cached = await asyncio.to_thread(doc.documented, SPECULATIVE, offset, wanted, timeout=1.0)
    assert cached == again and instance.queries == queries + 1


async def test_an_opened_document_is_read_ahead_while_the_user_reads():
    """After didOpen the instance reads the document (one throwaway question), never
    while the model decodes nor while the editor keeps asking, and once per text."""
    decoding = True
    analysis = AnalysisInstance(
        asyncio.get_running_loop(),
        root_uri=lambda: from_fs_path(str(SHOP)),
        query_budget=lambda: 20.0,
        busy=lambda: decoding,
    )

    async def read_ahead_count(at_least: int) -> int:
        for _ in range(300):
            count = analysis.status().get("documents_read_ahead", 0)
            if count >= at_least:
                return count
            await asyncio.sleep(0.05)
        return analysis.status().get("documents_read_ahead", 0)

    try:
        text = REPORT.read_text()
        analysis.warm_document(URI, lambda: text)
        await asyncio.sleep(1.0)
        assert analysis.status() == {"state": "idle"}  # the model was decoding all along
        decoding = False
        for _ in range(6):  # the user types: requests keep coming
            analysis.touch()
            await asyncio.sleep(0.2)
        assert analysis.status() == {"state": "idle"}
        assert await read_ahead_count(1) == 1
        status = analysis.status()
        assert status["documents"] == 1 and status["queries"] == 0  # not the decode loop's
        # The same text again, or a change to a document read: nothing more is read.
        analysis.warm_document(URI, lambda: text)
        analysis.warm_document(URI, lambda: text + "\n", opened=False)
        await asyncio.sleep(1.5)
        assert analysis.status()["documents_read_ahead"] == 1
        # Reopened with other text, it is read again; a closed one (None) is skipped.
        analysis.warm_document(URI, lambda: text + "\nx = 1\n")
        analysis.warm_document(from_fs_path(str(SHOP / "shop" / "cart.py")) or "", lambda: None)
        assert await read_ahead_count(2) == 2
        doc = analysis.document(URI, 3)
        speculative = text + "\nx = 1\n" + SPECULATIVE[len(REPORT.read_text()) :]
        found = await asyncio.to_thread(
            doc.completions_at, speculative, len(speculative), timeout=30.0
        )
        assert {"cents", "with_vat"} <= {c.name for c in found}
    finally:
        await analysis.stop()


async def test_the_bases_of_an_opened_documents_classes_are_read_ahead(tmp_path):
    """After the document, the members of its classes' library bases, so that the
    first ``self.`` finds them inferred; each base once, and never for a text that
    changed since (the editor's edits come first). The private document is the
    editor's text again for the next question."""
    analysis = AnalysisInstance(
        asyncio.get_running_loop(),
        root_uri=lambda: from_fs_path(str(SHOP)),
        query_budget=lambda: 20.0,
    )
    text = (
        "import argparse\nimport json\n\n\n"
        "class Parser(argparse.ArgumentParser):\n    pass\n\n\n"
        "class Decoder(json.JSONDecoder, argparse.ArgumentParser):\n"
        "    def run(self):\n        return self.\n"
    )
    uri = from_fs_path(str(tmp_path / "cli.py")) or ""

    async def until(key: str, at_least: int) -> int:
        for _ in range(300):
            if analysis.status().get(key, 0) >= at_least:
                break
            await asyncio.sleep(0.05)
        return int(analysis.status().get(key, 0))

    try:
        analysis.warm_document(uri, lambda: text)
        assert await until("bases_read_ahead", 2) == 2  # argparse.ArgumentParser, json.JSONDecoder
        # The same bases in another document: read already.
        other = from_fs_path(str(tmp_path / "other.py")) or ""
        analysis.warm_document(other, lambda: text + "\nx = 1\n")
        assert await until("documents_read_ahead", 2) == 2
        await asyncio.sleep(1.0)
        assert analysis.status()["bases_read_ahead"] == 2
        # A text changed once read (each later read sees the edit): its bases wait for
        # the text read next.
        edited = text.replace("argparse.ArgumentParser):\n    pass", "ast.NodeVisitor):\n    pass")
        reads = iter([edited])
        third = from_fs_path(str(tmp_path / "third.py")) or ""
        analysis.warm_document(third, lambda: next(reads, edited + "\n"))
        assert await until("documents_read_ahead", 3) == 3
        await asyncio.sleep(1.0)
        assert analysis.status()["bases_read_ahead"] == 2
        # The editor's text, not the probe's, answers the cursor's question.
        doc = analysis.document(uri, 1)
        offset = text.index("self.") + len("self.")
        found = await asyncio.to_thread(doc.completions_at, text, offset, timeout=30.0)
        assert {"parse_args", "decode", "run"} <= {c.name for c in found}
        # A restarted pylsp has lost Jedi's inference: the bases are read again.
        assert (await killed_and_restarted(analysis))["state"] == "running"
        analysis.warm_document(from_fs_path(str(tmp_path / "fourth.py")) or "", lambda: text)
        assert await until("bases_read_ahead", 4) == 4
    finally:
        await analysis.stop()


async def test_a_changed_environment_reaches_the_running_instance(instance, monkeypatch):
    doc = instance.document(URI, 1)
    await asyncio.to_thread(doc.completions_at, SPECULATIVE, len(SPECULATIVE), timeout=30.0)
    sent: list[dict[str, Any]] = []
    monkeypatch.setattr(instance.connection, "send", lambda message, **_: sent.append(message))
    monkeypatch.setattr(instance, "_environment", lambda: "/other/env")
    instance.configure()
    [message] = sent
    assert message["method"] == "workspace/didChangeConfiguration"
    assert message["params"]["settings"]["pylsp"]["plugins"]["jedi"]["environment"] == "/other/env"


async def test_a_question_past_its_budget_raises_and_the_start_goes_on(instance):
    doc = instance.document(URI, 1)
    started = time.perf_counter()
    with pytest.raises(AnalysisTimeout):
        # pylsp takes seconds to start: far over 50 ms.
        await asyncio.to_thread(doc.completions_at, SPECULATIVE, len(SPECULATIVE), timeout=0.05)
    assert time.perf_counter() - started < 0.5
    assert instance.timeouts == 1
    found = await asyncio.to_thread(doc.completions_at, SPECULATIVE, len(SPECULATIVE), timeout=30.0)
    assert "with_vat" in {c.name for c in found}


async def test_a_late_answer_is_joined_and_kept_not_asked_again(instance, monkeypatch):
    # pylsp cannot drop a question under way: the same question waits for it, and its
    # answer, once it comes, is the cache's.
    asked = []
    query = instance.query
    monkeypatch.setattr(instance, "query", lambda *a, **k: asked.append(a[0]) or query(*a, **k))
    doc = instance.document(URI, 1)
    at = len(SPECULATIVE)
    for _ in range(2):
        with pytest.raises(AnalysisTimeout):
            await asyncio.to_thread(doc.completions_at, SPECULATIVE, at, timeout=0.05)
    found = await asyncio.to_thread(doc.completions_at, SPECULATIVE, at, timeout=30.0)
    assert "with_vat" in {c.name for c in found}
    assert asked == ["textDocument/completion"] and instance.timeouts == 2
    hits = instance.cache_hits
    assert await asyncio.to_thread(doc.completions_at, SPECULATIVE, at, timeout=0.05) == found
    assert instance.cache_hits == hits + 1 and len(asked) == 1


async def killed_and_restarted(instance: AnalysisInstance) -> dict[str, Any]:
    """Kill the instance's pylsp; its status once another process runs (or 20 s on)."""
    pid = instance.status()["pid"]
    os.kill(pid, signal.SIGKILL)
    for _ in range(400):
        status = instance.status()
        if status["state"] == "running" and status["pid"] not in (None, pid):
            break
        await asyncio.sleep(0.05)
    return status


async def test_after_a_kill_it_restarts_with_its_documents_and_answers(instance):
    doc = instance.document(URI, 1)
    await asyncio.to_thread(doc.completions_at, SPECULATIVE, len(SPECULATIVE), timeout=30.0)
    status = await killed_and_restarted(instance)
    assert status["restarts"] == 1 and status["state"] == "running"
    # A new text at a new version: the replayed document is changed, not reopened.
    text = SPECULATIVE[: -len("total.")] + "cart."
    later = instance.document(URI, 2)
    found = await asyncio.to_thread(later.completions_at, text, len(text), timeout=30.0)
    assert {"add", "items", "sale", "total"} <= {c.name for c in found}


def descendants(pid: int) -> list[int]:
    """``pid``'s children and theirs, from /proc (Jedi's environment subprocess)."""
    parents = {}
    for stat in os.listdir("/proc"):
        if stat.isdigit():
            with contextlib.suppress(OSError), open(f"/proc/{stat}/stat") as file:
                parents[int(stat)] = int(file.read().rsplit(")", 1)[1].split()[1])
    found = [child for child, parent in parents.items() if parent == pid]
    for child in list(found):
        found += descendants(child)
    return found


@pytest.mark.skipif(not hasattr(os, "SCHED_IDLE"), reason="Linux's idle scheduling class")
async def test_it_runs_in_our_session_on_cores_nothing_else_wants(instance):
    # Linux's autogroup shares the CPU between sessions before priorities count:
    # the instance stays in ours (a group of its own, for Ctrl-C and kill), and it
    # and what it starts (Jedi's subprocess, its threads) are in the idle class.
    doc = instance.document(URI, 1)
    await asyncio.to_thread(doc.completions_at, SPECULATIVE, len(SPECULATIVE), timeout=30.0)
    pid = instance.status()["pid"]
    assert os.getsid(pid) == os.getsid(0) and os.getpgid(pid) == pid != os.getpgid(0)
    threads = [
        int(task)
        for process in [pid, *descendants(pid)]
        for task in os.listdir(f"/proc/{process}/task")
    ]
    assert len(threads) > 1
    assert {os.sched_getscheduler(thread) for thread in threads} == {os.SCHED_IDLE}


async def test_after_a_restart_the_contenders_are_documented_against_a_new_list(instance):
    # pylsp resolves against the document's last list, which a restart loses: the
    # items are listed again rather than left undocumented.
    doc = instance.document(URI, 1)
    offset = len(SPECULATIVE)
    listed = await asyncio.to_thread(
        doc.completions_at, SPECULATIVE, offset, timeout=30.0, documented=False
    )
    await killed_and_restarted(instance)
    wanted = [c for c in listed if c.name == "with_vat"]
    got = await asyncio.to_thread(doc.documented, SPECULATIVE, offset, wanted, timeout=30.0)
    assert got[0].documentation == "Return this price with value-added tax applied."


async def test_it_lints_nothing_and_what_it_publishes_goes_to_no_editor(instance, monkeypatch):
    heard: list[dict[str, Any]] = []
    monkeypatch.setattr(Headless, "upstream_notification", lambda self, raw: heard.append(raw))
    # Undefined names and bad formatting: every linter would speak up.
    text = SPECULATIVE + "with_vat(missing_name)  ;x=1\n"
    doc = instance.document(URI, 1)
    await asyncio.to_thread(doc.completions_at, text, len(SPECULATIVE), timeout=30.0)
    await asyncio.to_thread(doc.signature_at, text, len(text) - 5, timeout=10.0)
    await asyncio.sleep(1.0)  # pylsp lints after a debounce
    # Its notifications go to the Headless listener (which drops them), never to an
    # editor; and with the linters off, pylsp's one publish (at didOpen) is empty.
    published = [raw for raw in heard if raw.get("method") == "textDocument/publishDiagnostics"]
    assert all(raw["params"]["diagnostics"] == [] for raw in published)


def test_it_refuses_an_offset_outside_the_text():
    instance = AnalysisInstance(asyncio.new_event_loop())
    with pytest.raises(ValueError, match="outside the text"):
        instance.document(URI, 1).completions_at("abc", 4)
    instance.loop.close()


def test_its_settings_are_the_tuned_ones_with_the_main_jedi_environment():
    instance = AnalysisInstance(asyncio.new_event_loop(), python_environment=lambda: "/env")
    plugins = instance.settings()["settings"]["pylsp"]["plugins"]
    assert plugins["jedi"]["environment"] == "/env"
    assert plugins["jedi_completion"]["include_params"] is False
    assert plugins["jedi_completion"]["resolve_at_most"] == 0
    for linter in ("pyflakes", "pycodestyle", "mccabe", "pylint", "autopep8", "yapf"):
        assert plugins[linter] == {"enabled": False}
    instance.loop.close()


async def test_documentation_that_misses_the_budget_serves_the_next_question():
    """With no time for documentation, the first answer has none, and the resolves that
    finish afterwards fill the cache: a later question gets the documentation at once."""
    analysis = AnalysisInstance(
        asyncio.get_running_loop(),
        root_uri=lambda: from_fs_path(str(SHOP)),
        backoff=(0.05,),
        query_budget=lambda: 0.0,
    )
    try:
        first = await asyncio.to_thread(
            analysis.document(URI, 1).completions_at, SPECULATIVE, len(SPECULATIVE), timeout=30.0
        )
        assert {c.name: c.documentation for c in first}["with_vat"] == ""
        for _ in range(100):  # the resolves still running finish on their own
            if any(key[0] == "with_vat" for key in analysis._documentation):
                break
            await asyncio.sleep(0.1)
        later = await asyncio.to_thread(
            analysis.document(URI, 2).completions_at, SPECULATIVE, len(SPECULATIVE), timeout=30.0
        )
        documentation = {c.name: c.documentation for c in later}["with_vat"]
        assert documentation == "Return this price with value-added tax applied."
    finally:
        await analysis.stop()


async def test_a_stuck_instance_is_restarted_and_reported():
    """pylsp blocked for good on a read (a FIFO, before the file guard): every question
    timed out from then on, the instance was never restarted, and status said running."""
    analysis = AnalysisInstance(
        asyncio.get_running_loop(),
        root_uri=lambda: from_fs_path(str(SHOP)),
        command=[*FAKE_UPSTREAM, "--freeze-on", "textDocument/completion"],
        backoff=(0.05,),
        stuck_after=1.0,
    )
    try:
        doc = analysis.document(URI, 1)
        pid = None
        for round_ in range(60):  # questions time out until the silence is long enough
            text = f"import os\nx{round_} = os."
            with pytest.raises(AnalysisTimeout):
                await asyncio.to_thread(doc.completions_at, text, len(text), timeout=0.1)
            pid = pid or analysis.status().get("pid")
            if analysis.stuck_restarts:
                break
            await asyncio.sleep(0.1)
        status = analysis.status()
        assert status["stuck_restarts"] == 1 and status["timeouts"] >= 3
        for _ in range(100):
            status = analysis.status()
            if status["restarts"] == 1 and status["pid"] not in (None, pid):
                break
            await asyncio.sleep(0.05)
        assert status["restarts"] == 1 and status["pid"] not in (None, pid)
    finally:
        await analysis.stop()


async def test_a_callees_keywords_are_read_from_real_signature_help(instance):
    """The keyword stage reads parameter kinds from pylsp's label: checked here on what
    real pylsp answers, for a builtin with positional- and keyword-only parameters and
    overloads, a function that takes ``**kwargs``, one that takes neither, and a class;
    and how many arguments each takes by position (more is pylint's E1121)."""
    from steerlsp.models.steering.stages.keywords import shape_of

    doc = instance.document(URI, 1)
    head = REPORT.read_text() + "\n\nimport json\nimport logging\nimport shutil\n\n"
    shapes = {}
    for callee in ("sorted", "json.dumps", "shutil.copytree", "logging.Formatter", "print"):
        text = head + f"x = {callee}(names, "
        signature = await asyncio.to_thread(doc.signature_at, text, len(text), timeout=30.0)
        assert signature is not None, callee
        shapes[callee] = shape_of(signature, callee)
    assert shapes["sorted"] is not None and not shapes["sorted"].open
    assert shapes["sorted"].keywords() == ["key", "reverse"]
    assert not shapes["sorted"].accepts("iterable")  # positional-only
    assert shapes["json.dumps"] is not None and shapes["json.dumps"].open  # **kwds
    copytree = shapes["shutil.copytree"]
    assert copytree is not None and not copytree.open
    assert {"dirs_exist_ok", "symlinks", "ignore"} <= set(copytree.keywords())
    assert not copytree.accepts("exist_ok")
    capacity = {callee: shape.positional_capacity() for callee, shape in shapes.items() if shape}
    # sorted(iterable, /, *, key, reverse); dumps(obj, *, ...); copytree's seven;
    # Formatter(fmt, datefmt, style, validate, *, defaults); print(*values, ...): any.
    assert capacity == {
        "sorted": 1,
        "json.dumps": 1,
        "shutil.copytree": 7,
        "logging.Formatter": 4,
        "print": None,
    }


async def test_a_callees_deprecated_parameters_are_read_where_real_pylsp_finds_it(tmp_path):
    """The keyword stage asks where a callee is defined (inside its name, before the
    ``(``) and reads that file statically: checked on what real pylsp answers for a
    class imported from another module of the workspace."""
    from steerlsp.models.deprecation.parameters import deprecated_parameters

    (tmp_path / "encoders.py").write_text(
        "import warnings\n\n\nclass OneHotEncoder:\n"
        '    def __init__(self, *, sparse="deprecated", sparse_output=True):\n'
        '        if sparse != "deprecated":\n'
        '            warnings.warn("`sparse` was renamed to `sparse_output`", FutureWarning)\n'
    )
    app = tmp_path / "app.py"
    text = "from encoders import OneHotEncoder\n\nenc = OneHotEncoder("
    app.write_text(text)
    analysis = AnalysisInstance(
        asyncio.get_running_loop(),
        root_uri=lambda: from_fs_path(str(tmp_path)),
        backoff=(0.05,),
        query_budget=lambda: 20.0,
    )
    try:
        doc = analysis.document(from_fs_path(str(app)) or "", 1)
        offset = len(text) - 1  # the ``(``: asked inside the name, one before
        found = await asyncio.to_thread(doc.definition_source, text, offset - 1, timeout=30.0)
        assert found is not None and found.path == str(tmp_path / "encoders.py")
        deprecated = deprecated_parameters((tmp_path / "encoders.py").read_text(), found.line)
        assert set(deprecated) == {"sparse"} and deprecated["sparse"].replacement == "sparse_output"
    finally:
        await analysis.stop()
