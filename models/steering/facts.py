"""What every steered completion of one loaded model shares (``models/steering/stages/``).

The vocabulary index, the query pool, the static deprecation reader and what
the session has learned: which file each class (or listed name) is defined
in, and what the opt-in runtime check (``models/deprecation/runtime.py``)
found.
"""

from __future__ import annotations

import concurrent.futures
import logging
import os
import threading
from collections import OrderedDict
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field

import torch

from steerlsp.models.deprecation.parameters import deprecated_parameters
from steerlsp.models.deprecation.runtime import RuntimeDeprecations, locate
from steerlsp.models.deprecation.static import Deprecation, DeprecationCache, read_source
from steerlsp.models.steering.processors.brackets import BracketPrograms
from steerlsp.models.steering.processors.strings import StringTables
from steerlsp.models.steering.tokens.vocab import VocabularyIndex

log = logging.getLogger(__name__)

Tokenize = Callable[[str], Sequence[int]]

# Scope answers remembered (SteeringFacts.scopes): a few functions' worth.
SCOPES_KEPT = 16
# Defining classes and modules whose file is remembered (SteeringFacts.defined_in).
MAX_DEFINED_IN = 512
# Callees whose deprecated parameters are remembered (SteeringFacts.parameters).
PARAMETERS_KEPT = 128


@dataclass
class SteeringFacts:
    """What every completion of one model shares: built once per loaded model."""

    vocabulary: VocabularyIndex
    tokenize: Tokenize
    pool: concurrent.futures.ThreadPoolExecutor
    deprecations: DeprecationCache
    # The tokens that end a completion (the model's EOS, the FIM template's stop tokens):
    # a stage that must end the text early allows only these.
    end_ids: frozenset[int] = frozenset()
    _comments: torch.Tensor | None = None
    _brackets: BracketPrograms | None = None
    _strings: StringTables | None = None
    # A group (``stages/deprecations.py`` ``group_of``: Jedi's ``detail``, the defining
    # class or module, or a name in one completion list) -> the file it is defined in, so
    # its deprecations cost one definition query per session, not one per trigger.
    defined_in: OrderedDict[str, str] = field(default_factory=OrderedDict)
    # A group -> the 0-based line of the definition it was resolved by (to locate its class).
    defined_at: dict[str, int] = field(default_factory=dict)
    # The opt-in runtime check (``models/deprecation/runtime.py``): None unless the user
    # asked for it and trusts the workspace (the server decides). See ``use_runtime``.
    runtime: RuntimeDeprecations | None = None
    # Groups whose runtime probe was submitted -> the (path, owner class) it probed, once
    # located; what each (path, owner) probe found. Probes run once per session each.
    runtime_groups: dict[str, tuple[str, str | None] | None] = field(default_factory=dict)
    runtime_found: dict[tuple[str, str | None], dict[str, Deprecation]] = field(
        default_factory=dict
    )
    _runtime_busy: threading.Lock = field(default_factory=threading.Lock, repr=False)
    # The names in scope, by the scope question's text and offset (see
    # ``models/steering/stages/names.py``): typing on one line asks the same question again.
    scopes: OrderedDict[tuple[int, int], tuple[str, ...]] = field(default_factory=OrderedDict)
    # A callee's definition (path, 0-based line, the file's mtime) -> the parameters its
    # source deprecates (``models/deprecation/parameters.py``): each read once a session.
    parameters: OrderedDict[tuple[str, int, int], dict[str, Deprecation]] = field(
        default_factory=OrderedDict
    )

    _parameters_lock: threading.Lock = field(default_factory=threading.Lock, repr=False)

    def deprecated_parameters(self, path: str, line: int) -> dict[str, Deprecation]:
        """On a query thread: the deprecated parameters of the function defined at
        ``path``:``line`` (empty where the file is not a regular one of bounded size)."""
        try:
            key = (path, line, os.stat(path).st_mtime_ns)
        except OSError:
            return {}
        with self._parameters_lock:
            found = self.parameters.get(key)
            if found is not None:
                self.parameters.move_to_end(key)
                return found
        source = read_source(path)  # read and parsed outside the lock
        found = deprecated_parameters(source, line) if source is not None else {}
        with self._parameters_lock:
            self.parameters[key] = found
            while len(self.parameters) > PARAMETERS_KEPT:
                self.parameters.popitem(last=False)
        return found

    def remember_scope(self, key: tuple[int, int], names: tuple[str, ...]) -> None:
        """On the decode thread: keep the latest :data:`SCOPES_KEPT` answers."""
        self.scopes[key] = names
        self.scopes.move_to_end(key)
        while len(self.scopes) > SCOPES_KEPT:
            self.scopes.popitem(last=False)

    def remember_definition(self, detail: str, path: str, line: int | None = None) -> None:
        self.defined_in[detail] = path
        self.defined_in.move_to_end(detail)
        if line is not None:
            self.defined_at[detail] = line
        while len(self.defined_in) > MAX_DEFINED_IN:
            forgotten, _ = self.defined_in.popitem(last=False)
            self.defined_at.pop(forgotten, None)

    def use_runtime(self, runtime: RuntimeDeprecations | None) -> None:
        """Switch the runtime check (another interpreter, or off): what it found is forgotten."""
        if runtime is not self.runtime:
            self.runtime, self.runtime_groups, self.runtime_found = runtime, {}, {}

    def _probe_runtime(self, groups: list[str], path: str, line: int, names: list[str]) -> None:
        """On a pool thread: import the module of ``path`` in the sandbox and record which
        of ``names`` its class (the one holding ``line``) deprecates. One probe runs at a
        time (``submit_probe``); each (path, owner) is probed once."""
        try:
            runtime, located = self.runtime, locate(path, line)
            if runtime is None or located is None:
                return
            key = (path, located.owner)
            for group in groups:
                self.runtime_groups[group] = key
            if key in self.runtime_found:  # probed for other groups (one at a time)
                return
            found = runtime.probe(
                located.module, located.owner, names, root=located.root, path=path
            )
            if runtime is self.runtime:  # not switched meanwhile
                self.runtime_found[key] = found
        except Exception as exc:  # the check is best effort; it never breaks a completion
            log.debug("runtime deprecation probe of %s failed: %r", path, exc)
        finally:
            self._runtime_busy.release()

    def submit_probe(self, groups: list[str], path: str, line: int, names: list[str]) -> bool:
        """Start a runtime probe for ``groups`` on the pool, unless one is running: one at
        a time, so that probes (seconds at worst) never starve the analysis queries."""
        if not self._runtime_busy.acquire(blocking=False):
            return False
        for group in groups:
            self.runtime_groups[group] = None  # submitted; its (path, owner) once located
        try:
            self.pool.submit(self._probe_runtime, groups, path, line, names)
        except RuntimeError:  # the pool is shut down
            self._runtime_busy.release()
            return False
        return True

    @property
    def bracket_programs(self) -> BracketPrograms:
        """Every token's brackets, indexed on first use (``processors/brackets.py``)."""
        if self._brackets is None:
            self._brackets = BracketPrograms(self.vocabulary.texts)
        return self._brackets

    @property
    def string_tables(self) -> StringTables:
        """The tokens that end a string badly, indexed on first use (``processors/strings.py``)."""
        if self._strings is None:
            self._strings = StringTables(self.vocabulary.texts)
        return self._strings

    @property
    def comment_tokens(self) -> torch.Tensor:
        """Ids of tokens that start a comment (``#``, `` #``, ...). -> [N] long"""
        if self._comments is None:
            starts, _ = self.vocabulary.comment_masks
            self._comments = torch.nonzero(starts).flatten()
        return self._comments
