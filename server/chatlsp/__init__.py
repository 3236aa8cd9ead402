"""ChatLSP for Python: the static context an AI client (or steerlsp itself) asks for.

The methods follow the ChatLSP proposal ("Statically Contextualizing LLMs with
Typed Holes", Hazel, OOPSLA 2024): what type the hole at the cursor must have,
the definitions of the types around it, the headers of the functions that can
produce it, the project's facts and style, and the static errors a candidate
completion would introduce.

Positions in this package are 0-based lines and code-point columns (Python
``str`` indices), never UTF-16: the LSP handlers convert at the boundary.
Nothing here imports or runs workspace code: Jedi, parso and ``ast`` read it.
"""

from __future__ import annotations

from dataclasses import dataclass


@dataclass(frozen=True)
class Place:
    """Where something is written: a file and a 0-based line (and column)."""

    path: str
    line: int
    column: int = 0


@dataclass(frozen=True)
class ExpectedType:
    """The type the expression at the cursor must have."""

    annotation: str  # as Python writes it, e.g. "list[Item]"; never empty
    origin: str  # "return", "yield", "assignment", "attribute", "argument", "default", "element"
    place: Place | None = None  # where that annotation is written


@dataclass(frozen=True)
class TypeDefinition:
    """A type definition, printed as Python with method headers and no bodies."""

    name: str  # the type's name, e.g. "Item"
    code: str
    place: Place | None = None


@dataclass(frozen=True)
class Header:
    """A function, method or constructor that can produce a wanted type."""

    name: str  # "make_item", "Inventory.restock"; a constructor is the class name
    code: str  # "def make_item(sku: str, qty: int) -> Item: ..."
    place: Place | None = None


@dataclass(frozen=True)
class Problem:
    """One static error on a completion's lines."""

    line: int  # 0-based, in the checked text
    column: int
    end_line: int
    end_column: int
    code: str  # "syntax-error", "E0602", ...
    message: str
    source: str  # "python", "pyflakes", "pylint"
