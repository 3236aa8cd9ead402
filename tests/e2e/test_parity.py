"""Through steerlsp, an editor gets what direct pylsp gives (pytest-lsp clients).

Both servers run side by side on the fixture project. The editor speaks
UTF-16 (VS Code's capabilities); pylsp counts code points, so its results are
first put through an independent oracle (``tests/helpers/oracle.py``) that re-counts
columns the way the editor counts them. Everything else must be equal.
"""

from __future__ import annotations

import sys
from pathlib import Path

import attrs
import pytest_lsp
from lsprotocol import types
from pytest_lsp import ClientServerConfig, LanguageClient, client_capabilities
from pytest_lsp.client import make_test_lsp_client

from steerlsp import example
from tests.helpers.oracle import in_utf16

SHOP = example.project()
CART = SHOP / "shop" / "cart.py"
REPORT = SHOP / "shop" / "report.py"
PRICING = SHOP / "shop" / "pricing.py"


def _client() -> LanguageClient:
    """pytest-lsp's client, able to read pylsp's notebookDocumentSync.

    lsprotocol 2025.0.0 has no structure hook for the optional ``notebook``
    union in ``NotebookDocumentFilterWithCells``, which pylsp 1.15 sends; the
    message is valid LSP, so the client keeps the raw value.
    """
    client = make_test_lsp_client()
    notebook = attrs.fields(types.NotebookDocumentFilterWithCells).notebook.type
    client.protocol._converter.register_structure_hook(notebook, lambda value, _: value)
    return client


def _config(command: list[str]) -> ClientServerConfig:
    return ClientServerConfig(server_command=command, client_factory=_client)


async def _session(client: LanguageClient) -> None:
    await client.initialize_session(
        types.InitializeParams(
            capabilities=client_capabilities("visual-studio-code"),
            root_uri=SHOP.as_uri(),
            workspace_folders=[types.WorkspaceFolder(uri=SHOP.as_uri(), name="shop")],
        )
    )
    for path in (CART, REPORT, PRICING):
        client.text_document_did_open(
            types.DidOpenTextDocumentParams(
                types.TextDocumentItem(
                    uri=path.as_uri(), language_id="python", version=1, text=path.read_text()
                )
            )
        )


@pytest_lsp.fixture(config=_config([sys.executable, "-m", "steerlsp"]))
async def proxied(lsp_client: LanguageClient):
    await _session(lsp_client)
    yield
    await lsp_client.shutdown_session()


@pytest_lsp.fixture(config=_config([sys.executable, "-m", "pylsp"]))
async def direct(lsp_client: LanguageClient):
    await _session(lsp_client)
    yield
    await lsp_client.shutdown_session()


def _at(path: Path, needle: str, offset: int = 0, occurrence: int = 0) -> types.Position:
    """UTF-16 position of ``needle`` (its ``occurrence``-th line) plus ``offset``."""
    hits = [(i, line) for i, line in enumerate(path.read_text().splitlines()) if needle in line]
    line_no, line = hits[occurrence]
    prefix = line[: line.index(needle) + offset]
    return types.Position(line=line_no, character=len(prefix.encode("utf-16-le")) // 2)


def _doc(path: Path) -> types.TextDocumentIdentifier:
    return types.TextDocumentIdentifier(uri=path.as_uri())


async def _both(proxied, direct, call, path: Path):
    """Results (as JSON) from steerlsp, and from pylsp re-counted in UTF-16."""
    ours, theirs = await call(proxied), await call(direct)
    converter = proxied.protocol._converter
    return converter.unstructure(ours), in_utf16(converter.unstructure(theirs), path.as_uri())


async def test_hover_matches(proxied, direct):
    for path, needle in ((CART, "discount(self"), (CART, "with_vat()"), (REPORT, "total.format")):
        params = types.HoverParams(text_document=_doc(path), position=_at(path, needle, 2))
        ours, theirs = await _both(
            proxied, direct, lambda c, p=params: c.text_document_hover_async(p), path
        )
        assert ours == theirs and ours["contents"]["value"]


async def test_completion_matches(proxied, direct):
    params = types.CompletionParams(text_document=_doc(CART), position=_at(CART, "os.path.join", 3))
    ours, theirs = await _both(
        proxied, direct, lambda c: c.text_document_completion_async(params), CART
    )
    assert ours == theirs
    items = ours["items"] if isinstance(ours, dict) else ours
    assert "path" in {item["label"] for item in items}


async def test_definition_matches(proxied, direct):
    params = types.DefinitionParams(text_document=_doc(CART), position=_at(CART, "Price(cents)", 1))
    ours, theirs = await _both(
        proxied, direct, lambda c: c.text_document_definition_async(params), CART
    )
    assert ours == theirs
    assert ours[0]["uri"] == PRICING.as_uri()


async def test_references_match(proxied, direct):
    params = types.ReferenceParams(
        text_document=_doc(PRICING),
        position=_at(PRICING, "def discount", 5),
        context=types.ReferenceContext(include_declaration=True),
    )
    ours, theirs = await _both(
        proxied, direct, lambda c: c.text_document_references_async(params), PRICING
    )
    key = lambda loc: (loc["uri"], loc["range"]["start"]["line"])  # noqa: E731
    assert sorted(ours, key=key) == sorted(theirs, key=key)
    assert {loc["uri"] for loc in ours} >= {PRICING.as_uri(), CART.as_uri()}


async def test_rename_matches(proxied, direct):
    params = types.RenameParams(
        text_document=_doc(PRICING), position=_at(PRICING, "def discount", 5), new_name="markdown"
    )
    ours, theirs = await _both(
        proxied, direct, lambda c: c.text_document_rename_async(params), PRICING
    )
    assert ours == theirs
    assert ours.get("documentChanges") or ours.get("changes")


async def test_diagnostics_match(proxied, direct):
    uri = REPORT.as_uri()
    for client in (proxied, direct):
        while uri not in client.diagnostics:
            await client.wait_for_notification(types.TEXT_DOCUMENT_PUBLISH_DIAGNOSTICS)
    converter = proxied.protocol._converter
    ours = converter.unstructure(proxied.diagnostics[uri])
    assert ours == in_utf16(converter.unstructure(direct.diagnostics[uri]), uri)
    emoji_line = next(d for d in ours if "missing_name" in d["message"])
    line = REPORT.read_text().splitlines()[emoji_line["range"]["start"]["line"]]
    prefix = line[: line.index("missing_name")]
    assert emoji_line["range"]["start"]["character"] == len(prefix.encode("utf-16-le")) // 2


async def test_formatting_matches(proxied, direct):
    params = types.DocumentFormattingParams(
        text_document=_doc(REPORT), options=types.FormattingOptions(tab_size=4, insert_spaces=True)
    )
    ours, theirs = await _both(
        proxied, direct, lambda c: c.text_document_formatting_async(params), REPORT
    )
    assert ours == theirs and ours
    assert "def badly_formatted(x, y):" in ours[0]["newText"]


async def test_document_symbols_and_code_actions_match(proxied, direct):
    symbols = types.DocumentSymbolParams(text_document=_doc(CART))
    ours, theirs = await _both(
        proxied, direct, lambda c: c.text_document_document_symbol_async(symbols), CART
    )
    assert ours == theirs and ours
    label = next(s for s in ours if s["name"] == "LABEL")
    assert label["location"]["range"]["end"]["character"] == 17  # 16 code points, 🛒 is 2 units
    actions = types.CodeActionParams(
        text_document=_doc(REPORT),
        range=types.Range(
            start=types.Position(line=8, character=0), end=types.Position(line=8, character=40)
        ),
        context=types.CodeActionContext(diagnostics=[]),
    )
    ours, theirs = await _both(
        proxied, direct, lambda c: c.text_document_code_action_async(actions), REPORT
    )
    assert ours == theirs
