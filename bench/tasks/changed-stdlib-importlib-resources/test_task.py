import importlib
import inspect
import sys
import uuid
import warnings

import pytest

import candidate
from candidate import render_template


@pytest.fixture()
def package(tmp_path, monkeypatch):
    name = f"mailtpl_{uuid.uuid4().hex[:8]}"
    pkg = tmp_path / name
    pkg.mkdir()
    (pkg / "__init__.py").write_text("")
    (pkg / "welcome.txt").write_text("Hej $name, välkommen till $site!\n", encoding="utf-8")
    (pkg / "reset.txt").write_text("Reset link: ${url}?u=$user\n", encoding="utf-8")
    monkeypatch.syspath_prepend(str(tmp_path))
    importlib.invalidate_caches()
    yield name
    for mod in [m for m in sys.modules if m == name or m.startswith(name + ".")]:
        del sys.modules[mod]


def test_output_renders(package):
    assert render_template(package, "welcome.txt", name="Åsa", site="Ex") == "Hej Åsa, välkommen till Ex!\n"
    assert render_template(package, "reset.txt", url="https://x.io/r", user="7") == (
        "Reset link: https://x.io/r?u=7\n"
    )


def test_output_missing_value_raises(package):
    with pytest.raises(KeyError):
        render_template(package, "welcome.txt", name="Bo")


def test_approach_no_deprecated_resource_api(package):
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        render_template(package, "welcome.txt", name="A", site="B")
    assert "pkg_resources" not in inspect.getsource(candidate.render_template)
