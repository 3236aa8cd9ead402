"""ChatLSP semantics (expectedType, relevantTypes, relevantHeaders) with real Jedi.

A small project of several modules is written to a temporary directory; each case
is a new module of that project as an editor would hold it: half-written at the
cursor, often never saved. The cursor is at ``<|>`` or, without one, at the end.
"""

from __future__ import annotations

import textwrap
from pathlib import Path
from typing import Any

import pytest

from steerlsp.models.semantics.expected import Annotation
from steerlsp.models.semantics.hole import find_hole
from steerlsp.server.chatlsp import ExpectedType, Place
from steerlsp.server.chatlsp.semantics import Semantics
from steerlsp.server.chatlsp.semantics.sources import Sources
from steerlsp.server.chatlsp.semantics.typedefs import MAX_DEFINITIONS
from steerlsp.server.chatlsp.semantics.typedefs import relevant_types as types_from

MODELS = '''\
from __future__ import annotations

from dataclasses import dataclass, field
from enum import Enum
from typing import NamedTuple, Optional, Protocol, TypeAlias, TypedDict

Sku = str
SkuMap: TypeAlias = dict[str, "Item"]


class Color(Enum):
    """Colours an item comes in.

    Not shown: only a docstring's first line is.
    """

    RED = "red"
    BLUE = "blue"


@dataclass
class Item:
    """A stock item."""

    sku: Sku
    qty: int = 0
    color: Optional[Color] = None
    parent: Optional[Item] = None  # an item of its own type
    tags: list[str] = field(default_factory=list)

    def total(self, price: float) -> float:
        return self.qty * price

    @classmethod
    def blank(cls, sku: Sku) -> Item:
        return cls(sku)


class Row(NamedTuple):
    sku: Sku
    qty: int


class ItemDict(TypedDict):
    sku: Sku
    qty: int


class Priced(Protocol):
    def price(self) -> float: ...


class Inventory:
    """Stock by SKU."""

    items: list[Item]

    def __init__(self, name: str) -> None:
        self.name = name
        self.items = []

    def restock(self, item: Item, quantity: int = 1) -> Item:
        item.qty += quantity
        return item

    def find(self, sku: Sku) -> Optional[Item]:
        return None


def make_item(sku: Sku, qty: int = 0) -> Item:
    return Item(sku, qty)


def slugify(text: str) -> str:
    return text.lower()


def normalise(sku: str) -> Sku:
    return sku.upper()
'''

GRAPH = """\
from __future__ import annotations

from dataclasses import dataclass


@dataclass
class Node:
    name: str
    edges: list[Edge]


@dataclass
class Edge:
    source: Node
    target: Node
"""

SHAPES = '''\
from __future__ import annotations

from dataclasses import dataclass

@dataclass
class Outer:
    """Nested classes, async and decorated methods, a header over lines."""

    class Inner:
        value: int

    async def fetch(self, n: int) -> int:
        return n

    @staticmethod
    def build(
        a: int,  # the first
        b: str = "x",
    ) -> Outer:
        return Outer()
'''

USERS = """\
from pydantic import BaseModel, SecretStr


class User(BaseModel):
    name: str
    token: SecretStr
"""

IMPORTS = """\
from __future__ import annotations

from collections.abc import AsyncIterator, Callable, Generator, Iterable, Iterator
from typing import Optional

from shop.models import Inventory, Item, ItemDict, Row, Sku, SkuMap, make_item, slugify
"""


def _line_of(text: str, line: str) -> int:
    """The 0-based number of the line of ``text`` that is ``line``."""
    return text.split("\n").index(line)


def _chain(length: int) -> str:
    """Classes C0 -> C1 -> ... each holding the next: more than any bound allows."""
    parts = ["from __future__ import annotations\n"]
    for index in range(length):
        parts.append(f"\n\nclass C{index}:\n    nxt: C{index + 1}\n    label: str\n")
    parts.append(f"\n\nclass C{length}:\n    label: str\n")
    return "".join(parts)


@pytest.fixture(scope="module")
def project(tmp_path_factory: pytest.TempPathFactory) -> Path:
    root = tmp_path_factory.mktemp("project")
    package = root / "shop"
    package.mkdir()
    (package / "__init__.py").write_text("")
    (package / "models.py").write_text(MODELS)
    (package / "graph.py").write_text(GRAPH)
    (package / "users.py").write_text(USERS)
    (package / "shapes.py").write_text(SHAPES)
    (package / "chain.py").write_text(_chain(15))
    return root


@pytest.fixture(scope="module")
def semantics(project: Path) -> Semantics:
    return Semantics(str(project), None)


def _document(project: Path, text: str, name: str = "editing.py") -> tuple[str, str, int, int]:
    """(source, path, line, column) for ``text`` with the cursor at ``<|>`` or its end."""
    text = textwrap.dedent(text)
    if text.startswith("\n"):
        text = text[1:]
    marker = text.find("<|>")
    if marker < 0:
        marker = len(text)
    source = text.replace("<|>", "")
    before = source[:marker].split("\n")
    return source, str(project / "shop" / name), len(before) - 1, len(before[-1])


def expected(semantics: Semantics, project: Path, text: str) -> ExpectedType | None:
    return semantics.expected_type(*_document(project, text))


def annotation(semantics: Semantics, project: Path, text: str) -> tuple[str, str] | None:
    found = expected(semantics, project, text)
    return (found.annotation, found.origin) if found else None


def type_names(semantics: Semantics, project: Path, text: str) -> list[str]:
    return [d.name for d in semantics.relevant_types(*_document(project, text))]


def header_names(semantics: Semantics, project: Path, text: str) -> list[str]:
    return [h.name for h in semantics.relevant_headers(*_document(project, text))]


# expectedType: return and yield


def test_return_of_an_annotated_function_places_the_annotation(
    semantics: Semantics, project: Path
) -> None:
    source, path, line, column = _document(
        project, IMPORTS + "\n\ndef first(inv: Inventory) -> Optional[Item]:\n    return "
    )
    found = semantics.expected_type(source, path, line, column)
    assert found == ExpectedType("Optional[Item]", "return", Place(path, line - 1, 29))


def test_return_of_an_async_function_is_its_annotation(semantics: Semantics, project: Path) -> None:
    text = IMPORTS + "\n\nasync def fetch(sku: Sku) -> Item:\n    await other()\n    return "
    assert annotation(semantics, project, text) == ("Item", "return")


def test_a_quoted_forward_reference_is_the_type_it_names(
    semantics: Semantics, project: Path
) -> None:
    text = IMPORTS + '\n\ndef fetch(sku: Sku) -> "Item":\n    return '
    assert annotation(semantics, project, text) == ("Item", "return")


def test_return_in_a_generator_is_the_generators_return_type(
    semantics: Semantics, project: Path
) -> None:
    text = IMPORTS + (
        "\n\ndef counted() -> Generator[Item, None, int]:\n    yield make_item('a')\n    return "
    )
    assert annotation(semantics, project, text) == ("int", "return")
    # An Iterator-annotated generator returns nothing that has a type to know.
    text = IMPORTS + "\n\ndef items() -> Iterator[Item]:\n    yield make_item('a')\n    return "
    assert annotation(semantics, project, text) is None


@pytest.mark.parametrize(
    ("header", "wanted"),
    [
        ("def items() -> Iterator[Item]:", "Item"),
        ("def items() -> Iterable[Optional[Item]]:", "Optional[Item]"),
        ("def items() -> Generator[Item, None, None]:", "Item"),
        ("async def items() -> AsyncIterator[Item]:", "Item"),
        ("async def items() -> typing.AsyncGenerator[Sku, None]:", "Sku"),
    ],
)
def test_yield_is_the_yield_type(
    semantics: Semantics, project: Path, header: str, wanted: str
) -> None:
    text = IMPORTS + f"\n\n{header}\n    for sku in 'ab':\n        yield "
    assert annotation(semantics, project, text) == (wanted, "yield")


def test_yield_places_the_type_argument_where_it_is_written(
    semantics: Semantics, project: Path
) -> None:
    source, path, line, column = _document(project, "def items() -> Iterator[Item]:\n    yield ")
    found = semantics.expected_type(source, path, line, column)
    assert found is not None and found.place == Place(path, 0, 24)


# expectedType: assignments and attributes


def test_annotated_assignment(semantics: Semantics, project: Path) -> None:
    text = IMPORTS + "\n\ndef load() -> None:\n    stock: dict[str,   Item] = "
    assert annotation(semantics, project, text) == ("dict[str, Item]", "assignment")


def test_multi_line_annotation_is_flattened(semantics: Semantics, project: Path) -> None:
    text = IMPORTS + "\n\nstock: dict[\n    str,  # the SKU\n    Item,\n] = "
    assert annotation(semantics, project, text) == ("dict[str, Item,]", "assignment")


def test_plain_assignment_to_a_declared_name(semantics: Semantics, project: Path) -> None:
    text = IMPORTS + "\n\ndef load(best: Item) -> None:\n    found: Sku\n    found = "
    assert annotation(semantics, project, text) == ("Sku", "assignment")
    text = IMPORTS + "\n\ndef load(best: Item) -> None:\n    best = "
    assert annotation(semantics, project, text) == ("Item", "assignment")


def test_self_attribute_declared_in_the_class_body(semantics: Semantics, project: Path) -> None:
    text = IMPORTS + (
        "\n\nclass Shelf:\n"
        "    items: list[Item]\n"
        "\n"
        "    def __init__(self) -> None:\n"
        "        self.items = "
    )
    source, path, line, column = _document(project, text)
    found = semantics.expected_type(source, path, line, column)
    assert found == ExpectedType("list[Item]", "attribute", Place(path, line - 3, 11))


def test_self_attribute_annotated_in_another_method(semantics: Semantics, project: Path) -> None:
    text = IMPORTS + (
        "\n\nclass Shelf:\n"
        "    def __init__(self) -> None:\n"
        "        self.best: Optional[Item] = None\n"
        "\n"
        "    def clear(self) -> None:\n"
        "        self.best = "
    )
    assert annotation(semantics, project, text) == ("Optional[Item]", "attribute")


def test_attribute_of_an_object_jedi_infers(semantics: Semantics, project: Path) -> None:
    text = IMPORTS + "\n\ndef reset(inv: Inventory) -> None:\n    inv.items = "
    found = expected(semantics, project, text)
    models = str(project / "shop" / "models.py")
    declared = _line_of(MODELS, "    items: list[Item]")
    assert found == ExpectedType("list[Item]", "attribute", Place(models, declared, 11))


def test_attribute_declared_in_a_base_class(semantics: Semantics, project: Path) -> None:
    text = IMPORTS + (
        "\n\nclass Special(Inventory):\n    def reset(self) -> None:\n        self.items = "
    )
    found = expected(semantics, project, text)
    assert found is not None and (found.annotation, found.origin) == ("list[Item]", "attribute")
    assert found.place is not None and found.place.path.endswith("models.py")


def test_attribute_of_a_dataclass_field(semantics: Semantics, project: Path) -> None:
    text = IMPORTS + "\n\ndef paint(item: Item) -> None:\n    item.color = "
    assert annotation(semantics, project, text) == ("Optional[Color]", "attribute")


# expectedType: arguments and defaults


@pytest.mark.parametrize(
    ("call", "wanted"),
    [
        ("make_item(", "Sku"),
        ("make_item('a', ", "int"),
        ("make_item('a', qty=", "int"),
        ("make_item(sku=slugify('A'), qty=", "int"),
        ("inv.restock(", "Item"),  # a method: self is not an argument
        ("inv.restock(make_item('a'), quantity=", "int"),
        ("Inventory(", "str"),  # a constructor: __init__ without self
        ("Item('a', 3, ", "Optional[Color]"),  # a dataclass: its fields
        ("Item(sku='a', parent=", "Optional[Item]"),
        ("Row('a', ", "int"),  # a NamedTuple, by position
        ("Row(sku=", "Sku"),  # and by keyword
        ("ItemDict(sku='a', qty=", "int"),
        ("inv.restock(make_item(", "Sku"),  # the innermost call
    ],
)
def test_argument_is_the_parameters_annotation(
    semantics: Semantics, project: Path, call: str, wanted: str
) -> None:
    text = IMPORTS + f"\n\ndef use(inv: Inventory) -> None:\n    {call}"
    assert annotation(semantics, project, text) == (wanted, "argument")


def test_argument_places_the_parameter_in_its_module(semantics: Semantics, project: Path) -> None:
    text = IMPORTS + "\n\ndef use(inv: Inventory) -> None:\n    inv.restock(item, quantity="
    found = expected(semantics, project, text)
    models = str(project / "shop" / "models.py")
    restock = _line_of(MODELS, "    def restock(self, item: Item, quantity: int = 1) -> Item:")
    assert found == ExpectedType("int", "argument", Place(models, restock, 44))


def test_argument_of_a_pydantic_model(semantics: Semantics, project: Path) -> None:
    text = "from shop.users import User\n\nUser(name='x', token="
    assert annotation(semantics, project, text) == ("SecretStr", "argument")


def test_argument_inside_a_call_closed_on_a_later_line(semantics: Semantics, project: Path) -> None:
    text = IMPORTS + "\n\ndef use(inv: Inventory) -> None:\n    inv.restock(\n        <|>\n    )\n"
    assert annotation(semantics, project, text) == ("Item", "argument")


def test_argument_after_star_args_is_unknown(semantics: Semantics, project: Path) -> None:
    text = IMPORTS + "\n\ndef use(args: list[str]) -> None:\n    make_item(*args, "
    assert annotation(semantics, project, text) is None


def test_default_of_an_annotated_parameter(semantics: Semantics, project: Path) -> None:
    text = IMPORTS + "\n\ndef lookup(inv: Inventory, sku: Sku = "
    assert annotation(semantics, project, text) == ("Sku", "default")
    text = IMPORTS + "\n\ndef lookup(inv: Inventory, *, fallback: Optional[Item] = "
    assert annotation(semantics, project, text) == ("Optional[Item]", "default")


# expectedType: elements of typed containers


@pytest.mark.parametrize(
    ("line", "wanted"),
    [
        ("xs: list[Item] = [make_item('a'), ", "Item"),
        ("xs: list[Item] = [", "Item"),
        ("xs: Optional[list[Item]] = [", "Item"),
        ("skus: set[Sku] = {'a', ", "Sku"),
        ("pair: tuple[int, Item] = (1, ", "Item"),
        ("pair: tuple[int, Item] = 1, ", "Item"),
        ("many: tuple[Item, ...] = (make_item('a'), ", "Item"),
        ("stock: dict[Sku, Item] = {", "Sku"),
        ("stock: dict[Sku, Item] = {'a': ", "Item"),
        ("stock: dict[Sku, Item] = {'a': make_item('a'), ", "Sku"),
        ("nested: dict[str, list[Item]] = {'a': [", "Item"),
        ("by_sku: SkuMap = {'a': ", "Item"),  # through the alias
        ("xs: list[Item] = [<|> for s in 'ab']", "Item"),  # a comprehension
    ],
)
def test_container_elements(semantics: Semantics, project: Path, line: str, wanted: str) -> None:
    assert annotation(semantics, project, IMPORTS + "\n\n" + line) == (wanted, "element")


def test_element_of_a_returned_tuple(semantics: Semantics, project: Path) -> None:
    text = IMPORTS + "\n\ndef split() -> tuple[Sku, Item]:\n    return 'a', "
    assert annotation(semantics, project, text) == ("Item", "element")


# expectedType: nothing known


@pytest.mark.parametrize(
    "text",
    [
        "x = ",  # no annotation anywhere
        "def f():\n    return ",  # no return annotation
        "def f() -> int:\n    print('a', end=1)\n    x = 1 + ",  # an operand
        "xs: list[int] = [1] + [",  # an operand, though its type is plain to see
        "def f() -> int:\n    return 'abc<|>'",  # inside a string
        "def f() -> int:\n    return 1  # a comment <|>",  # inside a comment
        "def f() -> int:\n    return f'{<|>",  # inside an f-string
        "def f() -> int:\n    x = [1, 2]\n    x.append(",  # list.append(object: _T): a TypeVar
        "",
    ],
)
def test_nothing_known_is_none(semantics: Semantics, project: Path, text: str) -> None:
    assert expected(semantics, project, text) is None


def test_odd_positions_are_none_not_errors(semantics: Semantics, project: Path) -> None:
    source, path, _, _ = _document(project, "def f() -> int:\n    return ")
    assert semantics.expected_type(source, path, 99, 0) is None
    assert semantics.expected_type(source, path, -1, 0) is None
    assert semantics.relevant_types(source, path, 99, 0) == []
    assert semantics.relevant_headers(source, path, 1, -5) == []
    assert semantics.expected_type("\x00\ufeff(((", path, 0, 4) is None


def test_an_earlier_broken_line_does_not_hide_the_hole(semantics: Semantics, project: Path) -> None:
    text = IMPORTS + "\n\nbroken = (]\n\ndef f() -> Item:\n    return "
    assert annotation(semantics, project, text) == ("Item", "return")


def test_the_word_being_typed_is_part_of_the_hole(semantics: Semantics, project: Path) -> None:
    text = IMPORTS + "\n\ndef f() -> Item:\n    return make_it"
    assert annotation(semantics, project, text) == ("Item", "return")
    text = IMPORTS + "\n\ndef f(inv: Inventory) -> list[Item]:\n    return inv.ite"
    assert annotation(semantics, project, text) == ("list[Item]", "return")


# relevantTypes

ITEM_CODE = '''\
@dataclass
class Item:
    """A stock item."""
    sku: Sku
    qty: int = 0
    color: Optional[Color] = None
    parent: Optional[Item] = None  # an item of its own type
    tags: list[str] = field(default_factory=list)
    def total(self, price: float) -> float: ...
    @classmethod
    def blank(cls, sku: Sku) -> Item: ...'''

COLOR_CODE = '''\
class Color(Enum):
    """Colours an item comes in."""
    RED = "red"
    BLUE = "blue"'''


def test_types_reachable_from_the_expected_type(semantics: Semantics, project: Path) -> None:
    source, path, line, column = _document(
        project, IMPORTS + "\n\ndef first() -> Optional[Item]:\n    return "
    )
    found = semantics.relevant_types(source, path, line, column)
    assert [d.name for d in found] == ["Item", "Sku", "Color"]  # a self-reference ends
    assert found[0].code == ITEM_CODE
    assert found[1].code == "Sku = str"
    assert found[2].code == COLOR_CODE
    models = str(project / "shop" / "models.py")
    assert found[0].place == Place(models, _line_of(MODELS, "class Item:"), 6)


def test_type_aliases_are_printed_and_followed(semantics: Semantics, project: Path) -> None:
    source, path, line, column = _document(project, IMPORTS + "\n\nby_sku: SkuMap = ")
    found = semantics.relevant_types(source, path, line, column)
    assert [d.name for d in found] == ["SkuMap", "Item", "Sku", "Color"]
    assert found[0].code == 'SkuMap: TypeAlias = dict[str, "Item"]'


def test_every_name_of_the_annotation_comes_first(semantics: Semantics, project: Path) -> None:
    text = IMPORTS + "\nfrom shop.graph import Edge\n\nx: dict[Sku, tuple[Edge, Row]] = "
    assert type_names(semantics, project, text) == ["Sku", "Edge", "Row", "Node"]


def test_mutually_recursive_types_terminate(semantics: Semantics, project: Path) -> None:
    text = "from shop.graph import Node\n\ndef root() -> Node:\n    return "
    source, path, line, column = _document(project, text)
    found = semantics.relevant_types(source, path, line, column)
    assert [d.name for d in found] == ["Node", "Edge"]
    assert found[1].code == "@dataclass\nclass Edge:\n    source: Node\n    target: Node"


def test_typeddict_namedtuple_and_protocol_print_as_classes(
    semantics: Semantics, project: Path
) -> None:
    text = "from shop.models import ItemDict, Priced, Row\n\nx: tuple[ItemDict, Row, Priced] = "
    found = semantics.relevant_types(*_document(project, text))
    assert [d.code for d in found][:3] == [
        "class ItemDict(TypedDict):\n    sku: Sku\n    qty: int",
        "class Row(NamedTuple):\n    sku: Sku\n    qty: int",
        "class Priced(Protocol):\n    def price(self) -> float: ...",
    ]


def test_a_library_type_is_printed_but_not_followed(semantics: Semantics, project: Path) -> None:
    text = "from shop.users import User\n\ndef me() -> User:\n    return "
    found = semantics.relevant_types(*_document(project, text))
    assert [d.name for d in found] == ["User", "SecretStr"]  # not BaseModel, a library base
    assert found[0].code == "class User(BaseModel):\n    name: str\n    token: SecretStr"
    assert found[1].code.startswith("class SecretStr(")
    assert "site-packages" in found[1].place.path if found[1].place else False


def test_nested_classes_async_and_decorated_methods_print(
    semantics: Semantics, project: Path
) -> None:
    text = "from shop.shapes import Outer\n\nx: Outer = "
    found = semantics.relevant_types(*_document(project, text))
    assert [d.code for d in found] == [
        "@dataclass\n"
        "class Outer:\n"
        '    """Nested classes, async and decorated methods, a header over lines."""\n'
        "    class Inner:\n"
        "        value: int\n"
        "    async def fetch(self, n: int) -> int: ...\n"
        "    @staticmethod\n"
        '    def build(a: int, b: str = "x") -> Outer: ...'
    ]


def test_type_statement_is_printed(semantics: Semantics, project: Path) -> None:
    text = IMPORTS + "\n\ntype Pair = tuple[Item, Item]\n\npair: Pair = "
    found = semantics.relevant_types(*_document(project, text))
    assert [d.name for d in found] == ["Pair", "Item", "Sku", "Color"]
    assert found[0].code == "type Pair = tuple[Item, Item]"


def test_builtin_and_standard_library_types_are_not_printed(
    semantics: Semantics, project: Path
) -> None:
    text = "from pathlib import Path\n\nx: dict[str, list[Path]] = "
    assert annotation(semantics, project, text) == ("dict[str, list[Path]]", "assignment")
    assert type_names(semantics, project, text) == []


def test_types_are_bounded_in_count(semantics: Semantics, project: Path) -> None:
    text = "from shop.chain import C0\n\nfirst: C0 = "
    names = type_names(semantics, project, text)
    assert names == [f"C{i}" for i in range(MAX_DEFINITIONS)]


def test_types_are_bounded_in_size(project: Path) -> None:
    sources = Sources(str(project), None)
    text = "from shop.chain import C0\n\nfirst: C0 = "
    path = str(project / "shop" / "editing.py")
    sources.open(path, text)
    start = Annotation("C0", "C0", path, 2, 7)
    found = types_from(start, sources, limit=20, size=110)
    assert [d.name for d in found] == ["C0", "C1", "C2"]
    assert sum(len(d.code) for d in found) <= 110
    assert found[0].code == "class C0:\n    nxt: C1\n    label: str"


def test_no_expected_type_means_no_types(semantics: Semantics, project: Path) -> None:
    assert type_names(semantics, project, IMPORTS + "\n\nx = ") == []


# relevantHeaders

STORE = (
    IMPORTS
    + """
import shop.models as models


def build(n: int) -> Item:
    return Item(str(n))


def label(item: Item) -> str:
    return item.sku


class Store:
    inv: Inventory

    def best(self) -> Optional[Item]:
        return None

    @property
    def first(self) -> Item:
        return self.inv.items[0]

    def get(self, sku: str) -> Item:
        def fallback() -> Item: ...

        return <|>

    def __copy__(self) -> Item: ...
"""
)


def test_headers_closest_first(semantics: Semantics, project: Path) -> None:
    source, path, line, column = _document(project, STORE)
    found = semantics.relevant_headers(source, path, line, column)
    assert [h.name for h in found] == [
        "Store.get",  # the enclosing class's methods, by distance (recursion is a call)
        "Store.first",
        "Store.best",
        "fallback",  # defined in the enclosing function
        "build",  # this module
        "Item",  # imports
        "Item.blank",
        "make_item",
    ]
    codes = {h.name: h.code for h in found}
    assert codes["Store.first"] == "@property\ndef Store.first(self) -> Item: ..."
    assert codes["Item"] == (
        "def Item(sku: Sku, qty: int = 0, color: Optional[Color] = None, "
        "parent: Optional[Item] = None, tags: list[str] = ...) -> Item: ..."
    )
    assert codes["Item.blank"] == "@classmethod\ndef Item.blank(cls, sku: Sku) -> Item: ..."
    assert codes["make_item"] == "def make_item(sku: Sku, qty: int = 0) -> Item: ..."
    assert found[4].place == Place(path, _line_of(source, "def build(n: int) -> Item:"), 0)


def test_a_module_import_gives_its_functions(semantics: Semantics, project: Path) -> None:
    text = "import shop.models as models\n\ndef f() -> models.Item:\n    return "
    names = header_names(semantics, project, text)
    assert names == ["f", "models.Item", "models.Item.blank", "models.make_item"]


def test_one_level_deeper_and_containers(semantics: Semantics, project: Path) -> None:
    text = IMPORTS + "\n\ndef all_items(inv: Inventory) -> list[Item]:\n    return "
    names = header_names(semantics, project, text)
    assert names == ["all_items", "Item", "Item.blank", "make_item"]


def test_optional_tuple_and_callable_targets(semantics: Semantics, project: Path) -> None:
    text = IMPORTS + "\n\nmaker: Callable[[str], Item] = "
    assert header_names(semantics, project, text) == ["Item", "Item.blank", "make_item"]
    text = IMPORTS + "\n\npair: tuple[Row, Optional[Item]] = "
    assert header_names(semantics, project, text) == ["Item", "Item.blank", "Row", "make_item"]


def test_plain_scalars_are_not_targets_but_their_aliases_are(
    semantics: Semantics, project: Path
) -> None:
    assert header_names(semantics, project, IMPORTS + "\n\nname: str = ") == []
    text = "from shop.models import Sku, normalise, slugify\n\nsku: Sku = "
    assert header_names(semantics, project, text) == ["normalise"]


def test_an_alias_target_is_expanded(semantics: Semantics, project: Path) -> None:
    text = IMPORTS + "\n\nby_sku: SkuMap = "
    assert header_names(semantics, project, text) == ["Item", "Item.blank", "make_item"]


def test_standard_library_imports_are_not_candidates(semantics: Semantics, project: Path) -> None:
    text = (
        "from pathlib import Path\nfrom datetime import datetime\n\nwhen: tuple[Path, datetime] = "
    )
    assert header_names(semantics, project, text) == []


def test_enum_and_protocol_classes_are_not_constructors(
    semantics: Semantics, project: Path
) -> None:
    text = "from shop.models import Color, Priced\n\nx: tuple[Color, Priced] = "
    assert header_names(semantics, project, text) == []


def test_headers_are_bounded(semantics: Semantics, project: Path) -> None:
    many = "".join(f"\n\ndef make_{i}() -> Item: ..." for i in range(14))
    text = IMPORTS + many + "\n\nx: Item = "
    names = header_names(semantics, project, text)
    assert len(names) == 10
    assert names[0] == "make_13"  # the closest to the cursor


def test_no_expected_type_means_no_headers(semantics: Semantics, project: Path) -> None:
    assert header_names(semantics, project, IMPORTS + "\n\nx = ") == []


# the hole and the environment


def test_hole_repairs_unclosed_brackets_and_keeps_lines() -> None:
    hole = find_hole("a = 1\nitems = [f(x, {'k': ", 1, 20)
    assert hole is not None
    assert hole.text.split("\n")[:2] == ["a = 1", "items = [f(x, {'k': __steerlsp_hole__})]"]


@pytest.mark.parametrize(
    ("source", "column"),
    [
        ("x = f('abc", 9),  # an open string
        ('x = """abc\n', 8),  # an open triple-quoted string
        ("x = 1  # note", 13),  # a comment
        ("x = f'{a", 8),  # an f-string's field
    ],
)
def test_no_hole_in_strings_or_comments(source: str, column: int) -> None:
    assert find_hole(source, 0, column) is None


def test_a_chosen_environment_is_inspected_in_a_subprocess(project: Path) -> None:
    import sys

    text = "from shop.users import User\n\nUser(name='x', token="
    chosen = Semantics(str(project), sys.prefix)
    found = chosen.expected_type(*_document(project, text))
    assert found is not None and found.annotation == "SecretStr"
    # One that is not a Python is steerlsp's own, not an error.
    missing = Semantics(str(project), str(project / "no-such-venv"))
    found = missing.expected_type(*_document(project, text))
    assert found is not None and found.annotation == "SecretStr"


def test_semantics_answers_from_another_thread(semantics: Semantics, project: Path) -> None:
    import threading

    results: list[Any] = []
    text = IMPORTS + "\n\ndef f() -> Item:\n    return "

    def ask() -> None:
        results.append(expected(semantics, project, text))

    threads = [threading.Thread(target=ask) for _ in range(3)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    assert [r.annotation if r else None for r in results] == ["Item"] * 3
