"""What both completers (in-process and remote) make of a request before decoding:
the prompt's text, and how the output is cut (``prompts/``' stop rule and
post-processing, per completion mode)."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass

from steerlsp.models.options import CompletionOptions, CompletionRequest
from steerlsp.prompts.builder import Prompt, build_prompt
from steerlsp.prompts.context import context_block
from steerlsp.prompts.fim import FimTemplate
from steerlsp.prompts.postprocess import (
    CompletionMode,
    block_indent,
    completion_mode,
    finalize,
    stop_reason,
)
from steerlsp.prompts.window import WindowAnchors


@dataclass(frozen=True)
class Shape:
    """How a completion's output is cut: its mode, the block's indentation, the cursor's
    line before it, and the text after the cursor."""

    mode: CompletionMode
    indent: int
    line_prefix: str
    suffix: str

    @staticmethod
    def of(request: CompletionRequest) -> Shape:
        line_prefix = request.prefix.rsplit("\n", 1)[-1]
        line_suffix = request.suffix.split("\n", 1)[0]
        return Shape(
            completion_mode(line_prefix, line_suffix),
            block_indent(request.prefix),
            line_prefix,
            request.suffix,
        )

    def ends(self, text: str, max_lines: int) -> bool:
        """Whether the generated ``text`` has reached its end (``prompts.postprocess``)."""
        reason = stop_reason(
            text,
            mode=self.mode,
            indent_of_block=self.indent,
            max_lines=max_lines,
            line_prefix=self.line_prefix,
        )
        return reason is not None

    def finish(self, generated: str, max_lines: int, *, truncated: bool) -> str:
        """The text to insert (``prompts.postprocess.finalize``)."""
        return finalize(
            generated,
            mode=self.mode,
            line_prefix=self.line_prefix,
            suffix=self.suffix,
            block_indent=self.indent,
            max_lines=max_lines,
            truncated=truncated,
        )


def prompt_for(
    request: CompletionRequest,
    options: CompletionOptions,
    *,
    template: FimTemplate | None,
    count_tokens: Callable[[str], int],
    windows: WindowAnchors,
) -> Prompt:
    """The prompt for ``request`` within the options' token budgets, its window
    anchored where the document's last prompt started (so typing keeps the prefix),
    and that start remembered."""
    line = request.document.line if request.document else request.prefix.count("\n")
    built = build_prompt(
        request.prefix,
        request.suffix,
        path=request.path,
        template=template,
        count_tokens=count_tokens,
        prefix_budget=options.prefix_tokens,
        suffix_budget=options.suffix_tokens,
        context=context_block(
            request.context, budget=options.context_tokens, count_tokens=count_tokens
        ),
        anchor=windows.offset(request.path, request.prefix, line),
    )
    windows.remember(request.path, request.prefix, line, len(request.prefix) - built.prefix_chars)
    return built


def agrees(generated: str, expected: str) -> bool:
    """One text begins the other: the generation may still be what is typed."""
    return generated.startswith(expected) or expected.startswith(generated)
