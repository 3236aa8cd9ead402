"""What the document's own classes declare their members to be, read statically.

The analysis gives a method's return type (its signature heads its
documentation) but nothing for an attribute: Jedi documents ``name: str`` with
an empty docstring. So the expected-type bonus went to a method returning
``str`` and never to the field ``name: str`` beside it. For the classes the
document itself defines, the declarations say it: a class body's annotated
names (``name: str``, ``total: Decimal = Field(...)``), its plain constants
(``limit = 10``), a method's ``self.x: T = ...``, and each ``def``'s return
annotation (a property's type, a method's result).

Pure: classes are parsed from the text before the cursor; the definition the
cursor is in comes repaired and parsed (``semantics/hole.py``) by whoever read
the expected type there. Nothing is imported or run.
"""

from __future__ import annotations

import ast
import functools
import itertools
import re
from collections.abc import Mapping

from steerlsp.models.semantics.hole import Hole

# How far back the document's classes are read, in characters.
MAX_TEXT = 64_000
# A line at the margin that starts a definition, or ends the one before (code there).
_MARGIN = re.compile(r"^(?:@|def |async def |class |[^\s#@])", re.MULTILINE)
_CLASS = re.compile(r"class[ \t]+([A-Za-z_]\w*)")
# The annotations that wrap the type a member holds.
_WRAPPERS = frozenset({"ClassVar", "Final", "InitVar", "Annotated", "Mapped"})
_LITERALS: dict[type, str] = {
    bool: "bool",
    int: "int",
    float: "float",
    complex: "complex",
    str: "str",
    bytes: "bytes",
}
_DISPLAYS: dict[type, str] = {
    ast.List: "list",
    ast.Dict: "dict",
    ast.Set: "set",
    ast.Tuple: "tuple",
}

Declared = Mapping[str, Mapping[str, str]]  # class name -> {member: its type, as written}


class Declarations:
    """The members' types of the classes a text defines (the text before a cursor,
    whose last statement may be half written), read when first asked for: a class
    at the margin is parsed alone (from its ``class`` line to the next line at the
    margin), once per its text, so a ranking parses only the classes its items
    name; the definition the cursor is in (``current``) is read for a class not
    found so (``self.`` in a method). A name declared twice keeps its first
    declaration."""

    def __init__(self, text: str, current: Hole | None = None) -> None:
        """``current``: the definition the cursor is in, repaired and parsed (as the
        expected type's reading already did; ``ranking/expected.py``)."""
        self.text = text[-MAX_TEXT:]
        self._classes: dict[str, list[tuple[int, int]]] | None = None
        self._hole = current
        self._current: dict[str, dict[str, str]] | None = None
        self._parsed: dict[tuple[int, int], Declared] = {}  # a class's span -> its reading

    def type_of(self, owner: str, name: str) -> str:
        """The type declared for ``name`` as a member of ``owner`` (the analysis's
        dotted name of where it is defined: ``shop.models.User``, or
        ``shop.models.User.__init__`` for a ``self.name`` set there); "" when unknown."""
        parts = owner.split(".")
        classes = [part for part in (parts[1:] if len(parts) > 1 else parts) if part]
        # A nested class (``Outer.Inner``) is in its outer class's text at the margin.
        spans = [span for part in classes for span in self._margin_classes().get(part, ())]
        for cls in reversed(classes):  # the innermost first
            members = self._declared(cls, spans)
            if name in members:
                return members[name]
        return ""

    def members_of(self, cls: str) -> Mapping[str, str]:
        """Every member's declared type of the class ``cls`` (its simple name); {} for a
        class this text does not define."""
        return self._declared(cls, self._margin_classes().get(cls, []))

    def _declared(self, cls: str, spans: list[tuple[int, int]]) -> Mapping[str, str]:
        for span in spans:
            if span not in self._parsed:
                self._parsed[span] = _block(self.text[span[0] : span[1]])
            members = self._parsed[span].get(cls)
            if members:
                return members
        return self._in_current().get(cls, {})

    def _margin_classes(self) -> dict[str, list[tuple[int, int]]]:
        if self._classes is None:
            self._classes = {}
            ends = [m.start() for m in _MARGIN.finditer(self.text)]
            for start, end in itertools.pairwise(ends):
                found = _CLASS.match(self.text, start)
                if found:
                    self._classes.setdefault(found.group(1), []).append((start, end))
        return self._classes

    def _in_current(self) -> dict[str, dict[str, str]]:
        if self._current is None:
            self._current = {}
            if self._hole is not None:
                _collect(self._hole.tree, self._current)
        return self._current


@functools.lru_cache(maxsize=256)
def _block(source: str) -> Declared:
    try:
        tree = ast.parse(source)
    except (SyntaxError, ValueError, RecursionError, MemoryError):
        return {}
    found: dict[str, dict[str, str]] = {}
    _collect(tree, found)
    return found


def _collect(tree: ast.AST, found: dict[str, dict[str, str]]) -> None:
    for node in ast.walk(tree):
        if isinstance(node, ast.ClassDef):
            members = _members(node)
            if members:
                found.setdefault(node.name, members)


def _members(cls: ast.ClassDef) -> dict[str, str]:
    members: dict[str, str] = {}
    for statement in cls.body:
        if isinstance(statement, ast.AnnAssign) and isinstance(statement.target, ast.Name):
            _keep(members, statement.target.id, _held(statement.annotation))
        elif isinstance(statement, ast.Assign) and len(statement.targets) == 1:
            target = statement.targets[0]
            if isinstance(target, ast.Name):
                _keep(members, target.id, _literal(statement.value))
        elif (
            isinstance(statement, ast.FunctionDef | ast.AsyncFunctionDef)
            and statement.returns is not None
        ):
            _keep(members, statement.name, _unparsed(statement.returns))
    for statement in cls.body:
        if isinstance(statement, ast.FunctionDef | ast.AsyncFunctionDef):
            for name, annotation in _set_on_self(statement):
                _keep(members, name, annotation)
    return members


def _set_on_self(function: ast.FunctionDef | ast.AsyncFunctionDef) -> list[tuple[str, str]]:
    """``self.x: T = ...`` anywhere in a method's body, for its first parameter."""
    arguments = [*function.args.posonlyargs, *function.args.args]
    if not arguments:
        return []
    receiver = arguments[0].arg
    found = []
    for node in ast.walk(function):
        if (
            isinstance(node, ast.AnnAssign)
            and isinstance(node.target, ast.Attribute)
            and isinstance(node.target.value, ast.Name)
            and node.target.value.id == receiver
        ):
            found.append((node.target.attr, _held(node.annotation)))
    return found


def _held(annotation: ast.expr) -> str:
    """The type an annotation says the member holds: ``ClassVar[int]``, ``Final[int]``,
    ``Annotated[int, ...]`` and SQLAlchemy's ``Mapped[int]`` hold an ``int``."""
    node = annotation
    while isinstance(node, ast.Subscript):
        head = node.value
        name = head.attr if isinstance(head, ast.Attribute) else getattr(head, "id", "")
        if name not in _WRAPPERS:
            break
        inner = node.slice
        node = inner.elts[0] if isinstance(inner, ast.Tuple) and inner.elts else inner
    if isinstance(node, ast.Name) and node.id in _WRAPPERS:
        return ""  # a bare ``Final``: the type is the value's
    return _unparsed(node)


def _literal(value: ast.expr) -> str:
    if isinstance(value, ast.Constant) and value.value is not None:
        return _LITERALS.get(type(value.value), "")
    return _DISPLAYS.get(type(value), "")


def _unparsed(node: ast.expr) -> str:
    if isinstance(node, ast.Constant) and isinstance(node.value, str):
        return node.value.strip()  # a string annotation: ``-> "User"``
    try:
        return ast.unparse(node)
    except (ValueError, RecursionError):
        return ""


def _keep(members: dict[str, str], name: str, annotation: str) -> None:
    if annotation and name not in members:
        members[name] = annotation
