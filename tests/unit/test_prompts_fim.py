"""FIM templates: the packaged file, detection from vocabularies, lookup by name."""

from __future__ import annotations

import dataclasses

import pytest
from tokenizers import Tokenizer
from tokenizers.models import WordLevel

from steerlsp.prompts import fim
from steerlsp.prompts.fim import detect_template, load_templates, spelling_in, template_named

NAMES = ["starcoder2", "qwen2.5-coder", "deepseek-coder", "codellama", "codegemma"]
WORDS = ["def", "▁return", "(", ")", ":", "\n", "▁▁▁▁", "fim", "▁fim", "<unk>"]
# What Gemma 3 270M's tokenizer has around its control tokens: chat markers, no FIM ones.
GEMMA3 = {"<pad>", "<eos>", "<bos>", "<unk>", "<mask>", "<start_of_turn>", "<end_of_turn>"}
GEMMA3 |= {"<start_of_image>", "<end_of_image>", "<image_soft_token>", *WORDS}
QWEN_SPECIAL = [
    "<|endoftext|>",
    "<|im_start|>",
    "<|im_end|>",
    "<|fim_prefix|>",
    "<|fim_middle|>",
    "<|fim_suffix|>",
    "<|fim_pad|>",
    "<|repo_name|>",
    "<|file_sep|>",
]
CODEGEMMA_SPECIAL = [
    "<bos>",
    "<eos>",
    "<start_of_turn>",
    "<end_of_turn>",
    "<|fim_prefix|>",
    "<|fim_middle|>",
    "<|fim_suffix|>",
    "<|file_separator|>",
]


def tiny_tokenizer(words: list[str], special: list[str]) -> Tokenizer:
    """A WordLevel tokenizer over ``words`` with ``special`` added as special tokens."""
    tokenizer = Tokenizer(WordLevel({word: i for i, word in enumerate(words)}, unk_token="<unk>"))
    tokenizer.add_special_tokens(special)
    return tokenizer


def vocabulary_of(tokenizer: Tokenizer) -> set[str]:
    return set(tokenizer.get_vocab(with_added_tokens=True))


def test_packaged_templates_in_file_order():
    templates = load_templates()
    assert list(templates) == NAMES
    for name, template in templates.items():
        assert template.name == name
        assert template.order == "psm"
        assert template.detect_tokens and template.stop_tokens
        assert template.prefix_marker and template.suffix_marker and template.middle_marker


def test_templates_are_frozen_and_fresh_dicts():
    template = template_named("codegemma")
    with pytest.raises(dataclasses.FrozenInstanceError):
        template.name = "other"  # type: ignore[misc]
    load_templates().clear()
    assert list(load_templates()) == NAMES


def test_marker_spellings():
    deepseek = template_named("deepseek-coder")
    assert deepseek.prefix_marker == "<\uff5cfim\u2581begin\uff5c>"
    assert deepseek.suffix_marker == "<\uff5cfim\u2581hole\uff5c>"
    assert deepseek.middle_marker == "<\uff5cfim\u2581end\uff5c>"
    assert "<\uff5cend\u2581of\u2581sentence\uff5c>" in deepseek.stop_tokens
    codellama = template_named("codellama")
    assert (codellama.prefix_marker, codellama.suffix_marker, codellama.middle_marker) == (
        "<PRE> ",
        " <SUF>",
        " <MID>",
    )
    assert "<EOT>" in codellama.stop_tokens
    qwen = template_named("qwen2.5-coder")
    assert qwen.file_header == "<|file_sep|>{path}\n"
    assert {"<|endoftext|>", "<|file_sep|>", "<|fim_pad|>"} <= set(qwen.stop_tokens)
    codegemma = template_named("codegemma")
    assert codegemma.prefix_marker == qwen.prefix_marker
    assert "<|file_separator|>" in codegemma.stop_tokens
    starcoder = template_named("starcoder2")
    assert {"<|endoftext|>", "<file_sep>"} <= set(starcoder.stop_tokens)


@pytest.mark.parametrize("name", NAMES)
def test_each_detect_set_finds_its_own_template(name):
    """No table shadows a later one: its own detect tokens pick it, with words around."""
    template = template_named(name)
    assert detect_template({*WORDS, *template.detect_tokens}) == template


@pytest.mark.parametrize("name", NAMES)
def test_any_missing_detect_token_defeats_detection(name):
    detect = template_named(name).detect_tokens
    for missing in detect:
        found = detect_template({*WORDS, *(token for token in detect if token != missing)})
        assert found is None or found.name != name


def test_gemma3_vocabulary_has_no_fim_template():
    assert detect_template(GEMMA3) is None


def test_partial_codegemma_set_in_gemma_vocabulary_is_not_enough():
    assert detect_template(GEMMA3 | {"<|fim_prefix|>", "<|fim_middle|>"}) is None
    assert detect_template(GEMMA3 | {"<|file_separator|>"}) is None


def test_codellama_word_start_spellings():
    vocabulary = {*WORDS, "<s>", "</s>", "▁<PRE>", "▁<SUF>", "▁<MID>", "▁<EOT>"}
    assert detect_template(vocabulary) == template_named("codellama")
    assert spelling_in("<PRE>", vocabulary) == "▁<PRE>"
    assert spelling_in("</s>", vocabulary) == "</s>"
    assert spelling_in("<fim_prefix>", vocabulary) is None


def test_real_tiny_tokenizers():
    assert detect_template(vocabulary_of(tiny_tokenizer(WORDS, QWEN_SPECIAL))) == template_named(
        "qwen2.5-coder"
    )
    codegemma = vocabulary_of(tiny_tokenizer(WORDS, CODEGEMMA_SPECIAL))
    assert detect_template(codegemma) == template_named("codegemma")
    gemma = vocabulary_of(tiny_tokenizer(WORDS, sorted(GEMMA3 - set(WORDS))))
    assert detect_template(gemma) is None
    starcoder = ["<|endoftext|>", "<fim_prefix>", "<fim_middle>", "<fim_suffix>", "<fim_pad>"]
    assert detect_template(vocabulary_of(tiny_tokenizer(WORDS, starcoder))).name == "starcoder2"


def test_detection_accepts_dict_keys():
    tokenizer = tiny_tokenizer(WORDS, CODEGEMMA_SPECIAL)
    assert detect_template(tokenizer.get_vocab(with_added_tokens=True).keys()).name == "codegemma"


def test_template_named_rejects_unknown_name_quoting_it():
    with pytest.raises(ValueError, match="'gpt-2'"):
        template_named("gpt-2")


GOOD = """
[mine]
order = "psm"
prefix_marker = "<p>"
suffix_marker = "<s>"
middle_marker = "<m>"
detect_tokens = ["<p>", "<s>", "<m>"]
stop_tokens = ["<end>"]
"""


def test_templates_from_text():
    (mine,) = fim.templates_from(GOOD).values()
    assert mine == fim.FimTemplate(
        "mine", "psm", "<p>", "<s>", "<m>", ("<p>", "<s>", "<m>"), ("<end>",)
    )


@pytest.mark.parametrize(
    ("change", "quoted"),
    [
        (("psm", "spm"), "'spm'"),
        (('stop_tokens = ["<end>"]', "stop_tokens = []"), "stop_tokens"),
        (('stop_tokens = ["<end>"]', 'stop_tokens = ["<end>"]\nextra = 1'), "extra"),
        (('detect_tokens = ["<p>", "<s>", "<m>"]', ""), "detect_tokens"),
        (('stop_tokens = ["<end>"]', 'stop_tokens = ["<end>"]\nfile_header = "x"'), "'x'"),
        (("[mine]", "[mine"), "TOML"),
    ],
)
def test_templates_from_rejects_bad_tables(change, quoted):
    with pytest.raises(ValueError, match=quoted):
        fim.templates_from(GOOD.replace(*change))


def test_template_must_be_a_table():
    with pytest.raises(ValueError, match="'mine'"):
        fim.templates_from('mine = "psm"')
