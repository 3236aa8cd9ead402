"""A hostile workspace for the fault suite's hostile phase (tests/helpers/hostile.py).

What a cloned repository can hold to hurt a language server that opens it:

- **special files where tools look**: symlinks to ``/dev/stdin``,
  ``/dev/stdout``, ``/dev/zero``, ``/dev/urandom`` and FIFOs (``os.mkfifo``)
  named ``setup.cfg``, ``tox.ini``, ``.flake8``, ``pyproject.toml``,
  ``buildout.cfg``, ``bin/x``, ``manage.py``, ``.jedi/project.json``,
  ``pkg/__init__.py``, ``zz.py`` and other ``*.py`` files the real code imports;
- **huge files**: a 50 MB one-line module on disk, and documents over (and one
  just under) ``upstream.maxDocumentBytes`` for the client to open, some of
  them also on disk;
- **code that must never run**: modules shadowing what tools import (``json``,
  ``black``, ``pylint``, ``flake8``, ``sitecustomize`` ...), a ``pylintrc`` with
  an ``init-hook`` and a ``load-plugins``, ``.pth`` files and a ``.venv`` whose
  ``python`` is a script. Each writes a file into a markers folder *outside*
  the workspace when it runs: any file there is a failure.

Everything is drawn from a seeded RNG: one seed, one workspace.
"""

from __future__ import annotations

import os
import random
import stat
from dataclasses import dataclass, field
from pathlib import Path

MiB = 1024 * 1024
# steerlsp's upstream.maxDocumentBytes default.
MAX_DOCUMENT_BYTES = 5 * MiB
DEVICES = ("/dev/stdin", "/dev/stdout", "/dev/zero", "/dev/urandom")
# Where tools look for their configuration (or Jedi for its project and Django/buildout).
CONFIG_NAMES = ("setup.cfg", "tox.ini", ".flake8", "pyproject.toml", "buildout.cfg")
SPECIAL_NAMES = (
    "bin/x",
    "manage.py",
    ".jedi/project.json",
    "pkg/__init__.py",
    "zz.py",
    "app/pipe.py",
    "app/zero.py",
    "app/__init__.py",
    ".style.yapf",
    "requirements.txt",
    "nb.ipynb",
)
# Modules a tool (or Python itself) may import by name: in the workspace, each
# shadows the real one and leaves a marker when imported.
SHADOWS = (
    "black",
    "ruff",
    "json",
    "autopep8",
    "yapf",
    "csv",
    "zipfile",
    "textwrap",
    "ujson",
    "jedi",
    "parso",
    "sitecustomize",
    "usercustomize",
    "pycodestyle",
    "pyflakes",
    "hostile_plugin",  # pylintrc's load-plugins
)
SHADOW_PACKAGES = ("pylint", "flake8", "pylsp", "astroid")


@dataclass
class Workspace:
    """The workspace on disk, and what the client opens."""

    root: Path
    markers: Path  # outside root: a file here means workspace code ran
    specials: list[Path] = field(default_factory=list)  # not regular files, inside root
    fifos: list[Path] = field(default_factory=list)
    code: dict[Path, str] = field(default_factory=dict)  # ordinary modules and their text
    big: Path | None = None  # the 50 MB one-line module, never opened
    huge: dict[str, str] = field(default_factory=dict)  # uri -> text, over/under the limit
    untitled: dict[str, str] = field(default_factory=dict)  # uris not on disk -> text


def marker_code(name: str, markers: Path) -> str:
    """Python that records, in ``markers``, that ``name`` ran (and in which process)."""
    return (
        "import os as _o, sys as _s\n"
        f"_p = _o.path.join({str(markers)!r}, {name!r} + '-' + str(_o.getpid()))\n"
        "with open(_p, 'w') as _f:\n"
        "    _f.write(repr({'argv': _s.argv[:4], 'cwd': _o.getcwd()}))\n"
    )


def hook_line(name: str, markers: Path) -> str:
    """The same as one line, for an ``init-hook`` (no ``%``: configparser interpolates)."""
    target = os.path.join(str(markers), name + "-")
    return f"import os; open({target!r} + str(os.getpid()), 'w').write('ran')"


def build(base: Path, rng: random.Random, big_mb: int = 50) -> Workspace:
    """Make the workspace under ``base`` (``base/ws``, markers in ``base/markers``)."""
    ws = Workspace(root=base / "ws", markers=base / "markers")
    ws.root.mkdir(parents=True)
    ws.markers.mkdir()
    (base / "fifos").mkdir()
    for name in SHADOWS:
        _write(
            ws.root / f"{name}.py",
            marker_code(name, ws.markers) + "def register(linter):\n    pass\n",
        )
    for name in SHADOW_PACKAGES:
        _write(ws.root / name / "__init__.py", marker_code(name, ws.markers))
        _write(ws.root / name / "__main__.py", marker_code(f"{name}.__main__", ws.markers))
    _configs(ws, rng)
    _venv(ws)
    for name in SPECIAL_NAMES:
        _special(ws, ws.root / name, rng, base / "fifos")
    _code(ws, rng)
    _huge(ws, rng, big_mb)
    return ws


def _configs(ws: Workspace, rng: random.Random) -> None:
    """pylintrc and .pylintrc with hooks; each of CONFIG_NAMES special at the root and
    hooked in ``app/`` or the other way round, by the seed."""
    hook = hook_line("init-hook", ws.markers)
    rc = f"[MAIN]\ninit-hook={hook}\nload-plugins=hostile_plugin\n"
    _write(ws.root / "pylintrc", rc)
    _write(ws.root / ".pylintrc", rc)
    hooked = {
        "setup.cfg": f"[pylint.MAIN]\ninit-hook={hook}\n[flake8]\nmax-line-length=10\n",
        "tox.ini": f"[pylint.MAIN]\ninit-hook={hook}\n[pycodestyle]\nmax-line-length=10\n",
        ".flake8": "[flake8]\nmax-line-length = 10\n",
        "pyproject.toml": (
            f'[tool.pylint.main]\ninit-hook = "{_toml(hook)}"\nload-plugins = ["hostile_plugin"]\n'
            "[tool.black]\nline-length = 10\n[tool.autopep8]\nmax_line_length = 10\n"
        ),
        "buildout.cfg": "[buildout]\nparts =\n",
    }
    fifo_dir = ws.root.parent / "fifos"
    for name, text in hooked.items():
        special_at_root = rng.random() < 0.6
        regular, special = (
            (ws.root / "app", ws.root) if special_at_root else (ws.root, ws.root / "app")
        )
        _write(regular / name, text)
        _special(ws, special / name, rng, fifo_dir)


def _toml(text: str) -> str:
    return text.replace("\\", "\\\\").replace('"', '\\"')


def _venv(ws: Workspace) -> None:
    """A ``.venv`` that runs code if anything trusts it: its python is a marker script."""
    venv = ws.root / ".venv"
    _write(venv / "pyvenv.cfg", "home = /usr/bin\ninclude-system-site-packages = false\n")
    script = venv / "bin" / "python"
    _write(script, f"#!/bin/sh\ntouch {ws.markers}/venv-python-$$\nexec /bin/false\n")
    script.chmod(script.stat().st_mode | stat.S_IXUSR)
    pth = "import os; " + hook_line("pth", ws.markers).split("; ", 1)[1] + "\n"
    _write(venv / "lib" / "python3.11" / "site-packages" / "hostile.pth", pth)
    _write(ws.root / "hostile.pth", pth)


def _special(ws: Workspace, path: Path, rng: random.Random, fifo_dir: Path) -> None:
    """``path`` becomes a symlink to a device or a FIFO, or a FIFO itself."""
    path.parent.mkdir(parents=True, exist_ok=True)
    pick = rng.randrange(len(DEVICES) + 2)
    if pick < len(DEVICES):
        path.symlink_to(DEVICES[pick])
    elif pick == len(DEVICES):
        os.mkfifo(path)
        ws.fifos.append(path)
    else:
        fifo = fifo_dir / f"fifo{len(ws.fifos)}"
        os.mkfifo(fifo)
        ws.fifos.append(fifo)
        path.symlink_to(fifo)
    ws.specials.append(path)


MODULE = '''"""{doc}"""
import os
import json
import textwrap
{imports}


class {cls}:
    """A {noun}."""

    def __init__(self, owner: str, amount: float = 0.0) -> None:
        self.owner = owner
        self.amount = amount

    def {method}(self, delta: float) -> float:
        self.amount += delta
        return self.amount


def {func}(items: list[{cls}]) -> float:
    """Sum of the amounts."""
    return sum(item.amount for item in items)


def {func}_files(folder: str) -> list[str]:
    value = os.path.join(folder, "{noun}")
    value.
    data = json.dumps({{"a": 1}})
    {cls}("x").
    return os.listdir(folder) + [data, textwrap.dedent(value)]
'''
NOUNS = ("account", "basket", "ledger", "parcel", "ticket", "order", "route", "sensor")


def _code(ws: Workspace, rng: random.Random) -> None:
    names = rng.sample(NOUNS, rng.randint(4, len(NOUNS)))
    extra = ["import zz", "from app import pipe, zero", "from pkg import helpers", "import black"]
    extra += ["import csv", "import manage", "import pylint", "import ujson"]
    for n, noun in enumerate(names):
        folder = rng.choice((ws.root, ws.root / "app", ws.root / "pkg"))
        text = MODULE.format(
            doc=f"The {noun}s module (café ü 😀).",
            imports="\n".join(rng.sample(extra, rng.randint(1, 4))),
            cls=noun.title(),
            noun=noun,
            method=rng.choice(("add", "deposit", "push", "grow")),
            func=f"total_{noun}s",
        )
        path = folder / f"{noun}s.py"
        if n == 0:
            path = ws.root / "pkg" / "helpers.py"
        _write(path, text)
        ws.code[path] = text


def _huge(ws: Workspace, rng: random.Random, big_mb: int) -> None:
    """The big module on disk, and the documents around the size limit."""
    ws.big = ws.root / "big_generated.py"
    with open(ws.big, "w") as out:
        out.write("DATA = [")
        chunk = ", ".join(str(rng.randrange(10**6)) for _ in range(20000)) + ", "
        for _ in range(big_mb * MiB // len(chunk)):
            out.write(chunk)
        out.write("0]\n")
    sizes = {
        "just_under.py": MAX_DOCUMENT_BYTES - 64,
        "over_by_one.py": MAX_DOCUMENT_BYTES + 1,
        "over_6m.py": 6 * MiB,
        "over_12m.py": 12 * MiB,
    }
    for name, size in sizes.items():
        text = _sized(rng, size, long_lines=name == "just_under.py" or rng.random() < 0.5)
        path = ws.root / "gen" / name
        if rng.random() < 0.5:  # on disk too: what pylsp's plugins read from the path
            _write(path, text)
        ws.huge[path.as_uri()] = text
    ws.untitled["untitled:Untitled-1"] = MODULE.format(
        doc="untitled", imports="", cls="Thing", noun="thing", method="add", func="total"
    )
    ws.untitled[(ws.root / "not_on_disk.py").as_uri()] = "import os\nvalue = os.sep\nvalue.\n"


def _sized(rng: random.Random, size: int, long_lines: bool) -> str:
    """Python of exactly ``size`` bytes (ASCII): a few long literal lines, or many short ones."""
    if long_lines:
        line = "S = '" + "x" * 80_000 + "'\n"
    else:
        line = "".join(f"v{n} = {rng.randrange(1000)}\n" for n in range(1000))
    text = line * (size // len(line))
    pad = size - len(text)
    return text + ("#" * (pad - 1) + "\n" if pad else "")


def _write(path: Path, text: str) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(text)
