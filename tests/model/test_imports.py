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

from tests.helpers.session import TASK_OPTIONS as PATIENT
from tests.helpers.session import complete, explain, open_task


async def test_the_body_uses_the_module_the_document_imported(start_raw, tmp_path):
    task = "uncommon-statistics-correlation"
    client, uri, buffer = await open_task(start_raw, task, tmp_path / "stats")

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
