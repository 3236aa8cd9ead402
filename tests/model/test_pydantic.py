"""Steering's reason to exist, end to end: the API the project has, not the one remembered.

tests/workspace/profiles pins pydantic 2.9.2 (its requirements.txt is the task
suite's, so the venv is the one tests/e2e/test_tasks.py builds). Pydantic 2
deprecated ``BaseModel.dict()`` for ``model_dump()``. The real ``steerlsp``,
with the embedded model, real pylsp and the analysis instance pointed at that
venv, completes ``return profile.`` in a function that returns a dict. The
steered completion must call ``model_dump``; the same model unsteered must not;
and ``steerlsp/explain`` must name the step that changed the choice.
"""

from __future__ import annotations

import re
import shutil
from pathlib import Path
from typing import Any

from tests.helpers.evaltasks import venv_for
from tests.helpers.session import PATIENT, complete, explain, ready, start, warm_analysis

PROJECT = Path(__file__).parents[1] / "workspace" / "profiles"
BUFFER = (
    '"""The JSON API\'s view of profiles."""\n'
    "\n"
    "from profiles.models import Profile\n"
    "\n"
    "\n"
    "def profile_payload(profile: Profile) -> dict:\n"
    '    """The profile as a plain dict for the JSON response, None fields left out."""\n'
    "    return profile."
)


async def session(start_raw: Any, tmp_path: Path) -> tuple[Any, str, dict[str, Any]]:
    """The real steerlsp on a copy of the profiles project, its Jedi on the pinned venv
    and the analysis warm: (client, the api module's uri, the settings it runs with)."""
    python = venv_for((PROJECT / "requirements.txt").read_text())
    root = tmp_path / "profiles"
    shutil.copytree(PROJECT, root)
    settings = {**PATIENT, "python": {"environment": str(python)}}
    client = await start(start_raw, root, options={"steerlsp": settings})
    await ready(client)
    await warm_analysis(client)
    return client, (root / "profiles" / "api.py").as_uri(), settings


async def test_the_steered_completion_uses_pydantic_2s_api_and_explain_says_why(
    start_raw, tmp_path
):
    client, uri, settings = await session(start_raw, tmp_path)
    client.open(uri, BUFFER)

    steered = await complete(client, uri, BUFFER)
    trace = (await explain(client, uri))["trace"]
    assert steered.startswith("model_dump"), (steered, trace)
    walk = trace["walks"][0]
    assert walk["wrote"] == "model_dump", trace
    assert "dict" in walk["deprecated"], trace  # read from pydantic's own source
    # The step that changed it: the model's own first token was not model_dump's.
    changed = trace["changed"][0]
    assert changed["by"] == "walk" and "model_dump".startswith(changed["after"]), trace
    assert not "model_dump".startswith(changed["before"]), trace
    assert changed["p_before"] > changed["p_after"], trace

    client.notify(
        "workspace/didChangeConfiguration",
        {"settings": {"steerlsp": {**settings, "steering": {"enabled": False}}}},
    )
    unsteered = await complete(client, uri, BUFFER)
    assert not unsteered.startswith("model_dump"), unsteered
    assert (await explain(client, uri))["steered"] is False


COPY = (
    '"""The JSON API\'s view of profiles."""\n'
    "\n"
    "from profiles.models import Profile\n"
    "\n"
    "\n"
    "def copy_with_name(profile: Profile, name: str) -> Profile:\n"
    '    """A copy of the profile with another name."""\n'
    "    return profile.model_copy("
)


async def test_a_keyword_pydantic_does_not_take_is_written_again(start_raw, tmp_path):
    """Unsteered, the model passes ``model_copy`` a ``path=`` it does not take (pydantic 2's
    ``model_copy(*, update=None, deep=False)``), after ``name`` by position, which it does
    not take either; steered, the arguments are checked against the signature real pylsp
    reads from pydantic, and the first wrong one (the positional ``name``, or ``path=``)
    is written again as a keyword it takes."""
    client, uri, settings = await session(start_raw, tmp_path)
    client.open(uri, COPY)

    steered = await complete(client, uri, COPY)
    trace = (await explain(client, uri))["trace"]
    reasons = [i["reason"] for i in trace["interrupts"]]
    either = {
        "unexpected keyword 'path' for profile.model_copy",
        "argument 'name' past the 0 positional parameters of profile.model_copy",
    }
    assert either & set(reasons), (steered, trace)
    written = re.findall(r"\b(\w+)=", steered)
    assert written and set(written) <= {"update", "deep"}, (steered, trace)

    client.notify(
        "workspace/didChangeConfiguration",
        {"settings": {"steerlsp": {**settings, "steering": {"enabled": False}}}},
    )
    unsteered = await complete(client, uri, COPY)
    assert "path=" in unsteered, unsteered
