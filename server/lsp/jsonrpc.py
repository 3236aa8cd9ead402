"""JSON-RPC 2.0 message classification and error replies, on plain dicts.

The proxy forwards most traffic without typing it, so this module works on the
decoded JSON objects. Typed lsprotocol structures are only built for the
messages steerlsp itself serves or must validate.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from typing import Any

import orjson

from steerlsp.server.lsp.framing import encode_frame

MsgId = int | str

PARSE_ERROR = -32700
INVALID_REQUEST = -32600
METHOD_NOT_FOUND = -32601
INVALID_PARAMS = -32602
INTERNAL_ERROR = -32603
SERVER_NOT_INITIALIZED = -32002
REQUEST_FAILED = -32803
SERVER_CANCELLED = -32802
CONTENT_MODIFIED = -32801
REQUEST_CANCELLED = -32800


@dataclass(frozen=True)
class Request:
    id: MsgId
    method: str
    raw: dict[str, Any]


@dataclass(frozen=True)
class Notification:
    method: str
    raw: dict[str, Any]


@dataclass(frozen=True)
class Response:
    id: MsgId
    raw: dict[str, Any]


@dataclass(frozen=True)
class Invalid:
    """A message that cannot be handled; ``id`` is set when one could be read."""

    id: MsgId | None
    code: int
    message: str


Message = Request | Notification | Response | Invalid

# A number must be followed by "," or "}": one at the end of cut bytes may be the
# start of a longer id (100123 cut to 1001), and a reply to it could be a second
# reply to another request. A string carries its own closing quote.
_ID_RE = re.compile(rb'"id"\s*:\s*(-?\d+(?=\s*[,}])|"(?:[^"\\]|\\.)*")')


def decode(body: bytes) -> list[Message]:
    """Decode one frame body into messages. Never raises."""
    try:
        obj = orjson.loads(body)
    except orjson.JSONDecodeError:
        return [Invalid(salvage_id(body), PARSE_ERROR, "Parse error: invalid JSON")]
    if isinstance(obj, list):
        # LSP has no batches; answer each element that carries an id.
        if not obj:
            return [Invalid(None, INVALID_REQUEST, "Invalid Request: empty batch")]
        return [
            Invalid(
                _valid_id(o.get("id")) if isinstance(o, dict) else None,
                INVALID_REQUEST,
                "Invalid Request: batches are not supported",
            )
            for o in obj
        ]
    return [classify(obj)]


def classify(obj: Any) -> Message:
    """Sort a decoded JSON value into request, notification, response or invalid."""
    if not isinstance(obj, dict):
        return Invalid(None, INVALID_REQUEST, "Invalid Request: body is not an object")
    msg_id = _valid_id(obj.get("id"))
    if obj.get("jsonrpc") != "2.0":
        return Invalid(msg_id, INVALID_REQUEST, 'Invalid Request: "jsonrpc" must be "2.0"')
    if "id" in obj and msg_id is None and obj["id"] is not None:
        return Invalid(None, INVALID_REQUEST, "Invalid Request: id must be an integer or string")
    if "method" in obj:
        method = obj["method"]
        if not isinstance(method, str):
            return Invalid(msg_id, INVALID_REQUEST, 'Invalid Request: "method" must be a string')
        params = obj.get("params")
        if params is not None and not isinstance(params, (dict, list)):
            return Invalid(msg_id, INVALID_PARAMS, "Invalid params: must be an object or array")
        if msg_id is None:
            return Notification(method, obj)
        return Request(msg_id, method, obj)
    if msg_id is not None and ("result" in obj) != ("error" in obj):
        return Response(msg_id, obj)
    return Invalid(msg_id, INVALID_REQUEST, "Invalid Request: neither a request nor a response")


def salvage_id(data: bytes) -> MsgId | None:
    """Best-effort id from bytes that are not valid JSON, so the sender gets a reply."""
    match = _ID_RE.search(data)
    if match is None:
        return None
    try:
        return _valid_id(orjson.loads(match.group(1)))
    except orjson.JSONDecodeError:
        return None


def _valid_id(value: Any) -> MsgId | None:
    if isinstance(value, bool):
        return None
    if isinstance(value, (int, str)):
        return value
    return None


def result(msg_id: MsgId, value: Any) -> dict[str, Any]:
    """A success response."""
    return {"jsonrpc": "2.0", "id": msg_id, "result": value}


def error(msg_id: MsgId | None, code: int, message: str) -> dict[str, Any]:
    """An error response."""
    return {"jsonrpc": "2.0", "id": msg_id, "error": {"code": code, "message": message}}


def request(msg_id: MsgId, method: str, params: Any = None) -> dict[str, Any]:
    """A request message; ``params`` is omitted when None."""
    msg: dict[str, Any] = {"jsonrpc": "2.0", "id": msg_id, "method": method}
    if params is not None:
        msg["params"] = params
    return msg


def notification(method: str, params: Any = None) -> dict[str, Any]:
    """A notification message; ``params`` is omitted when None."""
    msg: dict[str, Any] = {"jsonrpc": "2.0", "method": method}
    if params is not None:
        msg["params"] = params
    return msg


def frame(msg: dict[str, Any]) -> bytes:
    """Serialise and frame one message."""
    return encode_frame(orjson.dumps(msg))


def unsendable(value: Any) -> str | None:
    """Why ``value`` cannot be sent on (orjson writes at most 254 levels of nesting,
    though it reads deeper), or None when it can."""
    try:
        orjson.dumps(value)
    except (orjson.JSONEncodeError, TypeError) as exc:
        return f"it cannot be serialised ({exc})"
    return None


# JSON escapes NUL as \u0000; Emacs' JSON parser rejects the whole message for it.
_ESCAPED_NUL = b"\\u0000"
_RAW_NUL = bytes(1)  # never written by a JSON encoder, but a body is bytes: check anyway


def has_nul(body: bytes) -> bool:
    """True when ``body`` (serialised JSON) may hold a NUL character, escaped or raw.
    Cheap (C searches); a false positive (a string holding a backslash then ``u0000``)
    only costs a parse."""
    return _ESCAPED_NUL in body or _RAW_NUL in body


def without_nul(body: bytes) -> bytes:
    """``body`` re-serialised with every NUL in its strings and keys replaced by U+FFFD."""
    try:
        value = orjson.loads(body)
    except orjson.JSONDecodeError:  # not JSON (raw NUL bytes are not, inside a string)
        return body.replace(_ESCAPED_NUL, b"\\ufffd").replace(_RAW_NUL, "\ufffd".encode())
    return orjson.dumps(_replace_nul(value))


def _replace_nul(value: Any) -> Any:
    if isinstance(value, str):
        return value.replace("\x00", "\ufffd")
    if isinstance(value, list):
        return [_replace_nul(item) for item in value]
    if isinstance(value, dict):
        return {_replace_nul(key): _replace_nul(item) for key, item in value.items()}
    return value
