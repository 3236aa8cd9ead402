"""The completions client's error shapes, against a scripted HTTP server on 127.0.0.1.

The real engine is in ``tests/model/test_remote.py``; here a stub answers what a
real server seldom does on cue: 429 and 503 (with and without Retry-After), an
answer that is not JSON, a stream that stalls, a refused key, a wrong path.
"""

from __future__ import annotations

import json
import threading
import time
from collections.abc import Callable, Iterator

import pytest

from steerlsp.models.remote.api import (
    SAMPLER_TOP,
    TOP_K,
    Api,
    Capabilities,
    choice_of,
    connect,
    constrained,
)
from steerlsp.models.remote.client import (
    Client,
    Deadline,
    Endpoint,
    RemoteCancelled,
    RemoteRejected,
    RemoteUnavailable,
)
from steerlsp.models.remote.completer import RemoteCompleter, RemoteSettings
from tests.helpers.openai_stub import Answer, Stub, completion, events, ok


@pytest.fixture
def stub() -> Iterator[Callable[[list[Answer]], Stub]]:
    made: list[Stub] = []

    def make(answers: list[Answer]) -> Stub:
        made.append(Stub(answers))
        return made[-1]

    yield make
    for server in made:
        server.close()


def client_for(stub: Stub, key: str = "") -> Client:
    return Client(Endpoint(stub.url, key))


def test_retries_429_and_503_with_backoff_then_answers(stub):
    server = stub(
        [
            (429, {"Retry-After": "0.1"}, [b'{"error": {"message": "slow down"}}'], 0),
            (503, {}, [b"busy"], 0),
            ok(completion(" x")),
        ]
    )
    client = client_for(server)
    started = time.monotonic()
    answer = client.post("/completions", {"prompt": "p"}, Deadline.within(5))
    assert answer["choices"][0]["text"] == " x"
    assert client.retries == 2 and client.requests == 3
    assert time.monotonic() - started >= 0.1 + 0.2  # Retry-After, then the first backoff


def test_overload_past_the_deadline_is_unavailable_and_says_so(stub):
    server = stub([(503, {"Retry-After": "30"}, [b'{"error": "queue full"}'], 0)] * 3)
    with pytest.raises(RemoteUnavailable, match=r"overloaded \(HTTP 503\).*queue full"):
        client_for(server).post("/completions", {}, Deadline.within(0.5))


def test_refused_key_names_the_setting_and_never_the_key(stub):
    server = stub([(401, {}, [b'{"error": {"message": "Invalid API Key"}}'], 0)])
    with pytest.raises(RemoteRejected) as caught:
        client_for(server, key="s3cret").get("/models", Deadline.within(5))
    message = str(caught.value)
    assert "refused the API key (HTTP 401): Invalid API Key" in message
    assert "model.apiKeyEnv" in message and "s3cret" not in message
    assert server.seen[0][3]["Authorization"] == "Bearer s3cret"  # sent, as a bearer token


def test_a_wrong_path_says_what_the_endpoint_should_be(stub):
    server = stub([(404, {}, [b"Not Found"], 0)])
    with pytest.raises(RemoteRejected, match=r"was not found \(HTTP 404\).*base, e.g."):
        client_for(server).get("/models", Deadline.within(5))


def test_an_answer_that_is_not_json_is_a_clear_error(stub):
    server = stub([(200, {}, [b"<html>proxy login</html>"], 0)])
    with pytest.raises(RemoteRejected, match=r"not JSON .*OpenAI-compatible"):
        client_for(server).get("/models", Deadline.within(5))


def test_nothing_listening_is_unavailable_at_once():
    client = Client(Endpoint("http://127.0.0.1:9/v1"))
    started = time.monotonic()
    with pytest.raises(RemoteUnavailable, match=r"nothing listens at http://127.0.0.1:9/v1"):
        client.get("/models", Deadline.within(600))
    assert time.monotonic() - started < 60  # refused at once, not at the 600 s deadline


def test_a_stream_is_read_piece_by_piece(stub):
    server = stub([events(["a", "b", "c"])])
    pieces = [
        e["choices"][0]["text"]
        for e in client_for(server).stream("/completions", {"prompt": "p"}, Deadline.within(5))
    ]
    assert pieces == ["a", "b", "c"]
    assert server.seen[0][2]["stream"] is True


def test_cancel_closes_a_stalled_stream_at_once(stub):
    server = stub([events(["a", "b"], pause=600.0)])
    cancelled = threading.Event()
    threading.Timer(0.2, cancelled.set).start()
    started = time.monotonic()
    with pytest.raises(RemoteCancelled):
        for _ in client_for(server).stream(
            "/completions", {}, Deadline.within(600, cancelled.is_set)
        ):
            pass
    assert time.monotonic() - started < 60  # not the 600 s the next piece would take


def test_a_stalled_stream_ends_at_the_deadline(stub):
    server = stub([events(["a", "b"], pause=600.0)])
    started = time.monotonic()
    with pytest.raises(RemoteUnavailable, match=r"did not answer within 0.3 s"):
        for _ in client_for(server).stream("/completions", {}, Deadline.within(0.3)):
            pass
    assert time.monotonic() - started < 60  # not the 600 s


def test_a_url_with_credentials_or_another_scheme_is_refused():
    with pytest.raises(ValueError, match=r"must not carry credentials"):
        Endpoint("http://user:pw@host/v1")
    with pytest.raises(ValueError, match=r"http:// or https:// URL"):
        Endpoint("file:///etc/passwd")


# An answer with the k likeliest tokens at its one step (the completions shape).
TOP = {"choices": [{"text": " b", "logprobs": {"top_logprobs": [{" b": -0.1, " a": -2}]}}]}
# llama-server's answer with the k likeliest from its sampler (``post_sampling_probs``).
SAMPLER_ANSWER = {
    "choices": [
        {
            "text": " a",
            "logprobs": {
                "content": [
                    {
                        "token": " a",
                        "prob": 0.2,
                        "top_probs": [
                            {"token": " b", "prob": 0.8},
                            {"token": " a", "prob": 0.2},
                            {"token": " c", "prob": 0.0},
                        ],
                    }
                ]
            },
        }
    ]
}
UNKNOWN_FIELD = (400, {}, [b'{"error": {"message": "unknown field post_sampling_probs"}}'], 0)


def test_connect_names_the_models_served_when_the_wanted_one_is_not(stub):
    server = stub([ok({"data": [{"id": "gemma"}, {"id": "qwen"}]})])
    with pytest.raises(RemoteRejected, match=r"does not serve the model 'llama'.*gemma, qwen"):
        connect(client_for(server), "llama", Deadline.within(5))


def test_connect_probes_what_the_server_supports(stub):
    server = stub(
        [
            ok({"data": [{"id": "gemma"}]}),
            UNKNOWN_FIELD,  # logprobs: k from the sampler
            ok(TOP),  # logprobs: k
            (400, {}, [b'{"error": {"message": "grammar not supported"}}'], 0),
            ok(completion(" zebra")),  # guided_choice followed
            # A prompt cached, then timed plain and with logprobs (no timings said).
            *[ok(completion(" x"))] * 3,
        ]
    )
    api = connect(client_for(server), "", Deadline.within(5))
    assert api.model == "gemma"
    assert api.capabilities == Capabilities(True, "guided_choice", logprobs_cached=True)
    assert api.capabilities.ranks
    assert (
        server.seen[1][2]["post_sampling_probs"] and "post_sampling_probs" not in server.seen[2][2]
    )
    assert server.seen[3][2]["grammar"] == 'root ::= " zebra"'
    assert server.seen[4][2]["guided_choice"] == [" zebra"]
    assert server.seen[7][2]["logprobs"] == 5 and "logprobs" not in server.seen[6][2]
    assert "post_sampling_probs" not in server.seen[7][2]
    assert len(server.seen) == 8  # fast at once: not timed again


def test_where_the_sampler_gives_the_k_likeliest_every_logprobs_request_asks_it(stub):
    """llama-server sorts the whole vocabulary for ``logprobs`` (27 ms a token for
    Gemma on 2 cores), and only the k for its sampler's ``post_sampling_probs``."""
    server = stub(
        [
            ok({"data": [{"id": "gemma"}]}),
            ok(SAMPLER_ANSWER),
            ok(completion(" zebra")),  # grammar followed
            *[ok(completion(" x"))] * 2,
            ok(SAMPLER_ANSWER | {"timings": {"prompt_n": 1}}),
            ok(SAMPLER_ANSWER),
        ]
    )
    api = connect(client_for(server), "", Deadline.within(5))
    assert api.capabilities == Capabilities(True, "grammar", True, sampler_top=True)
    assert "sampler's top-k" in api.capabilities.stages()["members"]
    top = api.complete("p", Deadline.within(5), max_tokens=1, logprobs=TOP_K).top
    assert top == (
        {" b": pytest.approx(-0.2231, abs=1e-4), " a": pytest.approx(-1.6094, abs=1e-4)},
    )
    for body in (server.seen[1][2], server.seen[5][2], server.seen[6][2]):
        assert {k: body[k] for k in SAMPLER_TOP} == SAMPLER_TOP
    assert "post_sampling_probs" not in server.seen[2][2]  # the constraint's: greedy


def test_where_logprobs_miss_the_cache_the_model_chooses_under_the_constraint(stub):
    slow = (200, {"Content-Type": "application/json"}, [json.dumps(TOP).encode()], 0.8)
    server = stub(
        [
            ok({"data": [{"id": "gemma"}]}),
            ok(TOP),  # the sampler's fields taken, its top-k not given
            ok(TOP),
            ok(completion(" zebra")),  # grammar followed
            ok(completion(" x")),
            # llama-cpp-python evaluates the whole prompt again for logprobs, each time
            # (and says nothing of it): slow, beyond doubt.
            ok(completion(" x")),
            slow,
        ]
    )
    capabilities = connect(client_for(server), "", Deadline.within(5)).capabilities
    assert capabilities == Capabilities(True, "grammar", logprobs_cached=False)
    assert not capabilities.ranks
    assert capabilities.stages()["members"].startswith("the model's choice among")


def test_probing_the_server_may_take_longer_than_one_completion(stub):
    """The probe runs once per connection: on a CPU server it outlasts a completion's
    limit (the 400-token prompt evaluated twice took 6-9 s of the default 10 s with
    llama-cpp-python on 2 cores), and then the server was reported unreachable."""

    def slow(body: object) -> Answer:
        return 200, {"Content-Type": "application/json"}, [json.dumps(body).encode()], 0.25

    server = stub(
        [
            slow({"data": [{"id": "gemma"}]}),
            slow(TOP),
            slow(TOP),
            slow(completion(" zebra")),
            *[slow(completion(" x"))] * 3,
        ]
    )
    remote = RemoteCompleter(RemoteSettings(server.url, timeout=0.5))
    started = time.monotonic()
    assert remote.connect().capabilities == Capabilities(True, "grammar", logprobs_cached=True)
    assert time.monotonic() - started > 0.5  # past the completion's limit
    assert remote.status()["state"] == "connected"


def test_grammar_strings_are_escaped():
    assert constrained("grammar", ('a"b', "c\\d")) == {"grammar": 'root ::= "a\\"b" | "c\\\\d"'}
    assert constrained("", ("x",)) == {}
    # A name and then its end: ``cache`` can be chosen where ``cached_property`` begins.
    assert constrained("grammar", ("cache", "cached"), then_end=True) == {
        "grammar": 'root ::= ("cache" | "cached") [^a-zA-Z0-9_]'
    }
    assert constrained("guided_choice", ("a.b", "c"), then_end=True) == {
        "guided_regex": "(a\\.b|c)[^A-Za-z0-9_]"
    }


def test_an_answer_without_choices_is_rejected(stub):
    server = stub([ok({"object": "error"})])
    api = Api(client_for(server), "m")
    with pytest.raises(RemoteRejected, match=r"no choices"):
        api.complete("p", Deadline.within(5), max_tokens=1)


def test_logprobs_are_read_in_the_completions_and_the_chat_shape():
    legacy = {
        "choices": [
            {
                "text": ".",
                "logprobs": {
                    "tokens": ["."],
                    "token_logprobs": [-0.01],
                    "top_logprobs": [{".": -0.01, "._": -5.2}],
                    "text_offset": [17],
                },
            }
        ]
    }
    chat = {  # llama.cpp's llama-server
        "choices": [
            {
                "text": "system",
                "logprobs": {
                    "content": [
                        {
                            "token": "system",
                            "logprob": -0.37,
                            "top_logprobs": [
                                {"token": "system", "logprob": -0.37},
                                {"token": "getcwd", "logprob": -1.9},
                            ],
                        }
                    ]
                },
            }
        ]
    }
    assert choice_of(legacy).top == ({".": -0.01, "._": -5.2},)
    assert choice_of(legacy).offsets == (17,)
    read = choice_of(chat)
    assert read.tokens == ("system",) and read.token_logprobs == (-0.37,)
    assert read.top == ({"system": -0.37, "getcwd": -1.9},)


@pytest.mark.parametrize(("evaluated", "cached"), [(1, True), (389, False)])
def test_where_the_server_says_what_it_evaluated_that_decides_not_the_clock(
    stub, evaluated, cached
):
    """llama.cpp's answers count the prompt tokens evaluated (``timings.prompt_n``): one
    request tells whether the cache served it, however busy the machine is."""
    said = TOP | {"timings": {"prompt_n": evaluated, "prompt_ms": 9000.0}}
    server = stub(
        [
            ok({"data": [{"id": "gemma"}]}),
            UNKNOWN_FIELD,
            ok(TOP),
            ok(completion(" zebra")),  # grammar followed
            ok(completion(" x")),
            ok(completion(" x")),
            ok(said),
        ]
    )
    capabilities = connect(client_for(server), "", Deadline.within(5)).capabilities
    assert capabilities.logprobs_cached is cached
    assert len(server.seen) == 7  # decided by what it said, not timed again
