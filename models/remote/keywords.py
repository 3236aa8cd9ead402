"""Arguments written through the API, audited after each segment.

In-process, the keyword stage (``models/steering/stages/keywords.py``) checks a
keyword at the token after its ``=`` and rewinds the cache. Through the API the
text is cheap to cut: after each segment the keywords it wrote (``name=`` at an
argument's start, in code, inside a call) are found with the monitor, the
callee's signature is asked, and the first keyword the callee does not take (it
has no ``**kwargs``), or one given twice, is written again as one it takes: the
model's choice under the server's constraint among those still to give (required
ones first where there is no constraint). So are the calls the segment closes: an
argument passed by position past what the callee takes so (pylint's E1121) is
written again as a keyword, and a ``)`` that leaves a required parameter out
(E1120) as that keyword. The segment's text after the rewrite is dropped, and the
next segment continues from the new ``name=``.
"""

from __future__ import annotations

import re
from dataclasses import dataclass

from steerlsp.models.steering.monitor import CallContext, MonitorState

# What an argument reads when it is a keyword: its name and the ``=``.
_KEYWORD = re.compile(r"\s*([A-Za-z_]\w*)\s*=\Z")


@dataclass(frozen=True)
class Keyword:
    """A keyword argument written: ``name=`` at [start, end) of the monitor's text."""

    name: str
    start: int  # where the name starts
    end: int  # just after its ``=``
    call: CallContext


@dataclass(frozen=True)
class Closed:
    """A call closed by the ``)`` at ``close`` (an offset into the monitor's text)."""

    call: CallContext
    close: int


def keywords_written(mark: MonitorState, fed: str, text: str) -> list[Keyword]:
    """The keyword arguments in ``text``, lexed from ``mark`` (a monitor state that has
    been fed ``fed``, so that offsets are into ``fed + text``)."""
    return [k for k in arguments_written(mark, fed, text) if isinstance(k, Keyword)]


def arguments_written(mark: MonitorState, fed: str, text: str) -> list[Keyword | Closed]:
    """The keyword arguments written in ``text`` and the calls it closes, in order (see
    :func:`keywords_written`)."""
    state = mark.fork()
    whole = fed + text
    found: list[Keyword | Closed] = []
    for index, char in enumerate(text):
        inside = state.point().call if char == ")" else None
        state.update(char)
        if inside is not None and state.context == "code":
            after = state.point().call
            if after is None or after.open_bracket != inside.open_bracket:
                found.append(Closed(inside, len(fed) + index))
            continue
        if char != "=":
            continue
        at = len(fed) + index
        following = whole[at + 1 : at + 2]
        if following == "=" or whole[at - 1 : at] in ("=", "!", "<", ">"):
            continue  # a comparison
        point = state.point()
        call = point.call
        if call is None or state.context != "code" or call.argument_start < 0:
            continue
        match = _KEYWORD.match(whole, call.argument_start, at + 1)
        if match is None:
            continue
        found.append(Keyword(match.group(1), match.start(1), at + 1, call))
    return found
