"""Model loading: clear errors, no implicit downloads or remote code, the GGUF cache."""

from __future__ import annotations

import json

import pytest
import torch

from steerlsp.models.loading import load as loading
from steerlsp.models.loading.load import LoadRequest, ModelLoadError, load, pick_device, pick_dtype


@pytest.fixture(autouse=True)
def cache(tmp_path, monkeypatch):
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path / "cache"))
    return tmp_path / "cache" / "steerlsp"


def test_cache_root_follows_xdg(cache):
    assert loading.cache_root() == cache


@pytest.mark.parametrize("source", ["/no/such/model.gguf", "/no/such/dir", "./relative/missing"])
def test_missing_paths_are_clear_errors(source):
    with pytest.raises(ModelLoadError, match="not found"):
        load(LoadRequest(source=source))


def test_unsupported_architecture_is_a_clear_error(tmp_path):
    (tmp_path / "m").mkdir()
    (tmp_path / "m" / "config.json").write_text(json.dumps({"model_type": "no-such-arch"}))
    with pytest.raises(ModelLoadError, match="cannot load model"):
        load(LoadRequest(source=str(tmp_path / "m")))


def test_a_hub_id_is_not_downloaded_unless_allowed(monkeypatch):
    seen = {}

    def fake(directory, **kwargs):
        seen.update(kwargs)
        raise OSError("not in the local cache")

    monkeypatch.setattr("transformers.AutoTokenizer.from_pretrained", fake)
    with pytest.raises(ModelLoadError, match="not in the local cache"):
        load(LoadRequest(source="someone/some-model"))
    assert seen == {"local_files_only": True, "trust_remote_code": False}


def test_trust_remote_code_is_only_what_the_user_set(monkeypatch):
    seen = {}

    def fake(directory, **kwargs):
        seen.update(kwargs)
        raise OSError("stop here")

    monkeypatch.setattr("transformers.AutoTokenizer.from_pretrained", fake)
    with pytest.raises(ModelLoadError):
        load(LoadRequest(source="someone/m", allow_downloads=True, trust_remote_code=True))
    assert seen == {"local_files_only": False, "trust_remote_code": True}


def test_device_and_dtype_selection():
    assert pick_device("cpu").type == "cpu"
    assert pick_dtype("auto", torch.device("cpu")) == torch.float32
    assert pick_dtype("bfloat16", torch.device("cpu")) == torch.bfloat16
    if not torch.cuda.is_available():
        with pytest.raises(ModelLoadError, match="CUDA is not available"):
            pick_device("cuda")
        assert pick_device("auto").type in {"cpu", "mps"}


def test_a_converted_gguf_is_reused_without_converting_again(tmp_path, cache, monkeypatch):
    gguf = tmp_path / "model.gguf"
    gguf.write_bytes(b"GGUF not really")
    first = loading._sha256(gguf)
    converted = cache / "converted" / first
    converted.mkdir(parents=True)
    (converted / "complete").write_text("done")
    monkeypatch.setattr(
        "transformers.AutoModelForCausalLM.from_pretrained",
        lambda *a, **k: pytest.fail("converted again"),
    )
    assert loading._convert_gguf(gguf, lambda message, percent: None) == converted
    assert loading._sha256(gguf) == first  # memoised by path, size and mtime
