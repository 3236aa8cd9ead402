"""The last suggestions per document, and what they still offer as the user types on
(typed-ahead): a keystroke that matches a suggestion is answered without generating."""

from __future__ import annotations

from dataclasses import dataclass

from steerlsp.server.completion.replies import typed_ahead


@dataclass(frozen=True)
class _Suggestion:
    prefix: str
    suffix: str
    texts: tuple[str, ...]  # the first completion ("" for nothing), then alternatives
    asked: int  # how many were asked for: a request wanting more generates again


class Suggestions:
    """The last suggestions made at each document."""

    def __init__(self) -> None:
        self._last: dict[str, _Suggestion] = {}

    def made(self, uri: str, prefix: str, suffix: str, texts: tuple[str, ...], asked: int) -> None:
        """``texts`` were suggested at ``prefix``|``suffix`` of ``uri``, ``asked`` wanted."""
        self._last[uri] = _Suggestion(prefix, suffix, texts, asked)

    def clear(self) -> None:
        """Forget every suggestion (the settings they were made under changed)."""
        self._last.clear()

    def offered(self, uri: str, prefix: str, suffix: str) -> str | None:
        """What the last suggestion of ``uri`` offers at ``prefix``|``suffix``: itself
        when it was made there ("" when it was nothing), the rest of the first one the
        text typed since begins, or None when it offers nothing there."""
        last = self._last.get(uri)
        if last is None:
            return None
        if (last.prefix, last.suffix) == (prefix, suffix):
            return last.texts[0]
        rests = typed_ahead(last.prefix, last.suffix, last.texts, prefix, suffix)
        return rests[0] if rests else None

    def typed_ahead(
        self, uri: str, prefix: str, suffix: str, wanted: int = 1
    ) -> tuple[str, ...] | None:
        """The rest of the last suggestions at this document that the text typed since
        begins (at most ``wanted``, in their order); None when none does, or when more
        were wanted than were asked for then."""
        last = self._last.get(uri)
        if last is None or wanted > last.asked:
            return None
        rests = typed_ahead(last.prefix, last.suffix, last.texts, prefix, suffix)
        return rests[:wanted] or None
