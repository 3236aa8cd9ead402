"""Static deprecation detection: synthetic sources for each form, then real installed libraries."""

from __future__ import annotations

import ast
import functools
import os
import sysconfig
import textwrap
from pathlib import Path

import pytest

from steerlsp.models.deprecation.static import (
    MAX_SOURCE_BYTES,
    Deprecation,
    DeprecationCache,
    deprecation_in_source,
    deprecations_in,
    read_source,
)
from steerlsp.models.deprecation.text import replacement_in


def _line_of(source: str, name: str) -> int:
    """0-based line of the first ``def``/``class``/assignment that binds ``name``."""
    for node in ast.walk(ast.parse(source)):
        if (
            isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef | ast.ClassDef)
            and node.name == name
        ) or (
            isinstance(node, ast.Assign)
            and any(isinstance(t, ast.Name) and t.id == name for t in node.targets)
        ):
            return node.lineno - 1
    raise AssertionError(f"{name} not defined")


def check(source: str, name: str, python: tuple[int, int] | None = None) -> Deprecation | None:
    source = textwrap.dedent(source)
    return deprecation_in_source(source, _line_of(source, name), name, python)


# --- decorators ---------------------------------------------------------------------


PYDANTIC_SHAPED = """
import typing_extensions
import warnings
from typing_extensions import deprecated

from .warnings import PydanticDeprecatedSince20


class BaseModel:
    def model_dump(self, *, include=None):
        '''Generate a dictionary representation of the model.'''
        return {}

    @property
    @typing_extensions.deprecated(
        'The `__fields_set__` attribute is deprecated, use `model_fields_set` instead.',
        category=None,
    )
    def __fields_set__(self) -> set[str]:
        warnings.warn(
            'The `__fields_set__` attribute is deprecated, use `model_fields_set` instead.',
            category=PydanticDeprecatedSince20,
            stacklevel=2,
        )
        return self.__pydantic_fields_set__

    @typing_extensions.deprecated(
        'The `dict` method is deprecated; use `model_dump` instead.', category=None
    )
    def dict(self, *, include=None):  # noqa: D102
        warnings.warn(
            'The `dict` method is deprecated; use `model_dump` instead.',
            category=PydanticDeprecatedSince20,
            stacklevel=2,
        )
        return self.model_dump(include=include)

    @classmethod
    @deprecated(
        'The `parse_obj` method is deprecated; use `model_validate` instead.', category=None
    )
    def parse_obj(cls, obj):
        return cls.model_validate(obj)
"""


def test_pydantic_shaped_dict_is_deprecated_in_favour_of_model_dump() -> None:
    found = check(PYDANTIC_SHAPED, "dict")
    assert found == Deprecation(
        "The `dict` method is deprecated; use `model_dump` instead.", "model_dump", "decorator"
    )
    assert check(PYDANTIC_SHAPED, "model_dump") is None


def test_pydantic_shaped_property_and_classmethod() -> None:
    fields_set = check(PYDANTIC_SHAPED, "__fields_set__")
    assert fields_set is not None and fields_set.replacement == "model_fields_set"
    parse_obj = check(PYDANTIC_SHAPED, "parse_obj")
    assert parse_obj is not None and parse_obj.replacement == "model_validate"


@pytest.mark.parametrize(
    "source",
    [
        # PEP 702 from warnings (3.13) and typing_extensions, plain and aliased
        """
        from warnings import deprecated
        @deprecated("Use `new_api` instead")
        def old(): ...
        """,
        """
        from typing_extensions import deprecated as dep
        @dep("Use `new_api` instead")
        def old(): ...
        """,
        """
        import typing_extensions as te
        @te.deprecated("Use `new_api` instead")
        def old(): ...
        """,
        """
        import warnings
        @warnings.deprecated("Use `new_api` instead")
        async def old(): ...
        """,
        # the `deprecated` package: keyword reason, and the sphinx flavour
        """
        from deprecated import deprecated
        @deprecated(reason="use new_api instead", version="1.2")
        def old(): ...
        """,
        """
        from deprecated.sphinx import deprecated as gone
        @gone(version="1.2", reason="Replaced by new_api.")
        def old(): ...
        """,
        # the `deprecation` package
        """
        import deprecation
        @deprecation.deprecated(
            deprecated_in="1.0", removed_in="2.0", details="Use new_api instead"
        )
        def old(): ...
        """,
        # a library's own decorator, spelt deprecated, with a stated alternative (matplotlib)
        """
        from matplotlib import _api
        class Axes:
            @_api.deprecated("3.8", alternative="new_api")
            def old(self): ...
        """,
    ],
)
def test_decorator_forms(source: str) -> None:
    found = check(source, "old")
    assert found is not None
    assert found.source == "decorator"
    assert found.replacement == "new_api"


def test_bare_decorator_without_message() -> None:
    found = check("from deprecated import deprecated\n@deprecated\ndef old(): ...\n", "old")
    assert found == Deprecation("deprecated", None, "decorator")


def test_deprecated_class_and_its_decorator_lines() -> None:
    source = textwrap.dedent(
        """
        from typing_extensions import deprecated

        @deprecated(
            "`Container` is deprecated; subclass `Module` instead.",
            category=FutureWarning,
        )
        class Container:
            pass
        """
    )
    line = _line_of(source, "Container")
    found = deprecation_in_source(source, line, "Container")
    assert found is not None and found.source == "decorator"
    # A definition result may point at the first decorator line instead.
    assert deprecation_in_source(source, line - 4, "Container") == found
    assert deprecation_in_source(source, line, "Other") is None
    assert deprecation_in_source(source, line + 1) is None


def test_argument_level_decorators_do_not_deprecate_the_function() -> None:
    source = """
    from .utils import deprecate_kwarg
    @deprecate_kwarg("image_patches", version="v5.24", new_name="pixel_values")
    def forward(self, pixel_values=None): ...
    """
    assert check(source, "forward") is None


# --- overloads and properties -------------------------------------------------------


def test_deprecated_implementation_deprecates_every_overload() -> None:
    source = textwrap.dedent(
        """
        from typing import overload
        from typing_extensions import deprecated

        @overload
        def f(x: int) -> int: ...
        @overload
        def f(x: str) -> str: ...
        @deprecated("use g instead")
        def f(x): return x
        """
    )
    lines = sorted(d.line for d in deprecations_in(source))
    assert len(lines) == 3
    assert all(deprecation_in_source(source, line, "f") for line in lines)


def test_every_overload_deprecated_deprecates_the_name() -> None:
    source = """
    from typing_extensions import deprecated, overload as _overload
    @_overload
    @deprecated("Use `inspect.iscoroutinefunction()` instead.")
    def iscoroutinefunction(func: int) -> bool: ...
    @_overload
    @deprecated("Use `inspect.iscoroutinefunction()` instead.")
    def iscoroutinefunction(func: object) -> bool: ...
    """
    found = check(source, "iscoroutinefunction")
    # The bare replacement would name the deprecated function itself.
    assert found is not None and found.replacement == "inspect.iscoroutinefunction"


def test_one_deprecated_overload_is_a_way_of_calling_not_the_name() -> None:
    source = textwrap.dedent(
        """
        from typing import overload
        from typing_extensions import deprecated
        @overload
        def split(s: str) -> list[str]: ...
        @overload
        @deprecated("Passing None for 's' to shlex.split() is deprecated.")
        def split(s: None) -> list[str]: ...
        """
    )
    assert deprecations_in(source) == []


def test_property_setter_shares_the_getter_deprecation() -> None:
    source = textwrap.dedent(
        """
        import warnings
        class A:
            @property
            def size(self):
                warnings.warn("size is deprecated, use `length`", DeprecationWarning)
                return 1
            @size.setter
            def size(self, value): ...
            @property
            def length(self): return 1
        """
    )
    found = deprecations_in(source)
    assert [(d.name, d.deprecation.source, d.deprecation.replacement) for d in found] == [
        ("size", "warning", "length"),
        ("size", "warning", "length"),
    ]


# --- warnings in the body -----------------------------------------------------------


@pytest.mark.parametrize(
    ("source", "replacement"),
    [
        (
            """
            import warnings
            def old():
                warnings.warn(
                    "old() is deprecated, use new() instead", DeprecationWarning, stacklevel=2
                )
                return new()
            """,
            "new",
        ),
        (
            """
            from warnings import warn
            def old():
                msg = "old is going away"
                warn(msg, category=FutureWarning)
            """,
            None,
        ),
        (
            """
            import warnings
            def old():
                warnings.warn(DeprecationWarning("old: please use `new`"))
            """,
            "new",
        ),
        (
            # pandas
            """
            import warnings
            from pandas.util._exceptions import find_stack_level
            class DataFrame:
                def old(self):
                    warnings.warn(
                        f"'{type(self).__name__}.old' is deprecated and "
                        "will be removed in a future version. "
                        "Please use 'DataFrame.transpose' instead.",
                        FutureWarning,
                        stacklevel=find_stack_level(),
                    )
                    return self.transpose()
            """,
            "transpose",
        ),
        (
            # a library's own category, and a message that says nothing of deprecation
            """
            import warnings
            def old():
                warnings.warn("going away", PendingDeprecationWarning)
            """,
            None,
        ),
        (
            # torch: no category, the message says it
            """
            import warnings
            def old():
                with lock:
                    warnings.warn("`old` is deprecated. Use `nn.functional.new` instead.")
                return 1
            """,
            "new",
        ),
        (
            # matplotlib-style helper
            """
            from matplotlib import _api
            def old():
                _api.warn_deprecated("3.8", name="old", alternative="new")
            """,
            "new",
        ),
        (
            # setuptools
            """
            from .warnings import SetuptoolsDeprecationWarning
            def old():
                SetuptoolsDeprecationWarning.emit("old is deprecated.", "Use `new` instead.")
            """,
            "new",
        ),
        (
            """
            import warnings
            def old():
                try:
                    warnings.warn("x", RemovedInDjango60Warning)
                except Exception:
                    pass
            """,
            None,
        ),
    ],
)
def test_body_warning_forms(source: str, replacement: str | None) -> None:
    found = check(source, "old")
    assert found is not None
    assert found.source == "warning"
    assert found.replacement == replacement


def test_message_in_a_module_constant() -> None:
    source = """
    import warnings
    DEPRECATION_MESSAGE = (
        "The attention mask API (`AttentionMaskConverter`) is deprecated. "
        "Please use the new API in `transformers.masking_utils`."
    )
    class AttentionMaskConverter:
        def __init__(self, is_causal):
            warnings.warn(DEPRECATION_MESSAGE, FutureWarning)
    """
    found = check(source, "AttentionMaskConverter")
    assert found is not None
    assert found.reason.startswith("The attention mask API")
    assert found.replacement is None  # "the new API in <a module>" names no replacement name


def test_class_whose_constructor_warns() -> None:
    source = """
    import warnings
    class Old:
        def __init__(self):
            warnings.warn("Old is deprecated; use New", DeprecationWarning)
    """
    found = check(source, "Old")
    assert found is not None and found.source == "warning" and found.replacement == "New"


@pytest.mark.parametrize(
    "source",
    [
        # a warning under a condition deprecates an argument, not the function
        """
        import warnings
        def old(x, y=None):
            if y is not None:
                warnings.warn("y is deprecated", DeprecationWarning)
        """,
        # after the return: never runs
        """
        import warnings
        def old():
            return 1
            warnings.warn("x", DeprecationWarning)
        """,
        # in a nested function or a lambda
        """
        import warnings
        def old():
            def inner():
                warnings.warn("x", DeprecationWarning)
            return lambda: warnings.warn("y", DeprecationWarning)
        """,
        # a user warning about something else
        """
        import warnings
        def old():
            warnings.warn("slow path taken", RuntimeWarning)
        """,
        # numpy: a helper that deprecates one argument value
        """
        def old(shape):
            shape = _deprecate_shape_0_as_None(shape)
        """,
        # a function that implements deprecation is not itself deprecated
        """
        import warnings
        def warn_about(name):
            '''Warn about deprecated options.'''
            if name:
                warnings.warn(f"{name} is deprecated", DeprecationWarning)
        old = warn_about
        """,
    ],
)
def test_not_deprecated(source: str) -> None:
    assert check(source, "old") is None


# --- docstrings ---------------------------------------------------------------------


@pytest.mark.parametrize(
    ("docstring", "replacement"),
    [
        (
            '"""Return x.\n\n    .. deprecated:: 1.2\n        Use :meth:`new` instead.\n    """',
            "new",
        ),
        ('"""Deprecated: use `new` instead."""', "new"),
        ('"""DEPRECATED."""', None),
        ('"""(Deprecated) An alias of new."""', "new"),
        ('"""Deprecated since 2.0, replaced by :func:`pkg.new`."""', "new"),
        (
            '"""Upsample.\n\n    .. warning::\n        This function is deprecated in favor of'
            ' :func:`torch.nn.functional.new`.\n    """',
            "new",
        ),
        ('"""Compute.\n\n    ``old`` is deprecated; please use ``new``.\n    """', "new"),
        ('"""Compute.\n\n    Deprecated:\n        Use new instead.\n    """', "new"),
    ],
)
def test_docstring_forms(docstring: str, replacement: str | None) -> None:
    found = check(f"def old():\n    {docstring}\n", "old")
    assert found is not None
    assert found.source == "docstring"
    assert found.replacement == replacement


@pytest.mark.parametrize(
    "docstring",
    [
        # numpy: a directive under a parameter deprecates a use of the parameter
        '''"""
        Expand the shape.

        Parameters
        ----------
        axis : int
            Position.

            .. deprecated:: 1.13.0
                Passing an axis where axis > a.ndim is deprecated.
        deprecated : bool
            Whether to include deprecated names.

        Returns
        -------
        out : ndarray
        """''',
        # google and sphinx parameter descriptions
        '''"""Compute.

        Args:
            eps: Deprecated, has no effect.
        """''',
        '''"""Compute.

        :param eps: deprecated since 1.2, has no effect.
        """''',
        # about deprecation, not deprecated
        '''"""Warn about deprecated options, which this function is not."""''',
        '''"""Passing a list is deprecated since 1.2; pass a tuple."""''',
    ],
)
def test_docstrings_that_do_not_deprecate_the_definition(docstring: str) -> None:
    source = "def old():\n    " + textwrap.indent(textwrap.dedent(docstring), "    ").lstrip()
    assert check(source + "\n", "old") is None


# --- assignments, replacements, robustness ------------------------------------------


def test_alias_assigned_from_a_deprecation_helper() -> None:
    source = textwrap.dedent(
        """
        class TestCase:
            def assertEqual(self, a, b): ...
            def _deprecate(original_func):
                return original_func
            failUnlessEqual = assertEquals = _deprecate(assertEqual)
            newer = assertEqual
        """
    )
    found = deprecation_in_source(source, _line_of(source, "assertEquals"), "assertEquals")
    assert found == Deprecation("deprecated alias of assertEqual", "assertEqual", "warning")
    assert deprecation_in_source(source, _line_of(source, "assertEquals"), "failUnlessEqual")
    assert deprecation_in_source(source, _line_of(source, "newer"), "newer") is None


def test_decorator_applied_as_a_call() -> None:
    source = 'from typing_extensions import deprecated\nold = deprecated("Use new.")(new)\n'
    assert check(source, "old") == Deprecation("Use new.", "new", "decorator")


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        ("The `dict` method is deprecated; use `model_dump` instead.", "model_dump"),
        ("use the `model_fields` class property instead.", "model_fields"),
        ("Please use 'DataFrame.transpose' instead.", "transpose"),
        ("Use X instead", "X"),
        ("replaced by new_thing", "new_thing"),
        ("in favour of :meth:`~pkg.Cls.method`", "method"),
        ("use :func:`the new one <pkg.newer>`", "newer"),
        ("please use foo.bar() from now on", "bar"),
        ("Renamed to `fresh`.", "fresh"),
        ("Use an explicit dtype like int64 or float64 instead.", None),
        ("Do not use this function; use `other`.", "other"),
        ("will be removed in 3.0", None),
        ("Please use {0} instead.", None),
        ("See `other` for details.", None),
    ],
)
def test_replacement_in(text: str, expected: str | None) -> None:
    assert replacement_in(text) == expected


def test_unparseable_and_encoded_sources() -> None:
    assert deprecations_in("def broken(:\n") == []
    assert deprecations_in("x = '\0'\n") == []
    source = "# -*- coding: latin-1 -*-\n@deprecated('\xe9t\xe9: use new')\ndef old(): ...\n"
    found = deprecations_in(source.encode("latin-1"))
    assert [d.deprecation.reason for d in found] == ["\xe9t\xe9: use new"]


def test_pathological_sources_yield_nothing_rather_than_fail() -> None:
    long_concatenation = " + ".join(['"x"'] * 5000)
    source = f"import warnings\ndef old():\n    warnings.warn({long_concatenation})\n"
    assert deprecations_in(source) == []
    assert deprecations_in(b"\x00\xff\xfe binary") == []


def test_version_blocks_are_decided_for_the_project_python() -> None:
    source = textwrap.dedent(
        """
        import sys
        from typing_extensions import deprecated
        if sys.version_info >= (3, 14):
            @deprecated("Deprecated since Python 3.14.")
            def policy(): ...
        else:
            def policy(): ...
        """
    )
    line = _line_of(source, "policy")
    assert deprecation_in_source(source, line, "policy", python=(3, 14)) is not None
    assert deprecation_in_source(source, line, "policy", python=(3, 11)) is None
    # Undecided without a version: the deprecated branch counts.
    assert deprecation_in_source(source, line, "policy") is not None


def test_reason_is_one_bounded_line() -> None:
    long = "word " * 200
    found = check(
        f'import warnings\ndef old():\n    warnings.warn("""{long}\n\n""", FutureWarning)\n', "old"
    )
    assert found is not None and len(found.reason) <= 300 and "\n" not in found.reason


# --- files and the cache ------------------------------------------------------------


def test_cache_follows_file_changes(tmp_path: Path) -> None:
    path = tmp_path / "mod.py"
    path.write_text("def old(): ...\n")
    cache = DeprecationCache(max_files=2)
    assert cache.of(path, 0, "old") is None
    path.write_text('import warnings\ndef old():\n    warnings.warn("x", DeprecationWarning)\n')
    os.utime(path, ns=(1, 1))  # a different mtime, whatever the clock's resolution
    assert cache.of(path, 1, "old") == Deprecation("x", None, "warning")
    assert len(cache) == 1


def test_cache_is_bounded(tmp_path: Path) -> None:
    cache = DeprecationCache(max_files=2)
    for index in range(5):
        path = tmp_path / f"m{index}.py"
        path.write_text("def f(): ...\n")
        cache.definitions(path)
    assert len(cache) == 2
    with pytest.raises(ValueError, match="0"):
        DeprecationCache(max_files=0)


def test_only_regular_files_within_the_size_cap_are_read(tmp_path: Path) -> None:
    big = tmp_path / "big.py"
    big.write_bytes(b"# " + b"x" * 100 + b"\n")
    assert read_source(big, limit=50) is None
    assert read_source(big) is not None
    assert read_source(tmp_path) is None
    assert read_source(tmp_path / "missing.py") is None
    assert DeprecationCache().of(tmp_path / "missing.py", 0) is None
    fifo = tmp_path / "fifo.py"
    os.mkfifo(fifo)
    assert read_source(fifo) is None  # and it did not block waiting for a writer
    assert DeprecationCache().of(fifo, 0) is None
    assert MAX_SOURCE_BYTES == 2 * 1024 * 1024


# --- real installed libraries, found with ast, never imported -----------------------

SITE = Path(sysconfig.get_paths()["purelib"])
STDLIB = Path(sysconfig.get_paths()["stdlib"])


def _definition(path: Path, qualname: str) -> int:
    """0-based line where ``qualname`` is defined (its first definition) in ``path``."""
    if not path.is_file():
        pytest.skip(f"{path} is not installed")
    body = _parsed(path).body
    line = -1
    for part in qualname.split("."):
        node = next(
            (
                n
                for n in _flattened(body)
                if (isinstance(n, ast.FunctionDef | ast.ClassDef) and n.name == part)
                or (
                    isinstance(n, ast.Assign)
                    and any(isinstance(t, ast.Name) and t.id == part for t in n.targets)
                )
            ),
            None,
        )
        assert node is not None, f"{qualname} not in {path}"
        line = node.lineno - 1
        body = node.body if isinstance(node, ast.ClassDef) else []
    return line


@functools.cache
def _parsed(path: Path) -> ast.Module:
    return ast.parse(path.read_bytes())


# One cache for the real files, as the server keeps one: each is parsed once.
REAL = DeprecationCache()


def _flattened(body: list[ast.stmt]) -> list[ast.stmt]:
    out: list[ast.stmt] = []
    for node in body:
        if isinstance(node, ast.If | ast.Try):
            out += _flattened(node.body) + _flattened(node.orelse)
        else:
            out.append(node)
    return out


REAL_DEPRECATED = [
    (SITE / "pydantic/main.py", "BaseModel.dict", "decorator", "model_dump"),
    (SITE / "pydantic/main.py", "BaseModel.json", "decorator", "model_dump_json"),
    (SITE / "pydantic/main.py", "BaseModel.parse_obj", "decorator", "model_validate"),
    (SITE / "pydantic/main.py", "BaseModel.__fields_set__", "decorator", "model_fields_set"),
    (SITE / "torch/nn/functional.py", "upsample", "warning", "interpolate"),
    (SITE / "torch/nn/functional.py", "upsample_bilinear", "warning", "interpolate"),
    (SITE / "torch/nn/modules/container.py", "Container", "decorator", None),
    (SITE / "numpy/_core/numerictypes.py", "maximum_sctype", "warning", None),
    (SITE / "numpy/lib/_shape_base_impl.py", "row_stack", "warning", "vstack"),
    (SITE / "transformers/modeling_attn_mask_utils.py", "AttentionMaskConverter", "warning", None),
    (
        SITE / "transformers/modeling_utils.py",
        "PreTrainedModel.gradient_checkpointing_enable",
        "warning",
        "activation_checkpointing_enable",
    ),
    (STDLIB / "unittest/case.py", "TestCase.assertEquals", "warning", "assertEqual"),
    (STDLIB / "unittest/case.py", "TestCase.assertDictContainsSubset", "warning", None),
    (
        SITE / "jedi/third_party/typeshed/stdlib/xml/etree/ElementTree.pyi",
        "Element.__bool__",
        "decorator",
        None,
    ),
]


@pytest.mark.parametrize(
    ("path", "qualname", "source", "replacement"),
    REAL_DEPRECATED,
    ids=[f"{p.parent.name}/{p.name}:{q}" for p, q, _, _ in REAL_DEPRECATED],
)
def test_real_deprecations(path: Path, qualname: str, source: str, replacement: str | None) -> None:
    name = qualname.rsplit(".", 1)[-1]
    found = REAL.of(path, _definition(path, qualname), name)
    assert found is not None
    assert (found.source, found.replacement) == (source, replacement)
    assert "deprecat" in found.reason.lower()


REAL_CURRENT = [
    (SITE / "pydantic/main.py", "BaseModel.model_dump"),
    (SITE / "pydantic/main.py", "BaseModel.model_validate"),
    (SITE / "numpy/lib/_shape_base_impl.py", "expand_dims"),  # a deprecated use of `axis`
    (SITE / "numpy/_core/records.py", "fromarrays"),  # a deprecated `shape` value
    (SITE / "torch/nn/functional.py", "dropout2d"),  # warns only for some inputs
    (SITE / "torch/nn/functional.py", "interpolate"),
    (STDLIB / "unittest/case.py", "TestCase.assertEqual"),
    (STDLIB / "unittest/case.py", "TestCase._callTestMethod"),  # warns on a bad test only
    (SITE / "jedi/third_party/typeshed/stdlib/shlex.pyi", "split"),  # one deprecated overload
]


@pytest.mark.parametrize(
    ("path", "qualname"),
    REAL_CURRENT,
    ids=[f"{p.parent.name}/{p.name}:{q}" for p, q in REAL_CURRENT],
)
def test_real_current_definitions(path: Path, qualname: str) -> None:
    name = qualname.rsplit(".", 1)[-1]
    assert REAL.of(path, _definition(path, qualname), name) is None


def test_typeshed_stub_versions() -> None:
    stub = SITE / "jedi/third_party/typeshed/stdlib/asyncio/events.pyi"
    if not stub.is_file():
        pytest.skip("jedi's typeshed is not installed")
    names = {d.name for d in DeprecationCache(python=(3, 14)).definitions(stub)}
    assert {"get_event_loop_policy", "set_event_loop_policy"} <= names
    older = {d.name for d in DeprecationCache(python=(3, 11)).definitions(stub)}
    assert "get_event_loop_policy" not in older
