"""Unit tests for JSON-RPC decoding, classification and message builders."""

from __future__ import annotations

import json

import orjson
import pytest

from steerlsp.server.lsp import jsonrpc as rpc
from steerlsp.server.lsp.framing import FrameDecoder


def one(body: bytes) -> rpc.Message:
    messages = rpc.decode(body)
    assert len(messages) == 1
    return messages[0]


def test_request():
    message = one(b'{"jsonrpc":"2.0","id":1,"method":"textDocument/hover","params":{}}')
    assert isinstance(message, rpc.Request)
    assert message.id == 1
    assert message.method == "textDocument/hover"
    assert message.raw["params"] == {}


def test_request_with_string_id_and_array_params():
    message = one(b'{"jsonrpc":"2.0","id":"abc","method":"m","params":[1,2]}')
    assert message == rpc.Request(
        "abc", "m", {"jsonrpc": "2.0", "id": "abc", "method": "m", "params": [1, 2]}
    )


def test_notification():
    message = one(b'{"jsonrpc":"2.0","method":"initialized","params":{}}')
    assert isinstance(message, rpc.Notification)
    assert message.method == "initialized"


def test_notification_with_null_params():
    assert isinstance(one(b'{"jsonrpc":"2.0","method":"exit","params":null}'), rpc.Notification)


def test_null_id_with_method_is_a_notification():
    message = one(b'{"jsonrpc":"2.0","id":null,"method":"m"}')
    assert message == rpc.Notification("m", {"jsonrpc": "2.0", "id": None, "method": "m"})


def test_response():
    message = one(b'{"jsonrpc":"2.0","id":7,"result":null}')
    assert isinstance(message, rpc.Response)
    assert message.id == 7
    assert message.raw["result"] is None


def test_error_response():
    message = one(b'{"jsonrpc":"2.0","id":"x","error":{"code":-32601,"message":"nope"}}')
    assert isinstance(message, rpc.Response)
    assert message.id == "x"
    assert message.raw["error"]["code"] == rpc.METHOD_NOT_FOUND


@pytest.mark.parametrize(
    "body",
    [
        b'{"jsonrpc":"2.0","id":null,"error":{"code":-32700,"message":"x"}}',
        b'{"jsonrpc":"2.0","id":3,"result":1,"error":{"code":1,"message":"x"}}',
        b'{"jsonrpc":"2.0","id":3}',
        b'{"jsonrpc":"2.0"}',
    ],
)
def test_neither_request_nor_response(body):
    message = one(body)
    assert isinstance(message, rpc.Invalid)
    assert message.code == rpc.INVALID_REQUEST
    assert message.id == json.loads(body).get("id")


@pytest.mark.parametrize(
    ("body", "msg_id"),
    [
        (b'{"jsonrpc":"2.0","id":71,"method":"m","params":{', 71),
        (b'{"jsonrpc":"2.0","id":"s-1","method":', "s-1"),
        (b'{"jsonrpc":"2.0","id":-4,', -4),
        (b'{"jsonrpc":"2.0","id" : "a\\"b",', 'a"b'),
        (b'{"jsonrpc":"2.0","method":"m"', None),
        (b'{"jsonrpc":"2.0","id":true,', None),
        (b"", None),
        (b"\xff\xfe", None),
    ],
)
def test_invalid_json_is_a_parse_error_with_salvaged_id(body, msg_id):
    message = one(body)
    assert isinstance(message, rpc.Invalid)
    assert message.code == rpc.PARSE_ERROR
    assert message.id == msg_id


@pytest.mark.parametrize(
    ("data", "expected"),
    [
        (b'"id": 12,', 12),
        (b'{"id" : 12 }', 12),
        (b'"id": 12', None),  # cut bytes: maybe 123
        (b'"id": 1001', None),
        (b'"id":"x y"', "x y"),
        (b'"uuid": 12', None),
        (b'"id": "bad \\q escape"', None),
        (b'"id": [1]', None),
        (b"no id here", None),
    ],
)
def test_salvage_id(data, expected):
    assert rpc.salvage_id(data) == expected


@pytest.mark.parametrize("body", [b'"a string"', b"42", b"null", b"true"])
def test_non_object_body(body):
    assert one(body) == rpc.Invalid(
        None, rpc.INVALID_REQUEST, "Invalid Request: body is not an object"
    )


def test_batch_answers_each_element_with_an_id():
    body = b'[{"jsonrpc":"2.0","id":77,"method":"m"},{"jsonrpc":"2.0","method":"n"},3,{"id":true}]'
    messages = rpc.decode(body)
    assert [m.id for m in messages] == [77, None, None, None]
    assert all(isinstance(m, rpc.Invalid) and m.code == rpc.INVALID_REQUEST for m in messages)


def test_empty_batch():
    assert one(b"[]") == rpc.Invalid(None, rpc.INVALID_REQUEST, "Invalid Request: empty batch")


@pytest.mark.parametrize(
    "body",
    [
        b'{"id":72,"method":"m"}',
        b'{"jsonrpc":"1.0","id":72,"method":"m"}',
        b'{"jsonrpc":2.0,"id":72,"method":"m"}',
        b'{"jsonrpc":null,"id":72,"result":1}',
    ],
)
def test_missing_or_wrong_jsonrpc_keeps_the_id(body):
    message = one(body)
    assert isinstance(message, rpc.Invalid)
    assert message.code == rpc.INVALID_REQUEST
    assert message.id == 72
    assert '"jsonrpc"' in message.message


@pytest.mark.parametrize("method", ["5", "null", "[]", '{"a":1}', "true"])
def test_non_string_method(method):
    message = one(b'{"jsonrpc":"2.0","id":74,"method":%s}' % method.encode())
    assert message == rpc.Invalid(
        74, rpc.INVALID_REQUEST, 'Invalid Request: "method" must be a string'
    )


@pytest.mark.parametrize("params", ["5", '"text"', "true", "1.5"])
def test_bad_params_type(params):
    message = one(b'{"jsonrpc":"2.0","id":75,"method":"m","params":%s}' % params.encode())
    assert isinstance(message, rpc.Invalid)
    assert (message.id, message.code) == (75, rpc.INVALID_PARAMS)


def test_bad_params_on_a_notification_has_no_id():
    message = one(b'{"jsonrpc":"2.0","method":"m","params":5}')
    assert isinstance(message, rpc.Invalid)
    assert (message.id, message.code) == (None, rpc.INVALID_PARAMS)


@pytest.mark.parametrize("msg_id", ["true", "false", "1.5", "[1]", '{"a":1}'])
def test_bad_id_types_are_rejected(msg_id):
    for tail in (b'"method":"m"', b'"result":1'):
        message = one(b'{"jsonrpc":"2.0","id":%s,%s}' % (msg_id.encode(), tail))
        assert message == rpc.Invalid(
            None, rpc.INVALID_REQUEST, "Invalid Request: id must be an integer or string"
        )


def test_classify_accepts_decoded_objects():
    assert rpc.classify({"jsonrpc": "2.0", "id": 0, "method": "m"}) == rpc.Request(
        0, "m", {"jsonrpc": "2.0", "id": 0, "method": "m"}
    )
    assert isinstance(rpc.classify(["not", "an", "object"]), rpc.Invalid)


def test_result_and_error_helpers():
    assert rpc.result(1, {"a": 1}) == {"jsonrpc": "2.0", "id": 1, "result": {"a": 1}}
    assert rpc.result("x", None) == {"jsonrpc": "2.0", "id": "x", "result": None}
    assert rpc.error(None, rpc.PARSE_ERROR, "bad") == {
        "jsonrpc": "2.0",
        "id": None,
        "error": {"code": -32700, "message": "bad"},
    }


def test_request_and_notification_helpers_omit_none_params():
    assert rpc.request(3, "shutdown") == {"jsonrpc": "2.0", "id": 3, "method": "shutdown"}
    assert rpc.request(3, "m", []) == {"jsonrpc": "2.0", "id": 3, "method": "m", "params": []}
    assert rpc.notification("exit") == {"jsonrpc": "2.0", "method": "exit"}
    assert rpc.notification("n", {"x": 1})["params"] == {"x": 1}


@pytest.mark.parametrize(
    "msg",
    [
        rpc.request(1, "m", {"text": "😋 中文"}),
        rpc.notification("n"),
        rpc.result("id", [1, 2]),
        rpc.error(4, rpc.INTERNAL_ERROR, "boom"),
    ],
)
def test_frame_round_trips_through_decoder_and_classify(msg):
    data = rpc.frame(msg)
    assert data.startswith(b"Content-Length: %d\r\n\r\n" % len(orjson.dumps(msg)))
    [body] = FrameDecoder().feed(data)
    assert orjson.loads(body) == msg
    assert not isinstance(rpc.classify(orjson.loads(body)), rpc.Invalid)


def test_error_codes():
    assert (rpc.PARSE_ERROR, rpc.INVALID_REQUEST, rpc.METHOD_NOT_FOUND) == (-32700, -32600, -32601)
    assert (rpc.INVALID_PARAMS, rpc.INTERNAL_ERROR) == (-32602, -32603)
    assert rpc.REQUEST_CANCELLED == -32800
    assert rpc.CONTENT_MODIFIED == -32801
