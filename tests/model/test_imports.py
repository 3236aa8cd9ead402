"""Unused imports, end to end: the real steerlsp, the embedded model, real pylsp.

The task suite's ``uncommon-statistics-correlation`` imports ``statistics`` and does
not use it yet. Without the unused-import stage the embedded model computes by hand
(``return sum(...)``) and never names the module; with it, the body uses the module:
``return statistics.correlation(xs, ys)`` here, or in the task suite (where the
document's path differs) a guard that raises ``statistics.StatisticsError``, the
exception the docstring names. Either way the body parses.
"""

from __future__ import annotations

import ast
import shutil
from pathlib import Path

from tests.helpers.session import PATIENT as PATIENT_STEERING
from tests.helpers.session import complete, explain, ready, start, warm_analysis

TASK = Path(__file__).parents[2] / "bench" / "tasks" / "uncommon-statistics-correlation"
# As the task suite runs it: a whole block (96 tokens), one item.
PATIENT = {**PATIENT_STEERING, "completion": {"maxNewTokens": 96, "alternatives": 1}}


async def test_the_body_uses_the_module_the_document_imported(start_raw, tmp_path):
    root = tmp_path / "stats"
    shutil.copytree(TASK, root)
    buffer = (root / "prompt.py").read_text()
    client = await start(start_raw, root, options={"steerlsp": PATIENT})
    await ready(client)
    await warm_analysis(client)
    uri = (root / "prompt.py").as_uri()
    client.open(uri, buffer)

    off = {**PATIENT, "steering": {**PATIENT["steering"], "imports": False}}
    client.notify("workspace/didChangeConfiguration", {"settings": {"steerlsp": off}})
    without = await complete(client, uri, buffer)
    assert without.strip() and "statistics" not in without, without

    on = {**PATIENT, "steering": {**PATIENT["steering"], "imports": True}}  # settings merge
    client.notify("workspace/didChangeConfiguration", {"settings": {"steerlsp": on}})
    steered = await complete(client, uri, buffer)
    assert "statistics." in steered, steered
    ast.parse(buffer + steered)
    trace = (await explain(client, uri))["trace"]
    assert trace["unused_imports"] == ["statistics"], trace
