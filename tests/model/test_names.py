"""Undefined names, end to end: the real steerlsp, the embedded model, real pylsp.

The task suite's ``local-units-scale-recipe`` (a project package, no third-party
library): without the rewrite, the embedded model reads a name nothing defines
(``if serve is not None`` in a function of ``serves``). With it, the statement's end
finds the name, the decode loop rewinds to it and writes a name in scope instead;
``steerlsp/explain`` records the rewind.
"""

from __future__ import annotations

from pyflakes import api as pyflakes_api
from pyflakes import reporter as pyflakes_reporter

from tests.helpers.session import TASK_OPTIONS as PATIENT
from tests.helpers.session import complete, explain, open_task

TASK = "local-units-scale-recipe"


def undefined_names(source: str) -> list[str]:
    """pyflakes' "undefined name" messages for ``source``."""
    found: list[str] = []

    class Collect(pyflakes_reporter.Reporter):
        def __init__(self) -> None:
            super().__init__(None, None)

        def flake(self, message) -> None:  # type: ignore[no-untyped-def]
            if "undefined name" in str(message):
                found.append(str(message.message_args[0]))

        def syntaxError(self, *args) -> None:  # type: ignore[no-untyped-def]
            found.append("<syntax error>")

    pyflakes_api.check(source, "completion.py", Collect())
    return found


async def test_an_undefined_name_is_rewound_and_written_from_the_scope(start_raw, tmp_path):
    client, uri, buffer = await open_task(start_raw, TASK, tmp_path / "recipes")

    # The unused-import stage off in both: its bonus moves the model's own text (to an
    # unfinished nest of ``if`` blocks here, which post-processing leaves empty).
    names_off = {**PATIENT, "steering": {**PATIENT["steering"], "names": False, "imports": False}}
    client.notify("workspace/didChangeConfiguration", {"settings": {"steerlsp": names_off}})
    without = await complete(client, uri, buffer)
    assert undefined_names(buffer + without), without  # the model's own choice reads one

    names_on = {**names_off, "steering": {**names_off["steering"], "names": True}}
    client.notify("workspace/didChangeConfiguration", {"settings": {"steerlsp": names_on}})
    steered = await complete(client, uri, buffer)
    trace = (await explain(client, uri))["trace"]
    rewinds = [i for i in trace["interrupts"] if i["reason"].startswith("undefined name")]
    assert rewinds, trace
    assert undefined_names(buffer + steered) == [], (steered, trace)
    scope = [q for q in trace["queries"] if q["query"] == "scope"]
    assert scope and scope[0]["outcome"] == "ok", trace
