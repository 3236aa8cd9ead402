"""Receivers known from the text alone (``server/analysis/receivers.py``)."""

from __future__ import annotations

import pytest

from steerlsp.server.analysis.receivers import class_bases, module_receiver


@pytest.mark.parametrize(
    ("text", "module"),
    [
        ("import numpy as np\nx = np.", "numpy"),
        ("import os\nos.path.", "os.path"),  # the chain after the module
        ("import os.path\nos.path.", "os.path"),  # ``import os.path`` binds ``os``
        ("import os.path as osp\nosp.", "os.path"),
        ("import numpy as np, pandas as pd\npd.", "pandas"),
        ("import numpy\nnumpy.linalg.", "numpy.linalg"),
        ("import functools\n\n\n@functools.", "functools"),
        ("import numpy as np\ny = np.array(1)\nz = np .", "numpy"),
        ("try:\n    import numpy as np\nexcept ImportError:\n    import numpy as np\nnp.", "numpy"),
        # Bound some other way too, or not only used as a module: not certain.
        ("import numpy as np\ndef f(np):\n    np.", None),
        ("from x import np\nnp.", None),
        ("import numpy as np\nnp = 3\nnp.", None),
        ("import numpy as np\nimport jax.numpy as np\nnp.", None),
        ("import numpy as np\nf(np=1)\nnp.", None),
        ("import numpy as np\n# np is numpy\nnp.", None),
        ("import numpy as np\nfor np in x:\n    np.", None),
        # Not a module's members: a call's result, an attribute named like it, no import.
        ("import numpy as np\nf(np.a).", None),
        ("import numpy as np\nx.np.", None),
        ("x = np.", None),
        ("import numpy as np\nnp.ar", None),  # the question is asked right after the dot
        ("", None),
    ],
)
def test_module_receiver(text: str, module: str | None) -> None:
    assert module_receiver(text, len(text)) == module


def test_only_the_text_before_the_offset_is_the_receiver() -> None:
    text = "import numpy as np\nx = np.\ny = 1"
    assert module_receiver(text, text.index("\ny")) == "numpy"
    assert module_receiver(text, len(text)) is None


@pytest.mark.parametrize(
    ("text", "bases"),
    [
        (
            "from distutils.command.build import build as old_build\n"
            "class build(old_build):\n    pass\n",
            ["old_build"],
        ),
        (
            "class A(models.Model, Generic[T], metaclass=Meta):\n    pass\n",
            ["models.Model", "Generic"],
        ),
        # Spread over lines, nested, starred: the dotted names only.
        ("class A:\n    class B(\n        x.Y,\n        *bases,\n    ):\n        pass\n", ["x.Y"]),
        # Every Python's own, a call, none at all: nothing to read ahead.
        (
            "class D(object, Exception):\n    pass\n"
            "class E(base()):\n    pass\nclass F:\n    pass\n",
            [],
        ),
        # Each once, in the order first seen.
        ("class A(Base):\n    pass\nclass B(Other, Base):\n    pass\n", ["Base", "Other"]),
        # Not closed (being typed): nothing from it.
        ("class A(Base,\n", []),
    ],
)
def test_class_bases(text: str, bases: list[str]) -> None:
    assert class_bases(text, 8) == bases


def test_class_bases_stops_at_the_limit() -> None:
    text = "".join(f"class C{i}(B{i}):\n    pass\n" for i in range(10))
    assert class_bases(text, 3) == ["B0", "B1", "B2"]
