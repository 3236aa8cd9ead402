"""Regenerate the server settings in package.json from steerlsp's own (server/config.py).

    .venv/bin/python editor-configs/vscode/sync_settings.py

Types, defaults, enums and ranges come from the dataclasses; descriptions already in
package.json are kept; a new setting takes its row of the configuration reference
(docs/configuration.md), or a pointer to it. tests/test_vscode_extension.py checks that
the two agree.
"""

from __future__ import annotations

import dataclasses
import json
from pathlib import Path
from typing import Any

from steerlsp.server import config

HERE = Path(__file__).resolve().parent
PACKAGE = HERE / "package.json"
REFERENCE = HERE.parent.parent / "docs" / "configuration.md"
# package.json's configuration groups, by settings section.
TITLES = {
    "model": "Model",
    "completion": "Completion",
    "python": "Python",
    "steering": "Steering",
    "chatlsp": "ChatLSP",
    "upstream": "Upstream",
}
JSON_TYPES = {bool: "boolean", int: "integer", float: "number", str: "string"}


def reference_description(key: str) -> str | None:
    """The meaning column of the configuration reference's row that names ``key`` alone."""
    for line in REFERENCE.read_text().splitlines():
        cells = [cell.strip() for cell in line.split("|")]
        if len(cells) > 3 and cells[1] == f"`{key}`":
            return cells[2]
    return None


def property_of(value: Any, meta: Any, description: str) -> dict[str, Any]:
    """The JSON schema of one setting, as VS Code's settings editor reads it."""
    spec: dict[str, Any] = {"type": JSON_TYPES[type(value)], "default": value}
    if "choices" in meta:
        spec["enum"] = list(meta["choices"])
    if "pattern" in meta:
        spec["pattern"] = meta["pattern"].pattern
    if "min" in meta:
        spec["minimum"] = meta["min"]
    if "max" in meta:
        spec["maximum"] = meta["max"]
    spec["markdownDescription"] = description
    return spec


def main() -> None:
    package = json.loads(PACKAGE.read_text())
    groups = package["contributes"]["configuration"]
    known = {key: spec for group in groups for key, spec in group["properties"].items()}
    sections: dict[str, dict[str, Any]] = {name: {} for name in TITLES}
    for part in dataclasses.fields(config.Settings()):
        section = getattr(config.Settings(), part.name)
        name = config.camel(part.name)
        for spec in dataclasses.fields(section):
            key = f"{name}.{config.camel(spec.name)}"
            old = known.get(f"steerlsp.{key}", {}).get("markdownDescription")
            description = old or reference_description(key)
            if description is None:
                description = "See steerlsp's configuration reference (docs/configuration.md)."
                print(f"describe steerlsp.{key} in package.json")
            value = getattr(section, spec.name)
            sections[name][f"steerlsp.{key}"] = property_of(value, spec.metadata, description)
    titled = {group["title"]: group for group in groups}
    for section_name, title in TITLES.items():
        if title not in titled:  # a new settings section: a new group
            titled[title] = {"title": title, "properties": {}}
            groups.append(titled[title])
        titled[title]["properties"] = sections[section_name]
    PACKAGE.write_text(json.dumps(package, indent=2, ensure_ascii=False) + "\n")


if __name__ == "__main__":
    main()
