"""The ranker's query: the enclosing function, its docstring, comments, and the expected type."""

from __future__ import annotations

from steerlsp.models.steering.ranking.intent import intent_at

SOURCE = (
    "import os\n\n\n"
    "def other():\n    pass\n\n\n"
    "def profile_payload(\n    profile: Profile,\n) -> dict[str, Any]:\n"
    '    """The profile as a plain dict.\n\n    None fields are left out.\n    """\n'
    "    # keep aliases\n"
    "    data = 1\n"
)


def test_the_enclosing_function_its_docstring_and_comments_are_read():
    intent = intent_at(SOURCE + "    x = profile.")
    assert intent.function == "profile_payload"
    assert intent.docstring.startswith("The profile as a plain dict.")
    assert "None fields are left out." in intent.docstring
    assert intent.comments == "keep aliases"
    assert intent.line == "x = profile."
    assert intent.expected == ""  # not a return line


def test_a_return_line_expects_the_functions_return_annotation_over_several_lines():
    assert intent_at(SOURCE + "    return profile.").expected == "dict[str, Any]"


def test_the_expected_type_is_read_as_chatlsp_reads_it():
    """An annotated assignment, a field declared in the class, a typed element: the same
    reading as ChatLSP's expectedType, without Jedi."""
    assert intent_at(SOURCE + "    name: str = profile.").expected == "str"
    method = "class Cart:\n    total: int\n\n    def add(self, price):\n        self.total = price."
    assert intent_at(method).expected == "int"
    assert intent_at(SOURCE + "    names: list[str] = [profile.").expected == "str"
    assert intent_at(SOURCE + "    return profile.", typed=False).expected == ""
    assert intent_at("import os\nx = os.").expected == ""  # no annotation says


def test_module_level_code_has_no_function():
    intent = intent_at("import os\n# list the files\nos.")
    assert (intent.function, intent.docstring, intent.comments) == ("", "", "list the files")


def test_a_nested_def_at_the_same_depth_is_not_the_enclosing_one():
    source = "def outer():\n    def inner():\n        pass\n    return value."
    assert intent_at(source).function == "outer"


def test_the_documents_subclasses_of_the_expected_type_fit_it():
    source = (
        "class Animal: ...\n\nclass Dog(Animal): ...\n\n"
        "def adopt(shelter) -> Animal:\n    return shelter."
    )
    intent = intent_at(source)
    assert intent.expected == "Animal" and intent.subclasses == {"Dog"}
    assert intent_at(source, typed=False).subclasses == frozenset()
