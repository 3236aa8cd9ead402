"""The LM head (and the tied embedding table) in a cheaper precision for CPU decoding.

Decoding a small model on a CPU is memory-bound, and Gemma's tied 262,144 x 640
vocabulary table is most of the bytes one step reads. These modules replace the
model's fp32 head and embedding with one shared low-precision table.
"""

from __future__ import annotations

from typing import Any

import torch
from torch import nn


class LowPrecisionHead(nn.Module):
    """The LM head in bf16: on CPU it is memory-bound, and the 262k-row Gemma
    vocabulary makes it most of a decode step. Output stays fp32."""

    def __init__(self, weight: torch.Tensor) -> None:
        super().__init__()
        self.weight = nn.Parameter(weight.detach().to(torch.bfloat16), requires_grad=False)

    def forward(self, hidden: torch.Tensor) -> torch.Tensor:
        # hidden: [B, T, H] -> logits [B, T, V]. As a contiguous [B*T, H] matrix: a strided
        # 3-D view (the last position of a prefill) sends matmul down a bmm path that
        # copies the whole 262k x 640 weight, ~1 s per call on 2 cores.
        flat = hidden.reshape(-1, hidden.shape[-1]).to(torch.bfloat16).contiguous()
        return nn.functional.linear(flat, self.weight).float().view(*hidden.shape[:-1], -1)


class LowPrecisionEmbedding(nn.Module):
    """Reads the same bf16 table as :class:`LowPrecisionHead` (tied weights), so the
    fp32 copy can be freed; keeps the module's ``embed_scale`` if it has one."""

    def __init__(self, original: nn.Module, head: LowPrecisionHead) -> None:
        super().__init__()
        self.head = head
        self.padding_idx = getattr(original, "padding_idx", None)
        scale = getattr(original, "embed_scale", None)
        self.register_buffer(
            "embed_scale", None if scale is None else scale.float(), persistent=False
        )

    def forward(self, ids: torch.Tensor) -> torch.Tensor:
        # ids: [B, T] -> [B, T, H]
        out = nn.functional.embedding(ids, self.head.weight).float()
        scale = self.embed_scale
        return out if not isinstance(scale, torch.Tensor) else out * scale


def use_low_precision_head(model: Any) -> bool:
    """Swap a CPU model's tied fp32 LM head (and embedding) for one bf16 table.

    Returns False (and changes nothing) for models whose head is not tied or
    not a plain Linear.
    """
    head = getattr(model, "lm_head", None)
    embed = model.get_input_embeddings()
    if not isinstance(head, nn.Linear) or head.bias is not None:
        return False
    if head.weight.data_ptr() != embed.weight.data_ptr():
        return False
    low = LowPrecisionHead(head.weight)
    model.lm_head = low
    model.set_input_embeddings(LowPrecisionEmbedding(embed, low))
    _own_memory(model, keep=low.weight)
    return True


@torch.no_grad()
def _own_memory(model: Any, keep: torch.Tensor) -> None:
    """Copy every tensor out of the safetensors memory map.

    Loaded weights are views of one mapping of the file, so dropping the fp32
    embedding frees nothing while any other tensor still maps the file (its
    pages stay resident: about 0.7 GB for Gemma's vocabulary). Owning copies
    let the mapping, and those pages, go away.
    """
    for tensor in [*model.parameters(), *model.buffers()]:
        if tensor is not keep and tensor.device.type == "cpu":
            tensor.data = tensor.data.clone()
