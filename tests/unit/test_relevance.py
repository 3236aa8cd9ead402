"""Intent relevance and the candidate ranking, on realistic completion lists."""

from __future__ import annotations

import dataclasses

import pytest

from steerlsp.models.semantics.declared import Declarations
from steerlsp.models.steering.ranking.relevance import (
    BARE_WORD,
    REACHED,
    Candidate,
    DocumentUsage,
    Intent,
    RankWeights,
    assignable,
    rank_candidates,
    reaches,
    relevance,
    relevance_scores,
    split_words,
    stem,
    subclasses_in,
    summary_line,
    terms,
    type_head,
    type_heads,
)

# pydantic 2's BaseModel members with their first doc lines, as Jedi reports them.
PYDANTIC = [
    Candidate("model_computed_fields", "dict() -> new empty dictionary", "property"),
    Candidate("model_config", "Configuration for the model", "variable"),
    Candidate(
        "model_construct",
        "Creates a new instance of the `Model` class with validated data.",
        "method",
    ),
    Candidate("model_copy", "Returns a copy of the model.", "method"),
    Candidate(
        "model_dump",
        '!!! abstract "Usage Documentation"\n    [`model_dump`](../concepts/serialization.md)\n\n'
        "Generate a dictionary representation of the model, optionally specifying which fields "
        "to include or exclude.",
        "method",
    ),
    Candidate(
        "model_dump_json",
        "Generates a JSON representation of the model using Pydantic's `to_json` method.",
        "method",
    ),
    Candidate("model_extra", "Get extra fields set during validation.", "property"),
    Candidate("model_fields", "Metadata about the fields defined on the model.", "property"),
    Candidate(
        "model_fields_set",
        "Returns the set of fields that have been explicitly set on this model instance.",
        "property",
    ),
    Candidate("model_json_schema", "Generates a JSON schema for a model class.", "method"),
    Candidate("model_validate", "Validate a pydantic model instance.", "method"),
    Candidate(
        "model_validate_json", "Validate the given JSON data against the Pydantic model.", "method"
    ),
    Candidate("dict", "", "method", deprecated=True),
    Candidate("json", "", "method", deprecated=True),
    Candidate("copy", "Returns a copy of the model.", "method", deprecated=True),
    Candidate("_iter", "", "method"),
    Candidate("__fields__", "", "property", deprecated=True),
    Candidate("__init__", "Create a new model by parsing and validating input data.", "method"),
]

PATH = [
    Candidate("exists", "Whether this path exists.", "method"),
    Candidate("open", "Open the file pointed to by this path and return a file object.", "method"),
    Candidate("read_bytes", "Open the file in bytes mode, read it, and close the file.", "method"),
    Candidate("read_text", "Open the file in text mode, read it, and close the file.", "method"),
    Candidate(
        "write_text", "Open the file in text mode, write to it, and close the file.", "method"
    ),
    Candidate("mkdir", "Create a new directory at this given path.", "method"),
    Candidate("unlink", "Remove this file or link.", "method"),
    Candidate("stem", "The final path component, minus its last suffix.", "property"),
    Candidate("suffix", "The final component's last suffix, if any.", "property"),
]

DICT = [
    Candidate("keys", "D.keys() -> a set-like object providing a view on D's keys", "method"),
    Candidate("values", "D.values() -> an object providing a view on D's values", "method"),
    Candidate("items", "D.items() -> a set-like object providing a view on D's items", "method"),
    Candidate("pop", "Remove specified key and return the corresponding value.", "method"),
    Candidate(
        "setdefault",
        "Insert key with a value of default if key is not in the dictionary.",
        "method",
    ),
    Candidate("update", "Update D from mapping/iterable E and F.", "method"),
    Candidate("clear", "Remove all items from D.", "method"),
]


def best(intent: Intent, candidates: list[Candidate], **kwargs) -> str:
    return rank_candidates(intent, candidates, **kwargs)[0].name


def order(intent: Intent, candidates: list[Candidate]) -> list[str]:
    scores = relevance_scores(intent, candidates)
    return [c.name for _, c in sorted(zip(scores, candidates, strict=True), key=lambda p: -p[0])]


@pytest.mark.parametrize(
    ("text", "words"),
    [
        ("model_dump_json", ["model", "dump", "json"]),
        ("getElementById", ["get", "element", "by", "id"]),
        ("HTTPServer", ["http", "server"]),
        ("__init__", ["init"]),
        ("read it, and close", ["read", "it", "and", "close"]),
    ],
)
def test_split_words(text, words):
    assert split_words(text) == words


@pytest.mark.parametrize(
    ("words", "common"),
    [
        (["update", "updates", "updated", "updating"], "updat"),
        (["dictionary", "dictionaries", "dict", "mapping"], "dict"),
        (["serialize", "serialization", "serialized"], "serializ"),
        (["validate", "validation", "validated"], "validat"),
        (["file", "files"], "file"),
        (["string", "strings", "str", "text"], "str"),
    ],
)
def test_stem_unifies_forms_of_a_word(words, common):
    assert {stem(w) for w in words} == {common}


def test_terms_drop_stop_words_and_single_letters():
    assert terms("Return the model as a dict") == ["model", "dict"]
    assert terms("x = self.user.") == ["user"]


@pytest.mark.parametrize(
    ("doc", "line"),
    [
        (
            '!!! abstract "Usage Documentation"\n    [`model_dump`](x.md)\n\nGenerate a dict.',
            "Generate a dict.",
        ),
        ("dict() -> new empty dictionary\ndict(mapping) -> new dictionary", ""),
        ("\n  Whether this path exists.\n\n  More.", "Whether this path exists."),
        ("", ""),
    ],
)
def test_summary_line_skips_admonitions_links_and_signatures(doc, line):
    assert summary_line(doc) == line


def test_return_the_model_as_a_dict_ranks_model_dump_above_model_fields():
    intent = Intent(function="to_payload", docstring="Return the model as a dict.")
    ranked = order(intent, PYDANTIC)
    assert ranked.index("model_dump") < ranked.index("model_fields")
    assert best(intent, PYDANTIC) == "model_dump"


def test_serialize_to_json_ranks_model_dump_json_first():
    intent = Intent(function="serialize_order", docstring="Serialize the order to a JSON string.")
    assert best(intent, PYDANTIC) == "model_dump_json"


def test_a_copy_with_changes_ranks_model_copy_above_the_deprecated_copy():
    intent = Intent(function="renamed", docstring="Return a copy of the user with a new name.")
    ranked = [r.name for r in rank_candidates(intent, PYDANTIC)]
    assert ranked[0] == "model_copy"
    assert ranked.index("copy") > ranked.index("model_copy")


def test_checking_untrusted_json_ranks_model_validate_json_first():
    intent = Intent(
        function="order_from_request",
        docstring="Build an order from the JSON body of the request, checking every field.",
        line="    return Order.",
    )
    assert best(intent, PYDANTIC) == "model_validate_json"


def test_read_a_config_file_as_text_ranks_read_text_first():
    intent = Intent(
        function="load_settings",
        docstring="Read the settings file and return its text.",
        line="    raw = path.",
    )
    assert best(intent, PATH) == "read_text"


def test_comments_and_the_function_name_count_too():
    assert best(Intent(comments="# delete the temporary file"), PATH) == "unlink"
    assert best(Intent(function="make_output_dir"), PATH) == "mkdir"
    assert best(Intent(function="file_extension"), PATH) == "suffix"


def test_sum_of_the_prices_ranks_values_first():
    intent = Intent(function="total", comments="# add up the values of the price table")
    assert best(intent, DICT) == "values"


def test_no_intent_gives_zero_relevance_everywhere():
    assert relevance_scores(Intent(), PATH) == [0.0] * len(PATH)
    assert relevance_scores(Intent(function="anything"), []) == []


def test_relevance_of_one_candidate_alone():
    intent = Intent(docstring="Read the whole file as text")
    assert relevance(intent, PATH[3]) > relevance(intent, PATH[0]) == 0.0


def test_the_model_decides_when_relevance_cannot():
    logprobs = {"keys": -2.0, "values": -0.5, "items": -1.0}
    assert best(Intent(), DICT, logprobs=logprobs) == "values"
    ranked = rank_candidates(Intent(), DICT, logprobs=logprobs)
    assert [r.name for r in ranked[:3]] == ["values", "items", "keys"]
    assert ranked[-1].logprob == RankWeights().missing_logprob


def test_relevance_overrides_a_moderate_model_preference():
    intent = Intent(function="to_payload", docstring="Return the model as a dict.")
    logprobs = {"model_fields": -1.0, "model_dump": -1.8}
    assert best(intent, PYDANTIC, logprobs=logprobs) == "model_dump"
    # ... but not a model that is sure: weights say how much each signal is worth.
    sure = {"model_fields": -0.1, "model_dump": -9.0}
    assert best(intent, PYDANTIC, logprobs=sure) == "model_fields"


def test_a_deprecated_name_the_model_prefers_is_demoted():
    intent = Intent(function="to_payload", docstring="Return the model as a dict.")
    logprobs = {"dict": -0.2, "model_dump": -4.0}
    ranked = rank_candidates(intent, PYDANTIC, logprobs=logprobs)
    assert ranked[0].name == "model_dump"
    demoted = next(r for r in ranked if r.name == "dict")
    assert demoted.metadata == RankWeights().deprecated


def test_private_and_dunder_names_are_demoted_unless_the_user_typed_an_underscore():
    logprobs = {"_iter": -0.1, "__init__": -0.1, "model_copy": -3.0}
    assert best(Intent(), PYDANTIC, logprobs=logprobs) == "model_copy"
    assert best(Intent(), PYDANTIC, logprobs=logprobs, typed="_") == "_iter"
    ranked = {r.name: r for r in rank_candidates(Intent(), PYDANTIC)}
    assert ranked["_iter"].metadata == RankWeights().private
    assert ranked["__init__"].metadata == RankWeights().dunder
    assert ranked["__fields__"].metadata == RankWeights().dunder + RankWeights().deprecated


def test_the_relevance_scale_ignores_penalised_names():
    ranked = {r.name: r for r in rank_candidates(Intent(function="as_dict"), PYDANTIC)}
    assert ranked["dict"].relevance == 1.0  # deprecated, but the best match
    assert max(r.relevance for r in ranked.values() if r.metadata == 0) == 1.0


def test_rank_weights_are_frozen_validated_and_used():
    weights = RankWeights()
    with pytest.raises(dataclasses.FrozenInstanceError):
        weights.relevance = 1.0  # type: ignore[misc]
    with pytest.raises(ValueError, match="nan"):
        RankWeights(logprob=float("nan"))
    no_penalty = RankWeights(deprecated=0.0)
    intent = Intent(function="as_dict")
    assert best(intent, PYDANTIC, weights=no_penalty) == "dict"


def test_ties_keep_the_lists_order():
    ranked = rank_candidates(Intent(), [Candidate("b"), Candidate("a"), Candidate("c")])
    assert [r.name for r in ranked] == ["b", "a", "c"]


def test_type_heads_compare_annotations_by_their_outer_type():
    assert type_head("dict[str, Any]") == type_head("Dict[str, int]") == "dict"
    assert type_head("Optional[Price]") == type_head("Price | None") == "Price"
    assert type_head("typing.List[int]") == "list"
    assert type_head("Any") == type_head("int | str") == type_head("") == ""
    assert type_heads("dict[str, int | None] | list[str]") == {"dict", "list"}
    assert type_heads("Union[Dict[str, Any], List[int]]") == {"dict", "list"}
    assert type_heads("Optional[Foo]") == type_heads("foo.Foo | None") == {"Foo"}
    assert type_heads("int | Any") == type_heads("") == frozenset()


def test_a_value_fits_an_expected_union_by_its_alternatives():
    assert assignable("dict[str, Any]", type_heads("dict | None"))
    assert assignable("Optional[dict]", type_heads("Mapping[str, int]"))
    assert assignable("list[str]", type_heads("list[str] | tuple[str, ...]"))
    assert not assignable("str | bytes", type_heads("str"))
    assert not assignable("Any", type_heads("dict")) and not assignable("dict", frozenset())


def test_a_builtin_subtype_fits_and_a_supertype_does_not():
    """Concrete collections fit their abstract bases, ``int`` fits ``float`` (PEP 484's
    numeric tower); not the other way round."""
    assert assignable("tuple[str, ...]", type_heads("Sequence[str]"))
    assert assignable("list[int]", type_heads("Iterable[int]"))
    assert assignable("OrderedDict[str, int]", type_heads("dict[str, int]"))
    assert assignable("int", type_heads("float")) and assignable("bool", type_heads("int"))
    assert not assignable("Mapping[str, int]", type_heads("dict"))
    assert not assignable("Sequence[str]", type_heads("list[str]"))
    assert not assignable("float", type_heads("int"))


def test_the_documents_subclasses_of_the_expected_type():
    text = (
        "class Animal:\n    pass\n\nclass Dog(zoo.Animal):\n    pass\n\n"
        "class Puppy(Dog, Generic[T], metaclass=Meta):\n    pass\n\nclass Rock(object):\n"
    )
    assert subclasses_in(text, frozenset({"Animal"})) == {"Dog", "Puppy"}
    assert subclasses_in(text, frozenset({"Rock"})) == frozenset()
    assert subclasses_in(text, frozenset()) == frozenset()
    wanted = type_heads("Animal | None") | subclasses_in(text, frozenset({"Animal"}))
    assert assignable("Puppy", wanted) and not assignable("Rock", wanted)


def test_a_callable_returning_the_expected_type_is_ranked_up():
    intent = Intent(function="payload", line="return profile.", expected="dict")
    candidates = [
        Candidate("display_name", "The name shown", "property"),
        Candidate("model_dump", "Generate a representation", "method", returns="dict[str, Any]"),
    ]
    logprobs = {"display_name": -1.0, "model_dump": -3.0}
    plain = rank_candidates(Intent(function="payload"), candidates, logprobs)
    typed = rank_candidates(intent, candidates, logprobs)
    assert plain[0].name == "display_name"
    assert typed[0].name == "model_dump" and typed[0].expected == RankWeights().expected_type


PROFILES = (
    "class Profile:\n    email: str\n    age: int\n\n\n"
    "def contact(user: User) -> str:\n    return user."
)


def test_a_type_reaches_the_expected_one_in_one_member_step():
    declared = Declarations(PROFILES)
    wanted = type_heads("str")
    assert reaches("Profile", wanted, declared)  # ``.email``
    assert reaches("Optional[Profile]", wanted, declared)
    assert not reaches("Profile", type_heads("dict"), declared)
    assert not reaches("Profile", wanted)  # nothing declared known
    # A builtin type's conversions do not count: by outer types alone, ``bytes.split``
    # would make any ``bytes`` reach ``list[Event]``.
    assert not reaches("bytes", type_heads("list[Event]"), declared)
    assert not reaches("str", type_heads("bytes"), declared)
    assert not reaches("int", wanted, declared) and not reaches("", wanted, declared)
    assert not reaches("Profile", frozenset(), declared)


def test_what_fits_beats_what_reaches_and_that_beats_what_cannot():
    intent = Intent(line="return user.", expected="str", declared=Declarations(PROFILES))
    candidates = [
        Candidate("age", "", "property", returns="int"),
        Candidate("profile", "", "property", returns="Profile"),
        Candidate("nick", "", "property", returns="str"),
    ]
    logprobs = {"age": -1.0, "profile": -1.0, "nick": -1.0}
    ranked = rank_candidates(intent, candidates, logprobs)
    assert [r.name for r in ranked] == ["nick", "profile", "age"]
    bonus = RankWeights().expected_type
    assert [r.expected for r in ranked] == [bonus, bonus * REACHED, 0.0]


def test_a_deprecated_names_replacement_inherits_its_support():
    candidates = [
        Candidate("dict", "", "method", deprecated=True),
        Candidate("model_dump", "", "method"),
        Candidate("name", "", "property"),
    ]
    logprobs = {"dict": -0.5, "model_dump": -9.0, "name": -2.0}
    ranked = rank_candidates(Intent(), candidates, logprobs, replacements={"dict": "model_dump"})
    assert [r.name for r in ranked][:2] == ["model_dump", "name"]
    assert ranked[0].logprob == -0.5


def test_the_document_says_which_names_it_already_uses():
    usage = DocumentUsage("rows = session.execute(query)\nreturn session.", "\nsession . commit()")
    assert usage.score("execute") == 1.0
    assert usage.score("commit") == 1.0  # after the cursor, spaces around the dot
    assert usage.score("rows") == BARE_WORD  # written, but never after a dot
    assert usage.score("flush") == 0.0


def test_a_name_the_document_uses_outranks_a_slightly_likelier_one():
    candidates = [Candidate("flush"), Candidate("execute", usage=1.0)]
    on = RankWeights(usage=2.0)
    ranked = rank_candidates(Intent(), candidates, {"flush": -1.0, "execute": -2.5}, weights=on)
    assert [r.name for r in ranked] == ["execute", "flush"]
    assert ranked[0].usage == 1.0 and ranked[0].score == pytest.approx(0.5 * -2.5 + 2.0)
    off = rank_candidates(Intent(), candidates, {"flush": -1.0, "execute": -2.5})
    assert off[0].name == "flush"  # off by default (see RankWeights.usage)


def test_usage_reads_a_bounded_window_around_the_cursor():
    far = "x.far_away\n" + "y = 1\n" * 20_000
    assert DocumentUsage(far, "").score("far_away") == 0.0
    assert DocumentUsage(far[-1000:], "").score("far_away") == 0.0
    assert DocumentUsage("x.near\n" + "y = 1\n" * 10, "").score("near") == 1.0


def test_the_method_being_written_gets_no_bonus_on_its_own_receiver():
    """``return sum(self.`` inside ``def count(self) -> int``: ``count`` is the intent's
    name and returns the expected ``int``, so both bonuses made the demo write
    ``self.count().bit_count()`` over the model's sure ``items``. On its own receiver the
    method is ranked by the model alone."""
    intent = Intent("count", "How many items.", "", "return sum(self.", "int")
    candidates = [
        Candidate("count", "How many items.", "method", returns="int"),
        Candidate("items", "", "property", returns="dict[str, int]"),
    ]
    logprobs = {"count": -6.05, "items": -0.08}
    biased = rank_candidates(intent, candidates, logprobs)
    assert biased[0].name == "count"  # a call of itself, from the bonuses alone
    fair = rank_candidates(intent, candidates, logprobs, own="count")
    assert [r.name for r in fair] == ["items", "count"]
    (count,) = [r for r in fair if r.name == "count"]
    assert count.relevance == 0.0 and count.expected == 0.0
