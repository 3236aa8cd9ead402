"""server/analysis/warming.py: the analysis instance warmed on a document's imports."""

from __future__ import annotations

import asyncio
from typing import Any

from lsprotocol import types

from steerlsp.server.analysis.warming import ImportWarmer, imported_names

OPEN, CHANGE, CLOSE = (
    types.TEXT_DOCUMENT_DID_OPEN,
    types.TEXT_DOCUMENT_DID_CHANGE,
    types.TEXT_DOCUMENT_DID_CLOSE,
)
URI = "file:///project/app.py"


def test_imported_names_as_the_code_spells_them():
    text = (
        "import os.path\nimport numpy as np\nfrom pydantic import BaseModel, Field as F\n"
        "from .local import *\n\ndef f():\n    import json\n    import numpy as np\n"
    )
    assert imported_names(text) == ["os.path", "np", "BaseModel", "F", "json"]
    assert imported_names(text, limit=2) == ["os.path", "np"]
    # Being typed in, it does not parse: each import statement is read on its own.
    typing = (
        "import os\nfrom typing import (\n    Any,\n    cast as c,\n)\n"
        "    import json  # indented, in a function\nfrom broken import\n\nx = os."
    )
    assert imported_names(typing) == ["os", "Any", "c", "json"]


class FakeInstance:
    """Records the questions; each takes ``seconds``."""

    def __init__(self, seconds: float = 0.0) -> None:
        self.asked: list[tuple[str, str, int, bool]] = []
        self.warmed: set[tuple[str | None, str]] = set()
        self.seconds = seconds

    async def query(self, method: str, uri: str, text: str, offset: int, **kw: Any) -> Any:
        self.asked.append((uri, text, offset, kw["documented"]))
        await asyncio.sleep(self.seconds)
        return []


class Editor:
    """The open documents, the model worker's state and the settings the warmer reads."""

    def __init__(self) -> None:
        self.texts: dict[str, str] = {}
        self.idle = True
        self.enabled = True
        self.environment: str | None = "/venv"

    def warmer(self, instance: FakeInstance, settle: float = 0.05) -> ImportWarmer:
        return ImportWarmer(
            instance,  # type: ignore[arg-type]
            text=self.texts.get,
            enabled=lambda: self.enabled,
            idle=lambda: self.idle,
            environment=lambda: self.environment,
            settle=settle,
        )


async def settled(instance: FakeInstance, count: int) -> None:
    for _ in range(200):
        if len(instance.asked) >= count:
            return
        await asyncio.sleep(0.01)
    raise AssertionError(f"{len(instance.asked)} questions, not {count}")


async def test_an_opened_document_warms_each_import_once_per_environment():
    editor, instance = Editor(), FakeInstance()
    document = editor.texts[URI] = "import numpy as np\nfrom pandas import DataFrame\n"
    warmer = editor.warmer(instance)
    warmer.synced(OPEN, URI)
    await settled(instance, 2)
    # After the document's own text (its imports resolve as in it), no documentation.
    assert instance.asked == [
        (URI, document + "\nnp.", len(document) + 4, False),
        (URI, document + "\nDataFrame.", len(document) + 11, False),
    ]
    assert instance.warmed == {("/venv", "np"), ("/venv", "DataFrame")}
    warmer.synced(CHANGE, URI)  # the same imports: nothing is asked again
    await asyncio.sleep(0.2)
    assert len(instance.asked) == 2
    editor.environment = "/other"  # another Jedi environment: asked again
    warmer.synced(CHANGE, URI)
    await settled(instance, 4)
    await warmer.stop()


async def test_nothing_is_asked_while_the_model_works_or_with_steering_off():
    editor, instance = Editor(), FakeInstance()
    editor.texts[URI] = "import json\n"
    editor.idle = False
    warmer = editor.warmer(instance)
    warmer.synced(OPEN, URI)
    await asyncio.sleep(0.6)
    assert instance.asked == []  # the decode loop has the cores
    editor.idle = True
    await settled(instance, 1)
    editor.enabled = False
    editor.texts[URI] = "import csv\n"
    warmer.synced(CHANGE, URI)
    await asyncio.sleep(0.2)
    assert len(instance.asked) == 1
    await warmer.stop()


async def test_a_change_waits_for_the_text_to_settle_and_a_close_forgets_it():
    editor, instance = Editor(), FakeInstance()
    editor.texts[URI] = "import json\n"
    warmer = editor.warmer(instance, settle=0.3)
    for _ in range(5):  # typing: each change restarts the wait
        warmer.synced(CHANGE, URI)
        await asyncio.sleep(0.1)
    assert instance.asked == []
    await settled(instance, 1)
    editor.texts[URI] = "import csv\n"
    warmer.synced(CHANGE, URI)
    warmer.synced(CLOSE, URI)
    await asyncio.sleep(0.5)
    assert len(instance.asked) == 1
    await warmer.stop()


async def test_a_text_changed_while_warming_is_not_warmed_on_and_failures_are_forgotten():
    editor, instance = Editor(), FakeInstance(seconds=0.2)
    editor.texts[URI] = "import json\nimport csv\n"
    warmer = editor.warmer(instance)
    warmer.synced(OPEN, URI)
    await settled(instance, 1)
    editor.texts[URI] = "import json\nimport csv\nimport re\n"  # typed while json is asked
    await asyncio.sleep(0.4)
    assert len(instance.asked) == 1  # csv waits for the new text to settle
    warmer.synced(CHANGE, URI)
    await settled(instance, 3)  # csv, re
    assert [text.rsplit("\n", 1)[-1] for _, text, _, _ in instance.asked] == [
        "json.",
        "csv.",
        "re.",
    ]

    async def failing(*args: Any, **kw: Any) -> Any:
        raise RuntimeError("the analysis server is restarting")

    instance.query = failing  # type: ignore[method-assign]
    editor.texts[URI] = "import csv\nimport html\n"
    warmer.synced(CHANGE, URI)
    await asyncio.sleep(0.3)
    assert ("/venv", "html") not in instance.warmed  # forgotten: asked again next time
    await warmer.stop()
