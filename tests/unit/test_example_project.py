"""The example project is a package of its own."""

from __future__ import annotations

from steerlsp import example

INVALID_PARAMS, REQUEST_FAILED = -32602, -32803


# ---- row 1: `make demo` on a fresh clone -------------------------------------------------


# ---- row 2: pylsp's own children see no workspace module ---------------------------------


# ---- rows 3 to 6: special files never read ------------------------------------------------


# ---- row 7: a huge document ---------------------------------------------------------------


# ---- row 8: notebook sync reads no disk -----------------------------------------------


# ---- row 9: settings that cannot be forwarded ----------------------------------------------


# ---- row 10: the pylint plugin runs no workspace package ----------------------------------
# (test_no_workspace_module_runs_in_what_pylsp_starts enables it, with a pylint/ package and
# an init-hook in the workspace.)


# ---- the editor's pipe is the reader's alone -------------------------------------------


# ---- memory limits ---------------------------------------------------------------------------


# ---- found by the hostile-workspace fuzz (bench/fuzz.py --hostile) --------------------------


def test_the_example_project_is_a_package_of_its_own():
    """The editable install (what `make demo` uses) imports it: on main it mapped
    ``steerlsp.example`` to a folder that was no package, and the demo failed."""
    from steerlsp import demo

    root = example.project()
    assert (root / "shop" / "cart.py").is_file() and (root / "shop" / "report.py").is_file()
    assert demo.example_project() == root
    assert not (root / "__init__.py").exists()  # the project's root is not itself a package
