"""Weights in a cheaper precision for decoding on a CPU.

Decoding a small model on a CPU is memory-bound: each token reads every weight.
Gemma's tied 262,144 x 640 vocabulary table is the largest part; these modules
replace the model's fp32 head and embedding with one shared low-precision table
(int8 by default), and the transformer's linear layers with bf16 copies where the
CPU computes in bf16 natively.
"""

from __future__ import annotations

from typing import Any

import torch
from torch import nn

HEADS = ("int8", "bf16", "fp32")
# Logits of the likeliest rows, computed again in fp32 from the int8 rows: the int8
# kernel writes bf16, whose spacing near a logit of 20 is 0.125, enough to swap
# the top two tokens. Exact top rows keep greedy choices close to the fp32 head's.
REFINED_ROWS = 8


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

    def lookup(self, ids: torch.Tensor) -> torch.Tensor:
        """Rows of the table, for the embedding. ids: [...] -> [..., H] fp32"""
        return nn.functional.embedding(ids, self.weight).float()

    def rows(self, hidden: torch.Tensor, ids: torch.Tensor) -> torch.Tensor:
        """Logits of the rows ``ids`` only. hidden: [N, H], ids: [K] -> [N, K] fp32"""
        return hidden.float() @ self.weight[ids].float().T


class Int8Head(nn.Module):
    """The LM head as weight-only int8 with one scale per row (symmetric).

    ``aten._weight_int8pack_mm`` reads the int8 table directly (bf16 activations):
    half the bytes of bf16 per step. A second int8 table holds what the first
    misses (the residual, with its own row scales): rows read one at a time (the
    embedding, and the ``REFINED_ROWS`` likeliest logits computed again in fp32)
    use both and are as exact as fp32's to about 1e-5 of the row's largest weight.
    Without it the embedding alone moved greedy choices away from the fp32
    model's at one position in five. Output is fp32.
    """

    qweight: torch.Tensor  # [V, H] int8
    scales: torch.Tensor  # [V] bf16
    residual: torch.Tensor  # [V, H] int8
    residual_scales: torch.Tensor  # [V] fp32

    def __init__(self, weight: torch.Tensor) -> None:
        super().__init__()
        table = weight.detach().float()
        scales = (table.abs().amax(dim=1) / 127).to(torch.bfloat16)  # the kernel wants bf16
        scales = torch.where(scales > 0, scales, torch.ones_like(scales))
        quantized = torch.round(table / scales.float()[:, None]).clamp(-127, 127)
        rest = table - quantized * scales.float()[:, None]
        rest_scales = (rest.abs().amax(dim=1) / 127).clamp(min=torch.finfo(torch.float32).tiny)
        self.register_buffer("qweight", quantized.to(torch.int8))
        self.register_buffer("scales", scales)
        self.register_buffer(
            "residual", torch.round(rest / rest_scales[:, None]).clamp(-127, 127).to(torch.int8)
        )
        self.register_buffer("residual_scales", rest_scales)

    def forward(self, hidden: torch.Tensor) -> torch.Tensor:
        # hidden: [B, T, H] -> logits [B, T, V]
        flat = hidden.reshape(-1, hidden.shape[-1])
        logits = torch.ops.aten._weight_int8pack_mm(
            flat.to(torch.bfloat16).contiguous(), self.qweight, self.scales
        ).float()
        if REFINED_ROWS:
            top = logits.topk(REFINED_ROWS, dim=-1).indices  # [N, R]
            exact = torch.einsum("nh,nrh->nr", flat.float(), self.lookup(top))
            logits.scatter_(-1, top, exact)
        return logits.view(*hidden.shape[:-1], -1)

    def lookup(self, ids: torch.Tensor) -> torch.Tensor:
        """Rows of the table, dequantized with their residual. ids: [...] -> [..., H] fp32"""
        first = self.qweight[ids].float() * self.scales[ids].float()[..., None]
        return first + self.residual[ids].float() * self.residual_scales[ids][..., None]

    def rows(self, hidden: torch.Tensor, ids: torch.Tensor) -> torch.Tensor:
        """Logits of the rows ``ids`` only. hidden: [N, H], ids: [K] -> [N, K] fp32"""
        return hidden.float() @ self.lookup(ids).T


def int8_available() -> bool:
    """Whether this PyTorch has the CPU int8 weight-only matmul the int8 head uses."""
    try:
        weight, scales = torch.ones(8, 32, dtype=torch.int8), torch.ones(8, dtype=torch.bfloat16)
        torch.ops.aten._weight_int8pack_mm(torch.ones(1, 32, dtype=torch.bfloat16), weight, scales)
    except (AttributeError, RuntimeError, NotImplementedError):
        return False
    return True


TableHead = LowPrecisionHead | Int8Head


class LowPrecisionEmbedding(nn.Module):
    """Reads the same table as the low-precision head (tied weights), so the fp32
    copy can be freed; keeps the module's ``embed_scale`` if it has one."""

    def __init__(self, original: nn.Module, head: TableHead) -> None:
        super().__init__()
        self.head = head
        self.padding_idx = getattr(original, "padding_idx", None)
        scale = getattr(original, "embed_scale", None)
        self.register_buffer(
            "embed_scale", None if scale is None else scale.float(), persistent=False
        )

    def forward(self, ids: torch.Tensor) -> torch.Tensor:
        # ids: [B, T] -> [B, T, H]
        out = self.head.lookup(ids)
        scale = self.embed_scale
        return out if not isinstance(scale, torch.Tensor) else out * scale


def use_low_precision_head(model: Any, precision: str = "int8") -> str:
    """Swap a CPU model's tied fp32 LM head (and embedding) for one low-precision table.

    ``precision``: "int8" (bf16 where this PyTorch lacks the int8 kernel), "bf16" or
    "fp32" (nothing changes). Returns the precision the head has now: "fp32" (and
    nothing changed) for a model whose head is not tied or not a plain Linear.
    """
    if precision not in HEADS:
        raise ValueError(f"head precision must be one of {HEADS}, got {precision!r}")
    head = getattr(model, "lm_head", None)
    embed = model.get_input_embeddings()
    if precision == "fp32" or not isinstance(head, nn.Linear) or head.bias is not None:
        return "fp32"
    if head.weight.data_ptr() != embed.weight.data_ptr():
        return "fp32"
    if precision == "int8" and not int8_available():
        precision = "bf16"
    low: TableHead = Int8Head(head.weight) if precision == "int8" else LowPrecisionHead(head.weight)
    model.lm_head = low
    model.set_input_embeddings(LowPrecisionEmbedding(embed, low))
    _own_memory(model, keep={id(t) for t in (*low.parameters(), *low.buffers())})
    return precision


class Bf16Linear(nn.Module):
    """A bias-free linear layer with bf16 weights: half the bytes per token, and on a
    CPU with native bf16 (AVX512-BF16, AMX) oneDNN computes it faster than fp32.
    Activations are rounded to bf16 on the way in; the output is fp32 again, so
    norms, attention and the residual stream stay fp32."""

    def __init__(self, linear: nn.Linear) -> None:
        super().__init__()
        self.in_features, self.out_features = linear.in_features, linear.out_features
        self.weight = nn.Parameter(linear.weight.detach().to(torch.bfloat16), requires_grad=False)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return nn.functional.linear(x.to(torch.bfloat16), self.weight).to(x.dtype)


BODIES = ("auto", "bf16", "fp32")


def bf16_native() -> bool:
    """Whether this CPU computes bf16 matrix products natively (else bf16 is emulated,
    slower than fp32)."""
    check = getattr(torch.ops.mkldnn, "_is_mkldnn_bf16_supported", None)
    try:
        return bool(check()) if check is not None else False
    except RuntimeError:
        return False


def use_bf16_body(model: Any, precision: str = "auto") -> str:
    """Swap the bias-free linear layers of an fp32 model's decoder layers for
    :class:`Bf16Linear`. ``precision``: "auto" (bf16 where the CPU has native bf16),
    "bf16" or "fp32" (nothing changes). Returns the precision the layers have now."""
    if precision not in BODIES:
        raise ValueError(f"body precision must be one of {BODIES}, got {precision!r}")
    if precision == "fp32" or (precision == "auto" and not bf16_native()):
        return "fp32"
    layers = getattr(getattr(model, "model", None), "layers", None)
    if layers is None:
        return "fp32"
    swapped = 0
    for layer in layers:
        for parent in layer.modules():
            for name, child in list(parent.named_children()):
                plain = isinstance(child, nn.Linear) and child.bias is None
                if plain and child.weight.dtype == torch.float32:
                    setattr(parent, name, Bf16Linear(child))
                    swapped += 1
    return "bf16" if swapped else "fp32"


@torch.no_grad()
def _own_memory(model: Any, keep: set[int]) -> None:
    """Copy every tensor out of the safetensors memory map.

    Loaded weights are views of one mapping of the file, so dropping the fp32
    embedding frees nothing while any other tensor still maps the file (its
    pages stay resident: about 0.7 GB for Gemma's vocabulary). Owning copies
    let the mapping, and those pages, go away.
    """
    for tensor in [*model.parameters(), *model.buffers()]:
        if id(tensor) not in keep and tensor.device.type == "cpu":
            tensor.data = tensor.data.clone()
