"""Deprecated parameters read statically from a function's source
(``models/deprecation/parameters.py``), in the shapes libraries write them."""

from __future__ import annotations

import textwrap

from steerlsp.models.deprecation.parameters import deprecated_parameters

SOURCE = textwrap.dedent(
    '''
    import warnings
    from pandas.util._decorators import deprecate_kwarg


    class OneHotEncoder:
        def __init__(self, *, categories="auto", sparse="deprecated", sparse_output=True):
            if sparse != "deprecated":
                warnings.warn(
                    "`sparse` was renamed to `sparse_output` in version 1.2 and "
                    "will be removed in 1.4.",
                    FutureWarning,
                )
            self.categories = categories


    @deprecate_kwarg(old_arg_name="cols", new_arg_name="columns")
    def to_csv(path, columns=None, header=True):
        """Write a CSV file."""


    def read(path, sep=",", delim_whitespace=False, verbose=False, encoding=None):
        """Read a table.

        Parameters
        ----------
        path : str
            Where.
        delim_whitespace : bool, default False
            Split on whitespace.

            .. deprecated:: 2.2.0
                Use ``sep="\\\\s+"`` instead.
        verbose : bool
            Print timings.
        """
        if encoding is not None and verbose:
            warnings.warn("encoding and verbose together are slow")
        if sep is None:
            warnings.warn("read() without sep is deprecated", DeprecationWarning)


    def fetch(url, timeout=None, retries=0, retry=None):
        """Fetch a page.

        Args:
            url (str): The page.
            retry: Deprecated, use retries instead.
        """
    '''
)


def lines_of(text: str) -> int:
    """The 0-based line that holds ``text``."""
    return next(i for i, line in enumerate(SOURCE.splitlines()) if text in line)


def test_a_warning_under_an_if_on_the_parameter_names_it_and_its_replacement():
    found = deprecated_parameters(
        SOURCE, lines_of("class OneHotEncoder")
    )  # the class: its __init__
    assert set(found) == {"sparse"}
    assert found["sparse"].replacement == "sparse_output" and found["sparse"].source == "warning"


def test_a_decorator_names_the_old_argument_and_the_new():
    found = deprecated_parameters(SOURCE, lines_of("@deprecate_kwarg("))  # a decorator line
    assert found["cols"].source == "decorator" and found["cols"].replacement == "columns"
    assert deprecated_parameters(SOURCE, lines_of("def to_csv")) == found


def test_a_docstring_entry_says_deprecated_and_a_warning_of_two_is_no_notice():
    found = deprecated_parameters(SOURCE, lines_of("def read("))
    # Not ``verbose`` (its warning says no such thing), nor ``sep`` (leaving it out is
    # what is deprecated).
    assert set(found) == {"delim_whitespace"}
    assert found["delim_whitespace"].source == "docstring"
    assert found["delim_whitespace"].replacement is None  # ``sep="\s+"`` is a value
    google = deprecated_parameters(SOURCE, lines_of("def fetch("))
    assert set(google) == {"retry"} and google["retry"].replacement == "retries"


def test_nothing_where_no_function_is_or_the_source_does_not_parse():
    assert deprecated_parameters(SOURCE, 0) == {}
    assert deprecated_parameters("def f(:\n", 0) == {}


def test_only_a_test_of_whether_it_was_passed_counts_and_only_its_lines_are_parsed():
    """``isinstance(data, ...)`` is about a kind of value, not the parameter; the
    definition's own lines are cut out and parsed (a module that does not parse as a
    whole still gives its function's)."""
    source = textwrap.dedent(
        """
        import warnings

        class Frame:
            def __init__(self, data=None, copy=None):
                if isinstance(data, dict):
                    warnings.warn("Passing a dict is deprecated", DeprecationWarning)
                if copy:
                    warnings.warn("copy is deprecated and will be removed", FutureWarning)

        def broken(:
        """
    )
    found = deprecated_parameters(source, 3)  # the class line
    assert set(found) == {"copy"} and found["copy"].source == "warning"
