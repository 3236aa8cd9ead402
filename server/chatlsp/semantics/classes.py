"""What a class's parso tree says about building it: its bases, decorators, members
and, for dataclass-like classes, the fields that are its constructor's parameters."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from steerlsp.models.semantics.typetext import flat
from steerlsp.server.chatlsp.semantics.printing import decorators

# Classes built from their annotated fields (``Item(sku=..., qty=...)``).
FIELD_DECORATORS = frozenset({"dataclass", "define", "frozen", "mutable", "attrs", "s"})
FIELD_BASES = frozenset({"NamedTuple", "TypedDict", "BaseModel", "BaseSettings", "SQLModel"})
NOT_CONSTRUCTED = frozenset({"Enum", "IntEnum", "StrEnum", "Flag", "IntFlag", "Protocol"})


@dataclass(frozen=True)
class Field:
    """An annotated field of a class body: ``name: annotation = default``."""

    name: str
    annotation: Any  # the parso node
    default: Any | None  # the parso node, None without one


def base_names(classdef: Any) -> set[str]:
    """The last name of each base (``BaseModel`` of ``pydantic.BaseModel``, ``Generic``
    of ``Generic[T]``), keywords (``metaclass=``) left out."""
    values = [getattr(c, "value", None) for c in classdef.children]
    if "(" not in values:
        return set()
    bases = classdef.children[values.index("(") + 1]
    items = bases.children if bases.type == "arglist" else [bases]
    found = set()
    for item in items:
        if item.type in ("operator", "argument"):
            continue
        text = flat(item.get_code(include_prefix=False)).split("[")[0]
        found.add(text.rsplit(".", 1)[-1])
    return found


def decorator_names(node: Any) -> set[str]:
    """``dataclass`` for ``@dataclasses.dataclass(frozen=True)``, and so on."""
    return {d.lstrip("@").split("(")[0].rsplit(".", 1)[-1] for d in decorators(node)}


def built_from_fields(classdef: Any) -> bool:
    """A dataclass, attrs class, NamedTuple, TypedDict or pydantic model."""
    return bool(decorator_names(classdef) & FIELD_DECORATORS or base_names(classdef) & FIELD_BASES)


def fields(classdef: Any) -> list[Field]:
    """The annotated fields of a class body, in order; ClassVars are not fields."""
    found: list[Field] = []
    for child in getattr(classdef.children[-1], "children", []):
        if child.type != "simple_stmt":
            continue
        for statement in child.children:
            if statement.type != "expr_stmt" or statement.children[1].type != "annassign":
                continue
            declared = statement.children[1].children
            kind = flat(declared[1].get_code(include_prefix=False)).split("[")[0]
            if kind.rsplit(".", 1)[-1] in ("ClassVar", "KW_ONLY"):
                continue
            name = statement.children[0].get_code(include_prefix=False).strip()
            default = declared[3] if len(declared) > 3 else None
            found.append(Field(name, declared[1], default))
    return found


def members(scope: Any) -> list[Any]:
    """The functions and classes defined directly in a module, class or function body
    (decorated and ``async`` ones unwrapped)."""
    body = scope if scope.type == "file_input" else scope.children[-1]
    found = []
    for child in getattr(body, "children", []):
        while child.type in ("decorated", "async_stmt", "async_funcdef"):
            child = child.children[-1]
        if child.type in ("funcdef", "classdef"):
            found.append(child)
    return found
