"""What the document's own classes declare their members to be (``semantics/declared.py``)."""

from __future__ import annotations

import pytest

from steerlsp.models.semantics import declared
from steerlsp.models.semantics.declared import Declarations
from steerlsp.models.steering.ranking.expected import current_hole
from steerlsp.models.steering.ranking.intent import intent_at

MODELS = (
    "from pathlib import Path\n"
    "from typing import Annotated, ClassVar, Final\n"
    "from sqlalchemy.orm import Mapped\n"
    "\n"
    "\n"
    "class User:\n"
    '    """A user."""\n'
    "\n"
    "    name: str\n"
    "    age: int = 3\n"
    "    limit = 10\n"
    "    ratio = 0.5\n"
    "    tags: ClassVar[list[str]] = []\n"
    '    note: Annotated[str, "shown"] = ""\n'
    "    key: Final[bytes] = b''\n"
    "    id: Mapped[int]\n"
    "    parent: 'User | None' = None\n"
    "    kind: Final = 'user'\n"
    "\n"
    "    def __init__(self, nick: str) -> None:\n"
    "        self.nick: str = nick\n"
    "        self.seen = 0\n"
    "\n"
    "    def full(self) -> str:\n"
    "        return self.name\n"
    "\n"
    "    @property\n"
    "    def home(self) -> Path:\n"
    "        return Path('/')\n"
)


def declarations(text: str) -> Declarations:
    """As ranking builds them: with the cursor's definition, repaired and parsed."""
    return Declarations(text, current_hole(text))


@pytest.mark.parametrize(
    ("name", "expected"),
    [
        ("name", "str"),
        ("age", "int"),
        ("limit", "int"),  # a plain constant: its literal's type
        ("ratio", "float"),
        ("tags", "list[str]"),  # ClassVar, Annotated, Final and Mapped hold what they wrap
        ("note", "str"),
        ("key", "bytes"),
        ("id", "int"),
        ("parent", "User | None"),  # a string annotation, unquoted
        ("kind", ""),  # a bare Final says nothing of the type
        ("nick", "str"),  # ``self.nick: str`` in a method
        ("seen", ""),  # not annotated
        ("full", "str"),  # a method: what calling it returns
        ("home", "Path"),  # a property: what reading it gives
        ("missing", ""),
    ],
)
def test_a_class_before_the_cursor_declares_its_members(name, expected):
    found = declarations(MODELS + "\n\ndef show(user: User) -> str:\n    return user.")
    assert found.type_of("shop.models.User", name) == expected


def test_the_owner_is_the_class_the_analysis_names_even_for_a_method_s_self_attribute():
    found = declarations(MODELS + "\n\ndef show(user: User) -> str:\n    return user.")
    assert found.type_of("shop.models.User.__init__", "nick") == "str"
    assert found.type_of("User", "name") == "str"  # a module's own class, undotted
    assert found.type_of("shop.models.Order", "name") == ""  # not a class of this text
    assert found.type_of("", "name") == ""


def test_the_class_the_cursor_is_in_is_read_though_its_last_line_is_half_written():
    text = (
        "class Cart:\n"
        "    total: float\n"
        "\n"
        "    def count(self) -> int:\n"
        "        return 0\n"
        "\n"
        "    def label(self) -> str:\n"
        "        return self."
    )
    found = declarations(text)
    assert found.type_of("shop.Cart", "total") == "float"
    assert found.type_of("shop.Cart", "count") == "int"


def test_a_nested_class_and_the_first_of_two_declarations():
    text = (
        "class Outer:\n"
        "    class Inner:\n"
        "        size: int\n"
        "        size: str\n"
        "\n"
        "\n"
        "def f(x: Outer.Inner) -> int:\n"
        "    return x."
    )
    assert declarations(text).type_of("m.Outer.Inner", "size") == "int"
    assert declarations(text).type_of("m.Outer", "size") == ""  # not Outer's own


def test_a_class_that_does_not_parse_declares_nothing_and_the_others_still_do():
    text = "class Broken:\n    name: str = (\n\n\nclass Fine:\n    name: bytes\n\n\nx = Fine()\nx."
    found = declarations(text)
    assert found.type_of("m.Broken", "name") == ""
    assert found.type_of("m.Fine", "name") == "bytes"


def test_only_the_classes_asked_for_are_parsed_and_each_once(monkeypatch):
    text = MODELS + "\n\nclass Other:\n    size: int\n\n\ndef f(u: User) -> str:\n    return u."
    parsed = []
    real = declared.ast.parse

    def counting(source, *args, **kwargs):
        parsed.append(source.split("\n", 1)[0])
        return real(source, *args, **kwargs)

    current = current_hole(text)  # read with the expected type, before any lookup
    declared._block.cache_clear()
    monkeypatch.setattr(declared.ast, "parse", counting)
    found = Declarations(text, current)
    assert found.type_of("m.User", "name") == "str"
    assert found.type_of("m.User", "age") == "int"
    assert parsed == ["class User:"]
    Declarations(text, current).type_of("m.User", "name")  # the same class text: parsed already
    assert parsed == ["class User:"]


def test_the_intent_knows_the_declarations_only_where_a_type_is_expected():
    typed = intent_at(MODELS + "\n\ndef show(user: User) -> str:\n    return user.")
    assert typed.expected == "str"
    assert typed.returns("name", "", "shop.models.User") == "str"
    assert typed.returns("full", "int", "shop.models.User") == "int"  # the signature's wins
    assert typed.returns("name", "", "") == ""  # no owner: nothing to look up
    untyped = intent_at(MODELS + "\n\ndef show(user: User):\n    return user.")
    assert untyped.declared is None
    assert untyped.returns("name", "", "shop.models.User") == ""
