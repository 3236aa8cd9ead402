"""String literals, end to end: the real steerlsp, the embedded model, real pylsp.

The task suite's ``changed-marshmallow-load-result``: without the string stage the
embedded model wrote ``f"Invalid email: {form.get("email")}"``, Python 3.12's nested
quotes, which Python 3.11 (the suite's venvs) cannot parse. Completed from that field's
``form.``, the model nests the quote again without the string stage (``get("email")}"``);
with it, the field holds no quote of its f-string's kind (``get('email')}, ...``) and
the line parses on every Python 3.
"""

from __future__ import annotations

import ast

from tests.helpers.session import TASK_OPTIONS as PATIENT
from tests.helpers.session import complete, open_task

TASK = "changed-marshmallow-load-result"
FIRST_LINES = (
    'if form.get("email") is not None:\n'
    "        raise ValidationError(\n"
    '            f"Invalid email: {form.'
)


def nested_quotes(code: str) -> list[str]:
    """The f-strings of ``code`` whose fields hold their own quote (PEP 701's nesting),
    read from the text: a line's ``f"`` up to its field's nested ``"``."""
    found = []
    for line in code.splitlines():
        start = line.find('f"')
        while start >= 0:
            field = line.find("{", start)
            close = line.find("}", field)
            if field >= 0 and close >= 0 and '"' in line[field:close]:
                found.append(line.strip())
                break
            start = line.find('f"', start + 2)
    return found


async def test_a_field_holds_no_quote_of_its_f_strings_kind(start_raw, tmp_path):
    # What the model wrote there in the task suite, up to the field's receiver.
    client, uri, buffer = await open_task(start_raw, TASK, tmp_path / "signup", FIRST_LINES)

    off = {**PATIENT, "steering": {**PATIENT["steering"], "strings": False}}
    client.notify("workspace/didChangeConfiguration", {"settings": {"steerlsp": off}})
    without = await complete(client, uri, buffer)
    assert nested_quotes(FIRST_LINES + without), without  # the model's own choice nests it

    on = {**PATIENT, "steering": {**PATIENT["steering"], "strings": True}}  # settings merge
    client.notify("workspace/didChangeConfiguration", {"settings": {"steerlsp": on}})
    steered = await complete(client, uri, buffer)
    assert nested_quotes(FIRST_LINES + steered) == [], steered
    ast.parse(buffer + steered + "\n)")  # the call the completion stays inside
